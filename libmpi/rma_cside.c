/* rma_cside.c: the window functions whose C parameters the generated
 * bindings cannot pass to Go as they are: attribute values, extra states
 * and callbacks that may be small integers (MPI_WIN_DUP_FN is (fn *)1),
 * which Go must not hold in pointers. C99. */
#include <stdint.h>
#include "cside.h"
#include "_cgo_export.h"

int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn, MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval, void *extra_state)
{
    return ftmpi_Win_create_keyval((uintptr_t)win_copy_attr_fn, (uintptr_t)win_delete_attr_fn, win_keyval, (uintptr_t)extra_state);
}
int MPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn, MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval, void *extra_state) __attribute__((weak, alias("PMPI_Win_create_keyval")));

int PMPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
    return ftmpi_Win_set_attr((uintptr_t)win, win_keyval, (uintptr_t)attribute_val);
}
int MPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val) __attribute__((weak, alias("PMPI_Win_set_attr")));
