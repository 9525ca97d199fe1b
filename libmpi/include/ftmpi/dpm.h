/* ftmpi/dpm.h (included by mpi.h). */
#ifndef FTMPI_DPM_H
#define FTMPI_DPM_H

#endif
