/* ftmpi/io.h (included by mpi.h). */
#ifndef FTMPI_IO_H
#define FTMPI_IO_H

#endif
