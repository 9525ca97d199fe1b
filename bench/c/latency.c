/*
 * latency: ping-pong between ranks 0 and 1; reports half the round trip in
 * microseconds, the median over -runs repetitions, for power-of-two sizes from
 * -min to -max (default 1 B .. 4 MiB). Other ranks (if any) only wait.
 */
#include "common.h"

static void iters_for(long size, int *warm, int *iters)
{
    if (size <= 8192) {
        *warm = 200;
        *iters = 2000;
    } else if (size <= 262144) {
        *warm = 20;
        *iters = 200;
    } else {
        *warm = 5;
        *iters = 40;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bench_opts o;
    if (bench_parse(argc, argv, &o, 4L << 20) != 0 || np < 2) {
        if (rank == 0 && np < 2)
            fprintf(stderr, "latency needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *sbuf = bench_alloc((size_t)o.max);
    char *rbuf = bench_alloc((size_t)o.max);
    double *res = malloc(sizeof(double) * (size_t)o.runs);
    int peer = rank == 0 ? 1 : 0;

    for (long size = o.min; size <= o.max; size *= 2) {
        int warm, iters;
        iters_for(size, &warm, &iters);
        for (int r = 0; r < o.runs; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = 0;
            if (rank == 0) {
                for (int i = 0; i < warm + iters; i++) {
                    if (i == warm)
                        t0 = MPI_Wtime();
                    MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                }
                res[r] = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
            } else if (rank == 1) {
                for (int i = 0; i < warm + iters; i++) {
                    MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                }
            }
        }
        if (rank == 0)
            bench_emit(&o, "latency", np, size, bench_median(res, o.runs), "us");
    }
    free(res);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
