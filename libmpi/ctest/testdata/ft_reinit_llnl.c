/* ft_reinit_llnl.c: a program in the form of LLNL's Reinit prototype
 * (MPIX_Reinit with argc, argv and a restart point that gets the state).
 * Each step the ranks pass a token around the ring; rank 0 prints "llnl:
 * step N" every 20 steps. argv[1] holds the checkpoint of rank 0's count. */
#include <mpi.h>
#include <stdio.h>

#define STEPS 400

static long long total;

static int point(int argc, char **argv, int state)
{
    (void)argc;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Every rank restarts from step 0 (no checkpoint): the count is the
     * same whatever happened. */
    if (rank == 0 && state != MPI_REINIT_NEW)
        printf("llnl: rank 0 %s, argv[1] %s\n", state == MPI_REINIT_REINITED ? "reinited" : "restarted", argv[1]);
    if (state == MPI_REINIT_RESTARTED)
        printf("llnl: rank %d restarted\n", rank);
    long long t = 0;
    for (int s = 0; s < STEPS; s++) {
        long long tok = s;
        MPI_Sendrecv_replace(&tok, 1, MPI_LONG_LONG, (rank + 1) % size, 0, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t += tok;
        if (rank == 0 && s % 20 == 0)
            printf("llnl: step %d\n", s);
    }
    total = t;
    return 7;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_REINIT_ASYNC);
    int rc = MPIX_Reinit(argc, argv, point);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("result: llnl rc %d total %lld\n", rc, total);
    MPI_Finalize();
    return 0;
}
