/* ft_reinit_waitall.c: under MPI_ERRORS_REINIT_ASYNC an MPI_Waitall that a
 * failure ends rolls back to MPI_Reinit's resilient function; it does not
 * return. Each survivor posts a receive the victim never sends and a send
 * to the victim, and waits for both; the victim prints "waitall: every
 * survivor waits" once it has every survivor's message (ftmpirun kills it
 * on that line) and waits. With argument "ended" each survivor's first
 * request is a receive from the next survivor, which never sends it: only
 * the end of the epoch ends that one (argument "failed": none, the
 * victim's receive fails). In the next epoch every rank sums how often its
 * MPI_Waitall returned, and rank 0 prints the result. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define VICTIM 2

static int returned; /* MPI_Waitall returns after the kill (a survivor's, across epochs) */
static long long ranks;

static void fn(void *arg)
{
    int ended = *(int *)arg;
    int rank, size, state;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reinit_state(&state);
    if (state != MPI_REINIT_NEW) {
        long long mine[2] = {1, returned}, all[2];
        MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        ranks = all[0];
        returned = (int)all[1];
        return;
    }
    long long v = rank, got;
    if (rank == VICTIM) {
        for (int i = 0; i < size - 1; i++)
            MPI_Recv(&got, 1, MPI_LONG_LONG, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("waitall: every survivor waits\n");
        MPI_Recv(&got, 1, MPI_LONG_LONG, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    MPI_Request rq[3];
    int k = 0;
    long long never;
    if (ended) {
        int next = (rank + 1) % size == VICTIM ? (rank + 2) % size : (rank + 1) % size;
        MPI_Irecv(&never, 1, MPI_LONG_LONG, next, 7, MPI_COMM_WORLD, &rq[k++]);
    }
    MPI_Irecv(&got, 1, MPI_LONG_LONG, VICTIM, 7, MPI_COMM_WORLD, &rq[k++]);
    MPI_Isend(&v, 1, MPI_LONG_LONG, VICTIM, 8, MPI_COMM_WORLD, &rq[k++]);
    int rc = MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    printf("waitall: rank %d: MPI_Waitall returned: %s\n", rank, msg);
    returned++;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "failed") != 0 && strcmp(argv[1], "ended") != 0)) {
        fprintf(stderr, "usage: ft_reinit_waitall failed|ended\n");
        return 2;
    }
    int ended = strcmp(argv[1], "ended") == 0;
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_REINIT_ASYNC);
    int rc = MPI_Reinit(fn, &ended);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("result: waitall rc %d ranks %lld returned %d\n", rc, ranks, returned);
    MPI_Finalize();
    return 0;
}
