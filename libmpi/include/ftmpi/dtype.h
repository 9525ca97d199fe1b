/* ftmpi/dtype.h (included by mpi.h). */
#ifndef FTMPI_DTYPE_H
#define FTMPI_DTYPE_H

#endif
