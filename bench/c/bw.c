/*
 * bw / bibw (OSU style). Compiled twice: without BIBW it is "bw", with
 * -DBIBW it is "bibw".
 *
 * bw:   rank 0 posts a window of 64 MPI_Isend of SIZE bytes and waits for all;
 *       rank 1 posts 64 MPI_Irecv, waits, then returns a 4-byte ack.
 * bibw: both ranks post 64 MPI_Irecv and 64 MPI_Isend each iteration and wait
 *       for all 128; bytes moved count both directions.
 * Reported: MB/s (1e6 bytes per second), median over -runs repetitions, for
 * power-of-two sizes -min .. -max (default 1 B .. 16 MiB).
 *
 * Iterations are scaled by size so that each timed repetition moves about
 * 128 MiB per direction (at most 100 and at least 1 window).
 */
#include "common.h"

#define WINDOW 64

#ifdef BIBW
#define BENCH_NAME "bibw"
#else
#define BENCH_NAME "bw"
#endif

static void iters_for(long size, int *warm, int *iters)
{
    long target = 128L << 20;
    long it = target / (WINDOW * size);
    if (it > 100)
        it = 100;
    if (it < 1)
        it = 1;
    *iters = (int)it;
    *warm = it >= 10 ? (int)(it / 10) : 1;
    if (size >= (4L << 20))
        *warm = 0; /* a 64 x 4 MiB window is already a warm-up of its own */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bench_opts o;
    if (bench_parse(argc, argv, &o, 16L << 20) != 0 || np < 2) {
        if (rank == 0 && np < 2)
            fprintf(stderr, BENCH_NAME " needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *sbuf = bench_alloc((size_t)o.max);
    char *rbuf = bench_alloc((size_t)o.max);
    double *res = malloc(sizeof(double) * (size_t)o.runs);
    MPI_Request req[2 * WINDOW];
#ifndef BIBW
    int ack = 0;
#endif
    int peer = rank == 0 ? 1 : 0;

    for (long size = o.min; size <= o.max; size *= 2) {
        int warm, iters;
        iters_for(size, &warm, &iters);
        for (int r = 0; r < o.runs; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (rank <= 1) {
                for (int i = 0; i < warm + iters; i++) {
                    if (i == warm)
                        t0 = MPI_Wtime();
#ifdef BIBW
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, 10, MPI_COMM_WORLD, &req[w]);
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, 10, MPI_COMM_WORLD,
                                  &req[WINDOW + w]);
                    MPI_Waitall(2 * WINDOW, req, MPI_STATUSES_IGNORE);
#else
                    if (rank == 0) {
                        for (int w = 0; w < WINDOW; w++)
                            MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, 10, MPI_COMM_WORLD,
                                      &req[w]);
                        MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                        MPI_Recv(&ack, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    } else {
                        for (int w = 0; w < WINDOW; w++)
                            MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, 10, MPI_COMM_WORLD,
                                      &req[w]);
                        MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                        MPI_Send(&ack, 1, MPI_INT, peer, 11, MPI_COMM_WORLD);
                    }
#endif
                }
            }
            double dt = MPI_Wtime() - t0;
            double bytes = (double)size * WINDOW * iters;
#ifdef BIBW
            bytes *= 2.0;
#endif
            res[r] = bytes / dt / 1e6;
        }
        if (rank == 0)
            bench_emit(&o, BENCH_NAME, np, size, bench_median(res, o.runs), "MB/s");
    }
    free(res);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
