/* coll_cside.c: the predefined operations on long double data (see
 * coll_cside.h). The data may be unaligned (Go buffers): every element is
 * copied in and out with memcpy. C99. */
#include <complex.h>
#include <stdint.h>
#include <string.h>
#include "coll_cside.h"

int ftmpi_ld_defined(int op, int type)
{
    switch (type) {
    case FTMPI_LD_REAL:
        return (op >= FTMPI_LD_SUM && op <= FTMPI_LD_MAX) || (op >= FTMPI_LD_LAND && op <= FTMPI_LD_LXOR);
    case FTMPI_LD_COMPLEX:
        return op == FTMPI_LD_SUM || op == FTMPI_LD_PROD;
    case FTMPI_LD_INT:
        return op == FTMPI_LD_MINLOC || op == FTMPI_LD_MAXLOC;
    }
    return 0;
}

int ftmpi_ld_reduce(int op, int type, void *in, void *inout, int64_t n, int64_t stride)
{
    char *a = in, *b = inout;
    if (!ftmpi_ld_defined(op, type))
        return -1;
    for (int64_t i = 0; i < n; i++, a += stride, b += stride) {
        if (type == FTMPI_LD_REAL) {
            long double x, y;
            memcpy(&x, a, sizeof x);
            memcpy(&y, b, sizeof y);
            switch (op) {
            case FTMPI_LD_SUM: y = x + y; break;
            case FTMPI_LD_PROD: y = x * y; break;
            case FTMPI_LD_MIN: if (x < y) y = x; break;
            case FTMPI_LD_MAX: if (x > y) y = x; break;
            case FTMPI_LD_LAND: y = (x != 0) && (y != 0); break;
            case FTMPI_LD_LOR: y = (x != 0) || (y != 0); break;
            case FTMPI_LD_LXOR: y = (x != 0) != (y != 0); break;
            }
            memcpy(b, &y, sizeof y);
        } else if (type == FTMPI_LD_COMPLEX) {
            long double _Complex x, y;
            memcpy(&x, a, sizeof x);
            memcpy(&y, b, sizeof y);
            y = op == FTMPI_LD_SUM ? x + y : x * y;
            memcpy(b, &y, sizeof y);
        } else {
            /* { long double v; int l; }: the value, then the int after it. */
            long double x, y;
            int xl, yl;
            memcpy(&x, a, sizeof x);
            memcpy(&y, b, sizeof y);
            memcpy(&xl, a + sizeof x, sizeof xl);
            memcpy(&yl, b + sizeof y, sizeof yl);
            int better = op == FTMPI_LD_MINLOC ? x < y : x > y;
            if (better || (x == y && xl < yl)) {
                memcpy(b, &x, sizeof x);
                memcpy(b + sizeof x, &xl, sizeof xl);
            }
        }
    }
    return 0;
}
