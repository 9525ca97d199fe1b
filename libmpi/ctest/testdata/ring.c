/* ring.c: a token passed around the ring of all ranks, each adding its
 * rank; checks statuses, MPI_Get_count and MPI_Wtime. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, v = 0, n = -1;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double t0 = MPI_Wtime();
    if (rank == 0) {
        MPI_Send(&v, 1, MPI_INT, 1 % size, 7, MPI_COMM_WORLD);
        MPI_Recv(&v, 1, MPI_INT, size - 1, 7, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        printf("result: sum %d count %d source %d tag %d wtime-ok %d\n", v, n, st.MPI_SOURCE, st.MPI_TAG,
               MPI_Wtime() >= t0);
    } else {
        MPI_Recv(&v, 1, MPI_INT, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        v += rank;
        MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
