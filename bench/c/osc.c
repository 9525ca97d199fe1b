/*
 * osc: one-sided communication between ranks 0 and 1 in the style of the
 * OSU one-sided benchmarks (osu_put_latency, osu_get_latency,
 * osu_acc_latency, osu_put_bw), the C side of `ftmpi-bench -bench rma`
 * (cmd/ftmpi-bench/rma.go), with the same cases, sizes and counts:
 *
 *   rma-put-lat-fence, rma-get-lat-fence, rma-acc-lat-fence: both ranks in
 *       turn issue one operation to the other, each followed by a fence
 *       (two fences per iteration); microseconds per operation and fence.
 *   rma-put-lat-lock, rma-get-lat-lock, rma-acc-lat-lock: rank 0 locks rank
 *       1's window (MPI_LOCK_SHARED), issues one operation and unlocks;
 *       microseconds per epoch.
 *   rma-put-bw-fence, rma-put-bw-lock: rank 0 issues -window Puts to rank 1
 *       per epoch (fence, or lock/unlock); MB/s (10^6 bytes per second).
 *
 * Put and Get move MPI_BYTE; Accumulate is MPI_SUM over MPI_INT. Sizes: 8 B
 * to 1 MiB by factors of 8 (within -min and -max). Windows come from
 * MPI_Win_allocate. Each reported value is the median over -runs
 * repetitions, each after a barrier.
 *
 * Flags: those of common.h, plus -iters N (default 1000: iterations at small
 * sizes; 64 KiB and up: max(20, N/10); 1 MiB: max(10, N/50); the bandwidth
 * epochs a tenth of that, at least 2) and -window N (default 64).
 */
#include "common.h"

#define SPAN (4L << 20) /* bytes of the Put/Get window: the Puts of an epoch wrap around in it */
#define MAXSZ (1L << 20)

static int scaled(int iters, long size)
{
    if (size >= (1L << 20))
        return iters / 50 > 10 ? iters / 50 : 10;
    if (size >= (64L << 10))
        return iters / 10 > 20 ? iters / 10 : 20;
    return iters;
}

enum { OP_PUT, OP_GET, OP_ACC };

static void do_op(int op, MPI_Win win, char *src, char *dst, int *asrc, long size, int target)
{
    switch (op) {
    case OP_PUT:
        MPI_Put(src, (int)size, MPI_BYTE, target, 0, (int)size, MPI_BYTE, win);
        break;
    case OP_GET:
        MPI_Get(dst, (int)size, MPI_BYTE, target, 0, (int)size, MPI_BYTE, win);
        break;
    case OP_ACC:
        MPI_Accumulate(asrc, (int)(size / 4), MPI_INT, target, 0, (int)(size / 4), MPI_INT, MPI_SUM, win);
        break;
    }
}

