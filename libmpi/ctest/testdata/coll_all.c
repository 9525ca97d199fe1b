/* coll_all.c: every blocking collective checked exactly against the
 * sequential result, with MPI_IN_PLACE where the standard allows it, the
 * predefined operations and MINLOC/MAXLOC on the pair types. Prints "result: <name> ok" per check. */
#include <complex.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;

static void report(const char *name, int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: %s %s\n", name, all ? "ok" : "FAILED");
    if (!all)
        failures++;
}

#define N 3 /* elements per rank block */

static int val(int r, int i) { return 100 * r + i; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int p = size, ok, i, r;
    int *all = malloc(sizeof(int) * N * p * p), *mine = malloc(sizeof(int) * N * p);
    int counts[64], displs[64], rcounts[64], rdispls[64];

    MPI_Barrier(MPI_COMM_WORLD);
    report("MPI_Barrier", 1);

    /* Bcast from root 2 % p. */
    int b[5];
    for (i = 0; i < 5; i++)
        b[i] = rank == 2 % p ? 7 * i + 1 : -1;
    MPI_Bcast(b, 5, MPI_INT, 2 % p, MPI_COMM_WORLD);
    ok = 1;
    for (i = 0; i < 5; i++)
        ok &= b[i] == 7 * i + 1;
    report("MPI_Bcast", ok);

    /* Reduce SUM to root 1, then in place. */
    int s[N], t[N];
    for (i = 0; i < N; i++)
        s[i] = val(rank, i), t[i] = -1;
    MPI_Reduce(s, t, N, MPI_INT, MPI_SUM, 1 % p, MPI_COMM_WORLD);
    ok = 1;
    if (rank == 1 % p)
        for (i = 0; i < N; i++)
            ok &= t[i] == 100 * p * (p - 1) / 2 + p * i;
    report("MPI_Reduce", ok);
    if (rank == 0)
        MPI_Reduce(MPI_IN_PLACE, s, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    else
        MPI_Reduce(s, NULL, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    ok = 1;
    if (rank == 0)
        for (i = 0; i < N; i++)
            ok &= s[i] == 100 * p * (p - 1) / 2 + p * i;
    report("MPI_Reduce in place", ok);

    /* Allreduce MAX on doubles, in place PROD on longs. */
    double d = rank * 1.5, dm = 0;
    MPI_Allreduce(&d, &dm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    report("MPI_Allreduce", dm == (p - 1) * 1.5);
    long l[2] = {rank + 1, 2};
    MPI_Allreduce(MPI_IN_PLACE, l, 2, MPI_LONG, MPI_PROD, MPI_COMM_WORLD);
    long fact = 1;
    for (i = 1; i <= p; i++)
        fact *= i;
    report("MPI_Allreduce in place", l[0] == fact && l[1] == (1L << p));

    /* Logical and bitwise operations, MIN on unsigned. */
    int bits = 1 << rank, lg = rank == 1, res[6];
    MPI_Allreduce(&bits, &res[0], 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    MPI_Allreduce(&bits, &res[1], 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD);
    MPI_Allreduce(&bits, &res[2], 1, MPI_INT, MPI_BXOR, MPI_COMM_WORLD);
    MPI_Allreduce(&lg, &res[3], 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Allreduce(&lg, &res[4], 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(&lg, &res[5], 1, MPI_INT, MPI_LXOR, MPI_COMM_WORLD);
    unsigned u = 10u + (unsigned)rank, umin = 0;
    MPI_Allreduce(&u, &umin, 1, MPI_UNSIGNED, MPI_MIN, MPI_COMM_WORLD);
    report("bitwise and logical operations", res[0] == (1 << p) - 1 && res[1] == 0 && res[2] == (1 << p) - 1 &&
                                                 res[3] == 1 && res[4] == 0 && res[5] == 1 && umin == 10u);

    /* MINLOC / MAXLOC on MPI_DOUBLE_INT and MPI_2INT. */
    struct { double v; int l; } di = {rank == p - 1 ? -5.0 : (double)(rank % 2), rank}, dio;
    MPI_Allreduce(&di, &dio, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
    ok = dio.v == -5.0 && dio.l == p - 1;
    MPI_Allreduce(&di, &dio, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    ok &= dio.v == 1.0 && dio.l == 1;
    struct { int v, l; } ii[2] = {{rank % 2, rank}, {-rank, 10 * rank}}, iio[2];
    MPI_Allreduce(ii, iio, 2, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    ok &= iio[0].v == 0 && iio[0].l == 0 && iio[1].v == -(p - 1) && iio[1].l == 10 * (p - 1);
    struct { float v; int l; } fi = {2.5f, rank}, fio;
    MPI_Allreduce(&fi, &fio, 1, MPI_FLOAT_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    ok &= fio.v == 2.5f && fio.l == 0;
    report("MPI_MINLOC/MPI_MAXLOC", ok);

    /* long double: SUM, MAX; long double complex: PROD; MAXLOC on MPI_LONG_DOUBLE_INT. */
    {
        long double ld[2] = {rank + 0.25L, -(long double)rank}, lds[2];
        MPI_Allreduce(ld, lds, 2, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        ok = lds[0] == p * (p - 1) / 2 + p * 0.25L && lds[1] == -(long double)(p * (p - 1) / 2);
        MPI_Allreduce(ld, lds, 2, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ok &= lds[0] == p - 1 + 0.25L && lds[1] == 0;
        MPI_Allreduce(ld, lds, 2, MPI_LONG_DOUBLE, MPI_LXOR, MPI_COMM_WORLD);
        ok &= lds[0] == (long double)(p % 2) && lds[1] == (long double)((p - 1) % 2);
        long double _Complex z = rank == 0 ? 2.0L : 1.0L * I, zp;
        MPI_Allreduce(&z, &zp, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
        long double _Complex want = 2.0L;
        for (r = 1; r < p; r++)
            want *= 1.0L * I;
        ok &= zp == want;
        struct { long double v; int l; } li = {rank % 2 ? 5.0L : 1.0L, rank}, lo;
        MPI_Allreduce(&li, &lo, 1, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
        ok &= lo.v == 5.0L && lo.l == 1;
        report("long double reductions", ok);
    }

    /* Gather to root p-1, then in place at root 0. */
    for (i = 0; i < N; i++)
        s[i] = val(rank, i);
    memset(all, 0xff, sizeof(int) * N * p);
    MPI_Gather(s, N, MPI_INT, all, N, MPI_INT, p - 1, MPI_COMM_WORLD);
    ok = 1;
    if (rank == p - 1)
        for (r = 0; r < p; r++)
            for (i = 0; i < N; i++)
                ok &= all[r * N + i] == val(r, i);
    report("MPI_Gather", ok);
    memset(all, 0xff, sizeof(int) * N * p);
    if (rank == 0) {
        for (i = 0; i < N; i++)
            all[i] = val(0, i);
        MPI_Gather(MPI_IN_PLACE, N, MPI_INT, all, N, MPI_INT, 0, MPI_COMM_WORLD);
    } else
        MPI_Gather(s, N, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
    ok = 1;
    if (rank == 0)
        for (r = 0; r < p; r++)
            for (i = 0; i < N; i++)
                ok &= all[r * N + i] == val(r, i);
    report("MPI_Gather in place", ok);

    /* Gatherv: rank r sends r+1 elements, blocks in reverse order. */
    int tot = p * (p + 1) / 2, off = tot;
    for (r = 0; r < p; r++) {
        counts[r] = r + 1;
        off -= r + 1;
        displs[r] = off;
    }
    for (i = 0; i < rank + 1; i++)
        mine[i] = val(rank, i);
    memset(all, 0xff, sizeof(int) * tot);
    MPI_Gatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    ok = 1;
    if (rank == 0)
        for (r = 0; r < p; r++)
            for (i = 0; i < r + 1; i++)
                ok &= all[displs[r] + i] == val(r, i);
    report("MPI_Gatherv", ok);
    if (rank == 1) {
        memset(all, 0xff, sizeof(int) * tot);
        for (i = 0; i < 2; i++)
            all[displs[1] + i] = val(1, i);
        MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_INT, 1, MPI_COMM_WORLD);
    } else
        MPI_Gatherv(mine, rank + 1, MPI_INT, NULL, NULL, NULL, MPI_DATATYPE_NULL, 1, MPI_COMM_WORLD);
    ok = 1;
    if (rank == 1)
        for (r = 0; r < p; r++)
            for (i = 0; i < r + 1; i++)
                ok &= all[displs[r] + i] == val(r, i);
    report("MPI_Gatherv in place", ok);

    /* Scatter from root 1, in place at root 0; Scatterv back. */
    if (rank == 1 % p)
        for (r = 0; r < p; r++)
            for (i = 0; i < N; i++)
                all[r * N + i] = val(r, i);
    MPI_Scatter(all, N, MPI_INT, t, N, MPI_INT, 1 % p, MPI_COMM_WORLD);
    ok = 1;
    for (i = 0; i < N; i++)
        ok &= t[i] == val(rank, i);
    report("MPI_Scatter", ok);
    if (rank == 0) {
        for (r = 0; r < p; r++)
            for (i = 0; i < N; i++)
                all[r * N + i] = val(r, i) + 1;
        MPI_Scatter(all, N, MPI_INT, MPI_IN_PLACE, N, MPI_INT, 0, MPI_COMM_WORLD);
        ok = all[0] == 1;
    } else {
        MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, t, N, MPI_INT, 0, MPI_COMM_WORLD);
        ok = t[0] == val(rank, 0) + 1 && t[N - 1] == val(rank, N - 1) + 1;
    }
    report("MPI_Scatter in place", ok);
    if (rank == 0)
        for (r = 0; r < p; r++)
            for (i = 0; i < r + 1; i++)
                all[displs[r] + i] = val(r, i) * 2;
    memset(mine, 0, sizeof(int) * N * p);
    MPI_Scatterv(all, counts, displs, MPI_INT, mine, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
    ok = 1;
    for (i = 0; i < rank + 1; i++)
        ok &= mine[i] == val(rank, i) * 2;
    report("MPI_Scatterv", ok);

    /* Allgather, in place; Allgatherv, in place. */
    for (i = 0; i < N; i++)
        s[i] = val(rank, i);
    memset(all, 0xff, sizeof(int) * N * p);
    MPI_Allgather(s, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD);
    ok = 1;
    for (r = 0; r < p; r++)
        for (i = 0; i < N; i++)
            ok &= all[r * N + i] == val(r, i);
    report("MPI_Allgather", ok);
    memset(all, 0xff, sizeof(int) * N * p);
    for (i = 0; i < N; i++)
        all[rank * N + i] = val(rank, i) + 3;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, N, MPI_INT, MPI_COMM_WORLD);
    ok = 1;
    for (r = 0; r < p; r++)
        for (i = 0; i < N; i++)
            ok &= all[r * N + i] == val(r, i) + 3;
    report("MPI_Allgather in place", ok);
    for (i = 0; i < rank + 1; i++)
        mine[i] = val(rank, i);
    memset(all, 0xff, sizeof(int) * tot);
    MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    ok = 1;
    for (r = 0; r < p; r++)
        for (i = 0; i < r + 1; i++)
            ok &= all[displs[r] + i] == val(r, i);
    report("MPI_Allgatherv", ok);
    memset(all, 0xff, sizeof(int) * tot);
    for (i = 0; i < rank + 1; i++)
        all[displs[rank] + i] = -val(rank, i);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    ok = 1;
    for (r = 0; r < p; r++)
        for (i = 0; i < r + 1; i++)
            ok &= all[displs[r] + i] == -val(r, i);
    report("MPI_Allgatherv in place", ok);

    /* Alltoall: block j of rank r is 1000r + 10j + i; in place. */
    for (r = 0; r < p; r++)
        for (i = 0; i < N; i++)
            mine[r * N + i] = 1000 * rank + 10 * r + i;
    MPI_Alltoall(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD);
    ok = 1;
    for (r = 0; r < p; r++)
        for (i = 0; i < N; i++)
            ok &= all[r * N + i] == 1000 * r + 10 * rank + i;
    report("MPI_Alltoall", ok);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, mine, N, MPI_INT, MPI_COMM_WORLD);
    ok = 1;
    for (r = 0; r < p; r++)
        for (i = 0; i < N; i++)
            ok &= mine[r * N + i] == 1000 * r + 10 * rank + i;
    report("MPI_Alltoall in place", ok);

    /* Alltoallv: rank r sends j+1 elements to rank j; receives r+1 from each. */
    off = 0;
    for (r = 0; r < p; r++) {
        counts[r] = r + 1;
        displs[r] = off;
        off += r + 1;
        rcounts[r] = rank + 1;
        rdispls[r] = (p - 1 - r) * (rank + 1); /* reversed */
        for (i = 0; i < r + 1; i++)
            mine[displs[r] + i] = 1000 * rank + 10 * r + i;
    }
    MPI_Alltoallv(mine, counts, displs, MPI_INT, all, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    ok = 1;
    for (r = 0; r < p; r++)
        for (i = 0; i < rank + 1; i++)
            ok &= all[rdispls[r] + i] == 1000 * r + 10 * rank + i;
    report("MPI_Alltoallv", ok);

    /* Alltoallw: to rank j one int and one double (a struct-free mix:
     * ints to even ranks, doubles to odd ones), byte displacements. */
    {
        double dsend[64], drecv[64];
        int isend[64], irecv[64];
        MPI_Datatype st[64], rt[64];
        int sc[64], sd[64], rc[64], rd[64];
        for (r = 0; r < p; r++) {
            sc[r] = 1;
            rc[r] = 1;
            if (r % 2 == 0) {
                isend[r] = 10 * rank + r;
                st[r] = MPI_INT;
                sd[r] = (int)sizeof(int) * r;
            } else {
                dsend[r] = 10 * rank + r + 0.5;
                st[r] = MPI_DOUBLE;
                sd[r] = (int)((char *)&dsend[r] - (char *)isend);
            }
            rt[r] = rank % 2 == 0 ? MPI_INT : MPI_DOUBLE;
            rd[r] = rank % 2 == 0 ? (int)sizeof(int) * r : (int)sizeof(double) * r;
        }
        MPI_Alltoallw(isend, sc, sd, st, rank % 2 == 0 ? (void *)irecv : (void *)drecv, rc, rd, rt, MPI_COMM_WORLD);
        ok = 1;
        for (r = 0; r < p; r++)
            ok &= rank % 2 == 0 ? irecv[r] == 10 * r + rank : drecv[r] == 10 * r + rank + 0.5;
        report("MPI_Alltoallw", ok);
    }

    /* Reduce_scatter (counts r+1), in place; Reduce_scatter_block. */
    for (i = 0; i < tot; i++)
        mine[i] = i * (rank + 1);
    off = 0;
    for (r = 0; r < p; r++)
        counts[r] = r + 1;
    for (r = 0; r < rank; r++)
        off += r + 1;
    MPI_Reduce_scatter(mine, t, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ok = 1;
    for (i = 0; i < rank + 1 && i < N; i++)
        ok &= t[i] == (off + i) * p * (p + 1) / 2;
    report("MPI_Reduce_scatter", ok);
    MPI_Reduce_scatter(MPI_IN_PLACE, mine, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ok = 1;
    for (i = 0; i < rank + 1; i++)
        ok &= mine[i] == (off + i) * p * (p + 1) / 2;
    report("MPI_Reduce_scatter in place", ok);
    for (i = 0; i < N * p; i++)
        mine[i] = i + rank;
    MPI_Reduce_scatter_block(mine, t, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ok = 1;
    for (i = 0; i < N; i++)
        ok &= t[i] == p * (rank * N + i) + p * (p - 1) / 2;
    report("MPI_Reduce_scatter_block", ok);

    /* Scan, Exscan (in place). */
    int x = rank + 1, y = -7;
    MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    report("MPI_Scan", y == (rank + 1) * (rank + 2) / 2);
    y = -7;
    MPI_Exscan(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    report("MPI_Exscan", rank == 0 ? y == -7 : y == rank * (rank + 1) / 2);
    y = rank + 1;
    MPI_Exscan(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_PROD, MPI_COMM_WORLD);
    fact = 1;
    for (i = 1; i <= rank; i++)
        fact *= i;
    report("MPI_Exscan in place", rank == 0 ? y == 1 : y == fact);

    /* Reduce_local. */
    int in[3] = {1, 2, 3}, io[3] = {10, 20, 30};
    MPI_Reduce_local(in, io, 3, MPI_INT, MPI_SUM);
    report("MPI_Reduce_local", io[0] == 11 && io[1] == 22 && io[2] == 33);

    if (rank == 0)
        printf("result: failures %d\n", failures);
    free(all);
    free(mine);
    MPI_Finalize();
    return 0;
}
