/* ftmpi/coll.h (included by mpi.h). */
#ifndef FTMPI_COLL_H
#define FTMPI_COLL_H

#endif
