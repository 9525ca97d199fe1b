/*
 * dtype: ping-pong between ranks 0 and 1 of derived-datatype messages, the C
 * side of `ftmpi-bench -bench dtype` (cmd/ftmpi-bench/dtype.go). Reports half
 * the round trip in microseconds, the median over -runs repetitions, at 1 KiB
 * and 1 MiB of data (sizes outside -min..-max are skipped; the size reported
 * is the data's bytes, not the bytes on the wire):
 *
 *   dtype-contig    n = size/8 MPI_DOUBLE from a contiguous buffer;
 *   dtype-vector    MPI_Type_vector(n, 1, 2, MPI_DOUBLE), count 1, over a
 *                   buffer of 2n doubles (every other double);
 *   dtype-struct    m = size/12 elements of struct {int; double} (16 bytes
 *   dtype-structdt  with padding, 12 of data) through MPI_Type_create_struct
 *                   of the two fields, resized to the C struct's extent, count m.
 *
 * ftmpi has two struct cases (Go struct elements sent as their bytes, padding
 * included, and a TypeCreateStruct datatype); in C both are the same MPI
 * struct datatype, so one measurement is printed under both names.
 *
 * Flags: those of common.h, plus -iters N (default 1000): timed iterations at
 * 1 KiB; 1 MiB gets max(10, N/50). Warm-up: max(10, iterations/10). These are
 * ftmpi-bench's counts for the same -iters.
 */
#include <stddef.h>

#include "common.h"

typedef struct {
    int i;
    double d;
} pair;

static int scaled(int iters, long size)
{
    int n = iters;
    if (size >= (1L << 20))
        n = iters / 50 > 10 ? iters / 50 : 10;
    else if (size >= (64L << 10))
        n = iters / 10 > 20 ? iters / 10 : 20;
    return n;
}

/* pingpong: median half round trip (us) on rank 0 of count elements of t. */
static double pingpong(const bench_opts *o, int rank, void *buf, int count,
                       MPI_Datatype t, int iters, double *res)
{
    int warm = iters / 10 > 10 ? iters / 10 : 10;
    int peer = rank == 0 ? 1 : 0;
    for (int r = 0; r < o->runs; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm)
                t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, count, t, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, count, t, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, count, t, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, count, t, peer, 1, MPI_COMM_WORLD);
            }
        }
        res[r] = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
    }
    return bench_median(res, o->runs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    /* Take -iters out of argv; common.h parses the rest. */
    int iters = 1000, ac = 1;
    for (int i = 1; i < argc; i++) {
        const char *f = bench_flag_name(argv[i]);
        if (f != NULL && strcmp(f, "iters") == 0 && i + 1 < argc) {
            iters = atoi(argv[++i]);
            continue;
        }
        argv[ac++] = argv[i];
    }
    bench_opts o;
    if (bench_parse(ac, argv, &o, 1L << 20) != 0 || np < 2 || iters < 1) {
        if (rank == 0 && np < 2)
            fprintf(stderr, "dtype needs at least 2 ranks\n");
        if (rank == 0 && iters < 1)
            fprintf(stderr, "dtype: -iters must be at least 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    MPI_Datatype st, pairt;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(pair, i), offsetof(pair, d)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl, disp, types, &st);
    MPI_Type_create_resized(st, 0, sizeof(pair), &pairt);
    MPI_Type_commit(&pairt);
    MPI_Type_free(&st);

    double *res = malloc(sizeof(double) * (size_t)o.runs);
    const long sizes[2] = {1L << 10, 1L << 20};
    for (int s = 0; s < 2; s++) {
        long size = sizes[s];
        if (size < o.min || size > o.max)
            continue;
        int n = (int)(size / 8), m = (int)(size / 12);
        int it = scaled(iters, size);
        double *contig = bench_alloc((size_t)n * sizeof(double));
        double *strided = bench_alloc(2 * (size_t)n * sizeof(double));
        pair *pairs = bench_alloc((size_t)m * sizeof(pair));
        MPI_Datatype vec;
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);

        double v = pingpong(&o, rank, contig, n, MPI_DOUBLE, it, res);
        if (rank == 0)
            bench_emit(&o, "dtype-contig", np, size, v, "us");
        v = pingpong(&o, rank, strided, 1, vec, it, res);
        if (rank == 0)
            bench_emit(&o, "dtype-vector", np, size, v, "us");
        v = pingpong(&o, rank, pairs, m, pairt, it, res);
        if (rank == 0) {
            bench_emit(&o, "dtype-struct", np, size, v, "us");
            bench_emit(&o, "dtype-structdt", np, size, v, "us");
        }

        MPI_Type_free(&vec);
        free(contig);
        free(strided);
        free(pairs);
    }
    MPI_Type_free(&pairt);
    free(res);
    MPI_Finalize();
    return 0;
}
