/* coll_mismatch.c: members passing different counts, operations or
 * signatures to one collective get an error of the class naming what
 * differs under MPI_ERRORS_RETURN, instead of a crash or a hang, and the
 * communicator stays usable. Which members learn of the difference
 * depends on timing (a member whose part completed returns MPI_SUCCESS);
 * rank 0 prints each case's classes, one per rank, and the messages. */
#include <mpi.h>
#include <stdio.h>

static void dummy(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in, (void)inout, (void)len, (void)dt;
}

static int rank, size;

static void show(const char *what, int rc)
{
    int cls = 0, len = 0, all[64];
    char msg[MPI_MAX_ERROR_STRING];
    msg[0] = 0;
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        printf("rank %d %s: %s\n", rank, what, msg);
    }
    MPI_Gather(&cls, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result: %s classes", what);
        for (int i = 0; i < size; i++)
            printf(" %d", all[i]);
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    int v[8] = {0}, w[8] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    show("bcast-count", MPI_Bcast(v, rank == 0 ? 2 : 1, MPI_INT, 0, MPI_COMM_WORLD));
    show("allreduce-op", MPI_Allreduce(v, w, 2, MPI_INT, rank == 1 ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD));
    show("gather-sig", MPI_Gather(v, 2, MPI_INT, w, 1, MPI_INT, 0, MPI_COMM_WORLD));
    show("allreduce-type", MPI_Allreduce(v, w, 1, rank == 2 ? MPI_DOUBLE : MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_Op op;
    MPI_Op_create(dummy, 1, &op);
    show("reduce-userop", MPI_Reduce(v, w, 1, MPI_INT, rank == 1 ? op : MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_Op_free(&op);
    int one = 1, s = 0;
    int rc = MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ok = rc == MPI_SUCCESS && s == size, allok = 0;
    MPI_Reduce(&ok, &allok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: usable after %d\n", allok);
    MPI_Finalize();
    return 0;
}
