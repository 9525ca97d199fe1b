/* ftmpi/ft.h (included by mpi.h). */
#ifndef FTMPI_FT_H
#define FTMPI_FT_H

#endif
