/* ftmpi/comm.h (included by mpi.h). */
#ifndef FTMPI_COMM_H
#define FTMPI_COMM_H

#endif
