/* ftmpi/rma.h (included by mpi.h). */
#ifndef FTMPI_RMA_H
#define FTMPI_RMA_H

#endif
