/* halo.c: a 1-D heat equation whose ranks own blocks of cells and exchange
 * halo cells with their neighbours each step (MPI_Sendrecv), repaired by
 * MPI_Comm_shrink after a failure. Every 20 steps the ranks take an
 * in-memory checkpoint of the whole field (an MPI_Allreduce of the blocks)
 * and commit it only if MPI_Comm_agree says every rank has it. A rank
 * that sees a failure revokes the communicator, so the others see it too;
 * then all agree (no), shrink, redistribute the cells over the survivors
 * and resume from the committed checkpoint.
 *
 *   ftmpicc -o halo examples/c/halo.c
 *   ftmpirun -n 4 --on-failure continue --inject 'kill:rank=1,on=step 30 done' ./halo
 *
 * The update of a cell does not depend on the distribution, so the lowest
 * surviving rank prints the result of a failure-free run.
 *
 * MPI_Comm_agree is collective: every survivor must make the same number
 * of agreements before MPI_Comm_shrink. A rank that fails the checkpoint
 * made its agreement there (the same agreement as recover's at a rank
 * that saw the failure in MPI_Sendrecv), so it recovers without another.
 *
 * With two arguments R S, rank R kills itself at step S between its two
 * MPI_Sendrecv calls (a kill at an exact point: at a checkpoint step its
 * right neighbour fails in MPI_Sendrecv while the ranks further right fail
 * the checkpoint). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
#define STEPS 400
#define EVERY 20

static double ckpt[N];    /* the committed checkpoint: the whole field at ckpt_step */
static int ckpt_step;

/* block is the range [lo, hi) of cells rank r of n owns. */
static void block(int r, int n, int *lo, int *hi)
{
    *lo = (int)((long)N * r / n);
    *hi = (int)((long)N * (r + 1) / n);
}

/* recover revokes comm, agrees on failure unless the caller agreed
 * already (at the checkpoint), shrinks and frees comm. */
static MPI_Comm recover(MPI_Comm comm, int *recoveries, int agreed)
{
    MPI_Comm_revoke(comm);
    if (!agreed) {
        int ok = 0;
        MPI_Comm_agree(comm, &ok);
    }
    MPI_Comm nc;
    if (MPI_Comm_shrink(comm, &nc) != MPI_SUCCESS) {
        fprintf(stderr, "halo: MPI_Comm_shrink failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_free(&comm);
    (*recoveries)++;
    return nc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int wrank, die_rank = -1, die_step = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (argc == 3) {
        die_rank = atoi(argv[1]);
        die_step = atoi(argv[2]);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int i = 0; i < N; i++)
        ckpt[i] = (i > N / 4 && i < N / 2) ? 100.0 : (double)(i % 13);
    ckpt_step = 0;

    static double u[N + 2], un[N + 2], mine[N];
    int recoveries = 0;
restart:;
    int rank, size, lo, hi;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    block(rank, size, &lo, &hi);
    int n = hi - lo;
    /* u[1..n] are the cells lo..hi-1, u[0] and u[n+1] the halo. */
    memcpy(&u[1], &ckpt[lo], (size_t)n * sizeof(double));
    int step = ckpt_step;
    if (recoveries > 0 && rank == 0)
        printf("halo: recovery %d: %d ranks resume at step %d\n", recoveries, size, step);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    while (step < STEPS) {
        u[0] = lo > 0 ? 0.0 : u[1];
        u[n + 1] = hi < N ? 0.0 : u[n];
        int rc = MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[n + 1], 1, MPI_DOUBLE, right, 0, comm, MPI_STATUS_IGNORE);
        if (wrank == die_rank && step + 1 == die_step && recoveries == 0)
            raise(SIGKILL);
        if (rc == MPI_SUCCESS)
            rc = MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            comm = recover(comm, &recoveries, 0);
            goto restart;
        }
        for (int i = 1; i <= n; i++)
            un[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        memcpy(&u[1], &un[1], (size_t)n * sizeof(double));
        step++;
        if (step % EVERY == 0) {
            /* Checkpoint: every rank gets the whole field; commit it only
             * if every rank has it. */
            memset(mine, 0, sizeof mine);
            memcpy(&mine[lo], &u[1], (size_t)n * sizeof(double));
            static double field[N];
            rc = MPI_Allreduce(mine, field, N, MPI_DOUBLE, MPI_SUM, comm);
            int ok = (rc == MPI_SUCCESS);
            if (rc == MPI_ERR_PROC_FAILED)
                MPI_Comm_revoke(comm);
            MPI_Comm_agree(comm, &ok);
            if (!ok) {
                comm = recover(comm, &recoveries, 1);
                goto restart;
            }
            memcpy(ckpt, field, sizeof ckpt);
            ckpt_step = step;
        }
        if (rank == 0 && step % 10 == 0)
            printf("halo: step %d done\n", step);
    }
    if (rank == 0) {
        double sum = 0.0, wsum = 0.0;
        for (int i = 0; i < N; i++) {
            sum += ckpt[i];
            wsum += ckpt[i] * (double)(i % 97);
        }
        printf("result: halo n=%d steps=%d sum=%.10e weighted=%.10e\n", N, ckpt_step, sum, wsum);
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