static double elapsed_us(double t0, int units) { return (MPI_Wtime() - t0) * 1e6 / units; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    /* Take -iters and -window out of argv; common.h parses the rest. */
    int iters = 1000, window = 64, ac = 1;
    for (int i = 1; i < argc; i++) {
        const char *f = bench_flag_name(argv[i]);
        if (f != NULL && i + 1 < argc && strcmp(f, "iters") == 0) {
            iters = atoi(argv[++i]);
            continue;
        }
        if (f != NULL && i + 1 < argc && strcmp(f, "window") == 0) {
            window = atoi(argv[++i]);
            continue;
        }
        argv[ac++] = argv[i];
    }
    bench_opts o;
    if (bench_parse(ac, argv, &o, MAXSZ) != 0 || np < 2 || iters < 1 || window < 1) {
        if (rank == 0 && np < 2)
            fprintf(stderr, "osc needs at least 2 ranks\n");
        if (rank == 0 && (iters < 1 || window < 1))
            fprintf(stderr, "osc: -iters and -window must be at least 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    char *base, *abase;
    MPI_Win win, awin;
    MPI_Win_allocate(SPAN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_allocate(MAXSZ, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &abase, &awin);
    char *src = bench_alloc(MAXSZ), *dst = bench_alloc(MAXSZ);
    int *asrc = bench_alloc(MAXSZ);
    double *res = malloc(sizeof(double) * (size_t)o.runs);
    long sizes[16];
    int nsizes = 0;
    for (long n = 8; n <= MAXSZ; n *= 8)
        if (n >= o.min && n <= o.max)
            sizes[nsizes++] = n;
    if (nsizes > 0 && sizes[nsizes - 1] != MAXSZ && o.max >= MAXSZ)
        sizes[nsizes++] = MAXSZ;

    const char *names[3] = {"put", "get", "acc"};
    char name[64];
    MPI_Win_fence(0, win);
    MPI_Win_fence(0, awin);
    for (int op = OP_PUT; op <= OP_ACC; op++) {
        MPI_Win w = op == OP_ACC ? awin : win;
        for (int s = 0; s < nsizes; s++) {
            long size = sizes[s];
            int n = scaled(iters, size), warm = n / 10 > 5 ? n / 10 : 5;
            for (int r = 0; r < o.runs; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = 0;
                for (int i = 0; i < warm + n; i++) {
                    if (i == warm)
                        t0 = MPI_Wtime();
                    if (rank == 0) {
                        do_op(op, w, src, dst, asrc, size, 1);
                        MPI_Win_fence(0, w);
                        MPI_Win_fence(0, w);
                    } else if (rank == 1) {
                        MPI_Win_fence(0, w);
                        do_op(op, w, src, dst, asrc, size, 0);
                        MPI_Win_fence(0, w);
                    } else {
                        MPI_Win_fence(0, w);
                        MPI_Win_fence(0, w);
                    }
                }
                res[r] = elapsed_us(t0, 2 * n);
            }
            double v = bench_median(res, o.runs);
            snprintf(name, sizeof name, "rma-%s-lat-fence", names[op]);
            if (rank == 0)
                bench_emit(&o, name, np, size, v, "us");
            for (int r = 0; r < o.runs; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = 0;
                for (int i = 0; i < warm + n; i++) {
                    if (i == warm)
                        t0 = MPI_Wtime();
                    if (rank == 0) {
                        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w);
                        do_op(op, w, src, dst, asrc, size, 1);
                        MPI_Win_unlock(1, w);
                    }
                }
                res[r] = elapsed_us(t0, n);
            }
            v = bench_median(res, o.runs);
            snprintf(name, sizeof name, "rma-%s-lat-lock", names[op]);
            if (rank == 0)
                bench_emit(&o, name, np, size, v, "us");
            MPI_Win_fence(0, w);
        }
    }
    for (int s = 0; s < nsizes; s++) {
        long size = sizes[s];
        int n = scaled(iters, size) / 10 > 2 ? scaled(iters, size) / 10 : 2;
        int warm = n / 10 > 2 ? n / 10 : 2;
        for (int mode = 0; mode < 2; mode++) {
            for (int r = 0; r < o.runs; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = 0;
                for (int i = 0; i < warm + n; i++) {
                    if (i == warm)
                        t0 = MPI_Wtime();
                    if (rank == 0) {
                        if (mode == 1)
                            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
                        for (int j = 0; j < window; j++)
                            MPI_Put(src, (int)size, MPI_BYTE, 1, (MPI_Aint)((j * size) % (SPAN - size + 1)),
                                    (int)size, MPI_BYTE, win);
                        if (mode == 1)
                            MPI_Win_unlock(1, win);
                    }
                    if (mode == 0)
                        MPI_Win_fence(0, win);
                }
                res[r] = (double)size * window / elapsed_us(t0, n); /* bytes per us = MB/s */
            }
            double v = bench_median(res, o.runs);
            if (rank == 0)
                bench_emit(&o, mode == 0 ? "rma-put-bw-fence" : "rma-put-bw-lock", np, size, v, "MB/s");
            MPI_Win_fence(0, win);
        }
    }
    MPI_Win_free(&win);
    MPI_Win_free(&awin);
    free(src);
    free(dst);
    free(asrc);
    free(res);
    MPI_Finalize();
    return 0;
}
