/*
 * coll: per-operation time (microseconds) of MPI collectives on MPI_COMM_WORLD.
 *
 * Operations and what "size" means (bytes of each rank's contribution):
 *   barrier    size 0 (no data)
 *   bcast      root 0 broadcasts size bytes (MPI_CHAR)
 *   reduce     size/8 MPI_DOUBLEs summed to root 0 (at least 1 double)
 *   allreduce  size/8 MPI_DOUBLEs summed (at least 1 double)
 *   allgather  every rank contributes size bytes; each receives np*size
 *   alltoall   every rank sends size bytes to every rank (np*size per rank
 *              sent and received), as in osu_alltoall
 * Sizes: 8 B, 64 KiB, 1 MiB, restricted to [-min, -max].
 *
 * Method: 2 warm-up calls, then timed loops of 1, 2, 4, ... calls until one of
 * at least 2 calls takes budget/8 at the slowest rank (or has 10000 calls); its
 * mean a call fixes the iteration count (about -budget ms per repetition,
 * default 30, at least 1 and at most 10000 calls), as cmd/ftmpi-bench's
 * calibrate (one call timed right after a Barrier sized it before). Each repetition: barrier, each rank times
 * ITERS back-to-back calls and computes its mean; the maximum of the per-rank
 * means is one sample. Reported: median of -runs samples.
 */
#include "common.h"

enum { OP_BARRIER, OP_BCAST, OP_REDUCE, OP_ALLREDUCE, OP_ALLGATHER, OP_ALLTOALL, OP_N };
static const char *op_names[OP_N] = {"barrier", "bcast", "reduce", "allreduce", "allgather",
                                     "alltoall"};

static char *sbuf, *rbuf;

static void run_op(int op, long size, int np)
{
    int dcount = size / 8 > 0 ? (int)(size / 8) : 1;
    (void)np;
    switch (op) {
    case OP_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case OP_BCAST:
        MPI_Bcast(sbuf, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case OP_REDUCE:
        MPI_Reduce(sbuf, rbuf, dcount, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case OP_ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, dcount, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case OP_ALLGATHER:
        MPI_Allgather(sbuf, (int)size, MPI_CHAR, rbuf, (int)size, MPI_CHAR, MPI_COMM_WORLD);
        break;
    case OP_ALLTOALL:
        MPI_Alltoall(sbuf, (int)size, MPI_CHAR, rbuf, (int)size, MPI_CHAR, MPI_COMM_WORLD);
        break;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    /* -budget MS is coll-only; strip it before the common parser. */
    double budget_ms = 30;
    int nargc = 0;
    char **nargv = malloc(sizeof(char *) * (size_t)(argc + 1));
    for (int i = 0; i < argc; i++) {
        const char *f = i > 0 ? bench_flag_name(argv[i]) : NULL;
        if (f != NULL && strcmp(f, "budget") == 0 && i + 1 < argc) {
            budget_ms = atof(argv[++i]);
            continue;
        }
        nargv[nargc++] = argv[i];
    }
    nargv[nargc] = NULL;
    bench_opts o;
    if (bench_parse(nargc, nargv, &o, 1L << 20) != 0)
        MPI_Abort(MPI_COMM_WORLD, 2);

    static const long sizes[] = {8, 65536, 1L << 20};
    const int nsizes = (int)(sizeof(sizes) / sizeof(sizes[0]));
    long maxsize = 8;
    for (int s = 0; s < nsizes; s++)
        if (sizes[s] >= o.min && sizes[s] <= o.max && sizes[s] > maxsize)
            maxsize = sizes[s];
    /* Alltoall and allgather need np * size; add a double's worth of slack. */
    sbuf = bench_alloc((size_t)np * (size_t)maxsize + 8);
    rbuf = bench_alloc((size_t)np * (size_t)maxsize + 8);
    /* Initialise the send buffer with valid doubles for the reductions. */
    for (size_t i = 0; i < ((size_t)np * (size_t)maxsize + 8) / sizeof(double); i++)
        ((double *)sbuf)[i] = 1.0;
    double *res = malloc(sizeof(double) * (size_t)o.runs);

    for (int op = 0; op < OP_N; op++) {
        for (int s = 0; s < nsizes; s++) {
            long size = op == OP_BARRIER ? 0 : sizes[s];
            if (op == OP_BARRIER && s > 0)
                break;
            if (op != OP_BARRIER && (size < o.min || size > o.max))
                continue;

            MPI_Barrier(MPI_COMM_WORLD);
            run_op(op, size, np);
            run_op(op, size, np);
            double t0, one = 0;
            for (int k = 1;; k *= 2) {
                t0 = MPI_Wtime();
                for (int i = 0; i < k; i++)
                    run_op(op, size, np);
                double took = MPI_Wtime() - t0, slowest = 0;
                MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (k > 1 && (slowest >= budget_ms * 1e-3 / 8 || k >= 10000)) {
                    one = slowest / k;
                    break;
                }
            }
            double want = budget_ms * 1e-3 / (one > 1e-9 ? one : 1e-9);
            int iters = want > 10000 ? 10000 : (want < 1 ? 1 : (int)want);

            for (int r = 0; r < o.runs; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
                for (int i = 0; i < iters; i++)
                    run_op(op, size, np);
                double mean = (MPI_Wtime() - t0) * 1e6 / iters, maxmean = 0;
                MPI_Reduce(&mean, &maxmean, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                res[r] = maxmean;
            }
            if (rank == 0)
                bench_emit(&o, op_names[op], np, size, bench_median(res, o.runs), "us");
        }
    }
    free(res);
    free(sbuf);
    free(rbuf);
    free(nargv);
    MPI_Finalize();
    return 0;
}
