/* comm_cside.h: the C side of libmpi's communicator and datatype areas
 * (comm_cside.c): trampolines for attribute callbacks, which take the
 * function, the handle, the extra state and the values as integers (a
 * callback may be MPI_COMM_DUP_FN, (fn *)1, and values are often small
 * integers cast to pointers, which Go must not hold in pointers).
 * Declarations only. */
#ifndef FTMPI_COMM_CSIDE_H
#define FTMPI_COMM_CSIDE_H

#include <stdint.h>

/* Object kinds of the trampolines. */
#define FTMPI_ATTR_COMM 0
#define FTMPI_ATTR_TYPE 1
#define FTMPI_ATTR_WIN  2

int ftmpi_attr_copy_tramp(int kind, uintptr_t fn, uintptr_t obj, int keyval, uintptr_t extra, uintptr_t in, uintptr_t *out, int *flag);
int ftmpi_attr_delete_tramp(int kind, uintptr_t fn, uintptr_t obj, int keyval, uintptr_t val, uintptr_t extra);

#endif
