/* coll_userop.c: a non-commutative user operation (composition of integer
 * affine maps x -> a*x + b, on MPI_2INT) in Reduce, Allreduce, Scan,
 * Exscan, Reduce_scatter_block, Iallreduce and Reduce_local, checked
 * against the sequential rank-ordered composition; a commutative user
 * operation on a long vector; MPI_Op_commutative and MPI_Op_free. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { int a, b; } affine;

static int calls;

/* inout = in then inout: x -> inout.a * (in.a * x + in.b) + inout.b */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    affine *x = in, *y = inout;
    calls += *dt == MPI_2INT;
    for (int i = 0; i < *len; i++) {
        affine r = {x[i].a * y[i].a, y[i].a * x[i].b + y[i].b};
        y[i] = r;
    }
}

static void isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void isum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    (void)dt;
    for (MPI_Count i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static affine mapof(int r, int k) { affine f = {(r + k) % 3 + 1, r - 2 * k}; return f; }

static affine then(affine f, affine g) { affine r = {f.a * g.a, g.a * f.b + g.b}; return r; }

#define K 3

int main(int argc, char **argv)
{
    int rank, size, i, r, ok, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op, sum;
    MPI_Op_create(compose, 0, &op);
    MPI_Op_create(isum, 1, &sum);
    int commute = -1, c2 = -1, c3 = -1;
    MPI_Op_commutative(op, &commute);
    MPI_Op_commutative(sum, &c2);
    MPI_Op_commutative(MPI_SUM, &c3);

    affine mine[K], out[K], prefix[64][K];
    for (int k = 0; k < K; k++) {
        mine[k] = mapof(rank, k);
        prefix[0][k] = mapof(0, k);
        for (r = 1; r < size; r++)
            prefix[r][k] = then(prefix[r - 1][k], mapof(r, k));
    }
#define SAME(x, y) ((x).a == (y).a && (x).b == (y).b)

    MPI_Reduce(mine, out, K, MPI_2INT, op, size - 1, MPI_COMM_WORLD);
    ok = 1;
    if (rank == size - 1)
        for (int k = 0; k < K; k++)
            ok &= SAME(out[k], prefix[size - 1][k]);
    bad += !ok;
    if (!ok) printf("rank %d: Reduce wrong\n", rank);

    MPI_Allreduce(mine, out, K, MPI_2INT, op, MPI_COMM_WORLD);
    ok = 1;
    for (int k = 0; k < K; k++)
        ok &= SAME(out[k], prefix[size - 1][k]);
    bad += !ok;
    if (!ok) printf("rank %d: Allreduce wrong: (%d,%d) want (%d,%d)\n", rank, out[0].a, out[0].b, prefix[size - 1][0].a, prefix[size - 1][0].b);

    MPI_Scan(mine, out, K, MPI_2INT, op, MPI_COMM_WORLD);
    ok = 1;
    for (int k = 0; k < K; k++)
        ok &= SAME(out[k], prefix[rank][k]);
    bad += !ok;
    if (!ok) printf("rank %d: Scan wrong\n", rank);

    for (int k = 0; k < K; k++)
        out[k].a = 99, out[k].b = 99;
    MPI_Exscan(mine, out, K, MPI_2INT, op, MPI_COMM_WORLD);
    ok = 1;
    for (int k = 0; k < K; k++)
        ok &= rank == 0 ? out[k].a == 99 : SAME(out[k], prefix[rank - 1][k]);
    bad += !ok;
    if (!ok) printf("rank %d: Exscan wrong\n", rank);

    /* Reduce_scatter_block: block j of rank r is mapof(r, j). */
    affine *blocks = malloc(sizeof(affine) * size), one;
    for (int j = 0; j < size; j++)
        blocks[j] = mapof(rank, j);
    MPI_Reduce_scatter_block(blocks, &one, 1, MPI_2INT, op, MPI_COMM_WORLD);
    affine want = mapof(0, rank);
    for (r = 1; r < size; r++)
        want = then(want, mapof(r, rank));
    ok = SAME(one, want);
    bad += !ok;
    if (!ok) printf("rank %d: Reduce_scatter_block wrong\n", rank);
    free(blocks);

    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, mine, K, MPI_2INT, op, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ok = 1;
    for (int k = 0; k < K; k++)
        ok &= SAME(mine[k], prefix[size - 1][k]);
    bad += !ok;
    if (!ok) printf("rank %d: Iallreduce in place wrong\n", rank);

    affine f = mapof(1, 0), g = mapof(2, 1);
    MPI_Reduce_local(&f, &g, 1, MPI_2INT, op);
    ok = SAME(g, then(mapof(1, 0), mapof(2, 1)));
    bad += !ok;

    /* A commutative user operation over 100000 ints. */
    int n = 100000, *v = malloc(sizeof(int) * n), *w = malloc(sizeof(int) * n);
    for (i = 0; i < n; i++)
        v[i] = i % 1000 + rank;
    MPI_Allreduce(v, w, n, MPI_INT, sum, MPI_COMM_WORLD);
    ok = 1;
    for (i = 0; i < n; i++)
        ok &= w[i] == size * (i % 1000) + size * (size - 1) / 2;
    bad += !ok;
    if (!ok) printf("rank %d: commutative user op wrong\n", rank);
    free(v);
    free(w);

    /* MPI_Op_create_c: the length is an MPI_Count. */
    MPI_Op sumc;
    int xs[2] = {rank + 1, 1}, ys[2] = {0, 0};
    MPI_Op_create_c(isum_c, 1, &sumc);
    MPI_Allreduce(xs, ys, 2, MPI_INT, sumc, MPI_COMM_WORLD);
    bad += ys[0] != size * (size + 1) / 2 || ys[1] != size;
    MPI_Op_free(&sumc);

    MPI_Op_free(&op);
    MPI_Op_free(&sum);
    int all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    int called = calls > 0, anycalled = 0;
    MPI_Reduce(&called, &anycalled, 1, MPI_INT, MPI_LOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: wrong %d commutative %d %d %d called-with-MPI_2INT %d freed %d\n", all, commute, c2, c3,
               anycalled, op == MPI_OP_NULL && sum == MPI_OP_NULL);
    MPI_Finalize();
    return 0;
}
