/* coll_err.c: bad collective arguments under MPI_ERRORS_RETURN give the
 * right error class, with a message naming what was wrong, and do not
 * crash; the communicator stays usable. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank;

static void show(const char *what, int rc)
{
    int cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (rank == 0)
        printf("result: %s class %d: %s\n", what, cls, msg);
}

int main(int argc, char **argv)
{
    int size, v[4] = {1, 2, 3, 4}, w[4], rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    show("bcast-root", MPI_Bcast(v, 1, MPI_INT, size, MPI_COMM_WORLD));
    show("reduce-root", MPI_Reduce(v, w, 1, MPI_INT, MPI_SUM, -7, MPI_COMM_WORLD));
    show("allreduce-type", MPI_Allreduce(v, w, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD));
    show("allreduce-op", MPI_Allreduce(v, w, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
    show("allreduce-replace", MPI_Allreduce(v, w, 1, MPI_INT, MPI_REPLACE, MPI_COMM_WORLD));
    show("allreduce-band-double", MPI_Allreduce(v, w, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD));
    show("allreduce-count", MPI_Allreduce(v, w, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    show("bcast-in-place", MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD));
    show("gather-comm", MPI_Gather(v, 1, MPI_INT, w, 1, MPI_INT, 0, MPI_COMM_NULL));
    show("allreduce-long-double", MPI_Allreduce(v, w, 1, MPI_LONG_DOUBLE, MPI_BAND, MPI_COMM_WORLD));
    show("minloc-int", MPI_Allreduce(v, w, 1, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD));
    MPI_Request req = MPI_REQUEST_NULL;
    show("iallreduce-type", MPI_Iallreduce(v, w, 1, (MPI_Datatype)MPI_COMM_WORLD, MPI_SUM, MPI_COMM_WORLD, &req));
    show("op-free-predefined", MPI_Op_free(&(MPI_Op){MPI_SUM}));

    /* Still usable. */
    int one = 1, n = 0;
    rc = MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: after errors rc %d sum %d req-null %d\n", rc, n, req == MPI_REQUEST_NULL);
    MPI_Finalize();
    return 0;
}
