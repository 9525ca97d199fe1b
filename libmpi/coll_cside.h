/* coll_cside.h: the reductions libmpi does in C (coll_cside.c): the
 * predefined operations on long double data, which Go has no type for.
 * Declarations only. */
#ifndef FTMPI_COLL_CSIDE_H
#define FTMPI_COLL_CSIDE_H

#include <stdint.h>

/* Operations and types of ftmpi_ld_reduce. */
#define FTMPI_LD_SUM    1
#define FTMPI_LD_PROD   2
#define FTMPI_LD_MIN    3
#define FTMPI_LD_MAX    4
#define FTMPI_LD_MINLOC 5
#define FTMPI_LD_MAXLOC 6
#define FTMPI_LD_LAND   7 /* logical ones: as MPICH, nonzero is true, the result 1 or 0 */
#define FTMPI_LD_LOR    8
#define FTMPI_LD_LXOR   9

#define FTMPI_LD_REAL    1 /* long double */
#define FTMPI_LD_COMPLEX 2 /* long double _Complex */
#define FTMPI_LD_INT     3 /* struct { long double; int } (MPI_LONG_DOUBLE_INT) */

/* inout[i] = in[i] op inout[i] for n elements stride bytes apart
 * (unaligned allowed); 0, or -1 if op is not defined on the type. */
int ftmpi_ld_reduce(int op, int type, void *in, void *inout, int64_t n, int64_t stride);
/* Whether op is defined on type (no data). */
int ftmpi_ld_defined(int op, int type);

#endif
