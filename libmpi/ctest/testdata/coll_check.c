/* coll_check.c: under the checking mode (FTMPI_CHECK=1, ftmpirun
 * --check) mismatched collectives are an error at every rank under
 * MPI_ERRORS_RETURN: a broadcast whose root differs at the last rank
 * (its root included), a reduction against a broadcast (each waits for
 * the other without the checking mode), a count and an operation that
 * differ; then a matching Gatherv with per-rank counts passes and the
 * communicator is usable. Rank 0 prints each case's classes, one per
 * rank, and every rank its messages. */
#include <mpi.h>
#include <stdio.h>

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
    int v[8] = {0}, w[8] = {0}, counts[64], all[64 * 8];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    show("bcast-root", MPI_Bcast(v, 4, MPI_INT, rank == size - 1 ? 1 : 0, MPI_COMM_WORLD));
    if (rank == 0)
        show("reduce-bcast", MPI_Reduce(v, w, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    else
        show("reduce-bcast", MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD));
    show("bcast-count", MPI_Bcast(v, rank == 0 ? 2 : 1, MPI_INT, 0, MPI_COMM_WORLD));
    show("allreduce-op", MPI_Allreduce(v, w, 2, MPI_INT, rank == 1 ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        counts[i] = i + 1;
    int displs[64];
    for (int i = 0, off = 0; i < size; off += counts[i], i++)
        displs[i] = off;
    show("gatherv-counts", MPI_Gatherv(v, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD));
    int one = 1, s = 0;
    int rc = MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ok = rc == MPI_SUCCESS && s == size, allok = 0;
    MPI_Reduce(&ok, &allok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: usable after %d\n", allok);
    MPI_Finalize();
    return 0;
}
