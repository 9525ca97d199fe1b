/*
 * mpi-ext.h: ftmpi's MPI extensions, for programs written for Open MPI's
 * ULFM (which include <mpi-ext.h> and test its feature macros).
 *
 * The MPIX_ functions are declared in ftmpi/ft.h (through mpi.h): revoke,
 * shrink, agree, failure acknowledgement, with the signatures of their
 * MPI-6 names. The error classes are mpi.h's. C99.
 */
#ifndef FTMPI_MPI_EXT_H
#define FTMPI_MPI_EXT_H

#include "mpi.h"

/* The ULFM extension is there (Open MPI's feature-test macro). */
#define OMPI_HAVE_MPI_EXT_FTMPI 1
/* ftmpi's own. */
#define FTMPI_HAVE_ULFM 1
#define FTMPI_HAVE_RUNTHROUGH 1
#define FTMPI_HAVE_REINIT 1

#ifndef MPIX_ERR_PROC_FAILED
#define MPIX_ERR_PROC_FAILED         MPI_ERR_PROC_FAILED
#define MPIX_ERR_PROC_FAILED_PENDING MPI_ERR_PROC_FAILED_PENDING
#define MPIX_ERR_REVOKED             MPI_ERR_REVOKED
#endif

#endif /* FTMPI_MPI_EXT_H */
