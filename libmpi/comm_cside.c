/* comm_cside.c: the functions of the communicator area whose C parameters
 * the generated bindings cannot pass to Go as they are (int ranges[][3];
 * MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY, small integers in pointers;
 * attribute values, extra states and callbacks that may be small integers
 * too), and the attribute callback trampolines. C99. */
#include <stdint.h>
#include "cside.h"
#include "comm_cside.h"
#include "_cgo_export.h"

int ftmpi_attr_copy_tramp(int kind, uintptr_t fn, uintptr_t obj, int keyval, uintptr_t extra, uintptr_t in, uintptr_t *out, int *flag)
{
    void *o = NULL;
    int rc;
    *flag = 0;
    switch (kind) {
    case FTMPI_ATTR_TYPE:
        rc = ((MPI_Type_copy_attr_function *)fn)((MPI_Datatype)obj, keyval, (void *)extra, (void *)in, &o, flag);
        break;
    case FTMPI_ATTR_WIN:
        rc = ((MPI_Win_copy_attr_function *)fn)((MPI_Win)obj, keyval, (void *)extra, (void *)in, &o, flag);
        break;
    default:
        rc = ((MPI_Comm_copy_attr_function *)fn)((MPI_Comm)obj, keyval, (void *)extra, (void *)in, &o, flag);
    }
    *out = (uintptr_t)o;
    return rc;
}

int ftmpi_attr_delete_tramp(int kind, uintptr_t fn, uintptr_t obj, int keyval, uintptr_t val, uintptr_t extra)
{
    switch (kind) {
    case FTMPI_ATTR_TYPE:
        return ((MPI_Type_delete_attr_function *)fn)((MPI_Datatype)obj, keyval, (void *)val, (void *)extra);
    case FTMPI_ATTR_WIN:
        return ((MPI_Win_delete_attr_function *)fn)((MPI_Win)obj, keyval, (void *)val, (void *)extra);
    }
    return ((MPI_Comm_delete_attr_function *)fn)((MPI_Comm)obj, keyval, (void *)val, (void *)extra);
}

int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    return ftmpi_Group_range_incl((uintptr_t)group, n, (int *)ranges, (uintptr_t *)newgroup);
}
int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup) __attribute__((weak, alias("PMPI_Group_range_incl")));

int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    return ftmpi_Group_range_excl((uintptr_t)group, n, (int *)ranges, (uintptr_t *)newgroup);
}
int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup) __attribute__((weak, alias("PMPI_Group_range_excl")));

/* wkind: 0 MPI_UNWEIGHTED, 1 an array, 2 MPI_WEIGHTS_EMPTY (topo.go). */
static int wkind(const int *w)
{
    if (w == MPI_UNWEIGHTED)
        return 0;
    if (w == MPI_WEIGHTS_EMPTY)
        return 2;
    return 1;
}

static int *warray(const int *w) { return wkind(w) == 1 ? (int *)w : NULL; }

int PMPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[], const int destinations[], const int *weights, MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    return ftmpi_Dist_graph_create((uintptr_t)comm_old, n, (int *)sources, (int *)degrees, (int *)destinations, warray(weights), wkind(weights), (uintptr_t)info, reorder, (uintptr_t *)comm_dist_graph);
}
int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[], const int destinations[], const int *weights, MPI_Info info, int reorder, MPI_Comm *comm_dist_graph) __attribute__((weak, alias("PMPI_Dist_graph_create")));

int PMPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int *sourceweights, int outdegree, const int destinations[], const int *destweights, MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    return ftmpi_Dist_graph_create_adjacent((uintptr_t)comm_old, indegree, (int *)sources, warray(sourceweights), wkind(sourceweights), outdegree, (int *)destinations, warray(destweights), wkind(destweights), (uintptr_t)info, reorder, (uintptr_t *)comm_dist_graph);
}
int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int *sourceweights, int outdegree, const int destinations[], const int *destweights, MPI_Info info, int reorder, MPI_Comm *comm_dist_graph) __attribute__((weak, alias("PMPI_Dist_graph_create_adjacent")));

int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int *sourceweights, int maxoutdegree, int destinations[], int *destweights)
{
    return ftmpi_Dist_graph_neighbors((uintptr_t)comm, maxindegree, sources, warray(sourceweights), maxoutdegree, destinations, warray(destweights));
}
int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int *sourceweights, int maxoutdegree, int destinations[], int *destweights) __attribute__((weak, alias("PMPI_Dist_graph_neighbors")));

int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn, MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval, void *extra_state)
{
    return ftmpi_Comm_create_keyval((uintptr_t)comm_copy_attr_fn, (uintptr_t)comm_delete_attr_fn, comm_keyval, (uintptr_t)extra_state);
}
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn, MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval, void *extra_state) __attribute__((weak, alias("PMPI_Comm_create_keyval")));

int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval, void *extra_state)
{
    return ftmpi_Comm_create_keyval((uintptr_t)copy_fn, (uintptr_t)delete_fn, keyval, (uintptr_t)extra_state);
}
int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval, void *extra_state) __attribute__((weak, alias("PMPI_Keyval_create")));

int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    return ftmpi_Comm_set_attr((uintptr_t)comm, comm_keyval, (uintptr_t)attribute_val);
}
int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val) __attribute__((weak, alias("PMPI_Comm_set_attr")));

int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    return ftmpi_Comm_set_attr((uintptr_t)comm, keyval, (uintptr_t)attribute_val);
}
int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val) __attribute__((weak, alias("PMPI_Attr_put")));

int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn, MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval, void *extra_state)
{
    return ftmpi_Type_create_keyval((uintptr_t)type_copy_attr_fn, (uintptr_t)type_delete_attr_fn, type_keyval, (uintptr_t)extra_state);
}
int MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn, MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval, void *extra_state) __attribute__((weak, alias("PMPI_Type_create_keyval")));

int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
    return ftmpi_Type_set_attr((uintptr_t)datatype, type_keyval, (uintptr_t)attribute_val);
}
int MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val) __attribute__((weak, alias("PMPI_Type_set_attr")));
