/* coll_dtype.c: derived datatypes in collectives (a matrix column in
 * Bcast, Gather into the columns of a matrix, an in-place Allreduce over
 * columns) and a non-commutative user operation (2x2 matrix product) on a
 * contiguous and on a strided datatype, whose function must see the
 * datatype's layout, checked against the sequential product. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int strided_calls, layout_ok = 1;

/* Matrices of 4 ints; stride 1 (contiguous type) or 2 (vector type). */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt, int stride)
{
    int *a = in, *b = inout;
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*dt, &lb, &ext);
    int step = (int)(ext / (MPI_Aint)sizeof(int));
    for (int e = 0; e < *len; e++, a += step, b += step) {
        int m[4] = {a[0] * b[0] + a[stride] * b[2 * stride], a[0] * b[stride] + a[stride] * b[3 * stride],
                    a[2 * stride] * b[0] + a[3 * stride] * b[2 * stride],
                    a[2 * stride] * b[stride] + a[3 * stride] * b[3 * stride]};
        for (int k = 0; k < 4; k++)
            b[k * stride] = m[k];
    }
}

static void matmul1(void *in, void *inout, int *len, MPI_Datatype *dt) { matmul(in, inout, len, dt, 1); }

static void matmul2(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    strided_calls++;
    /* The gaps of the layout hold no data: the library passes zeros. */
    int *a = in;
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*dt, &lb, &ext);
    int step = (int)(ext / (MPI_Aint)sizeof(int));
    for (int e = 0; e < *len; e++)
        for (int k = 0; k < 4; k++)
            layout_ok &= a[e * step + 2 * k + 1] == 0;
    matmul(in, inout, len, dt, 2);
}

static void mat(int r, int k, int m[4])
{
    m[0] = 1;
    m[1] = r + k;
    m[2] = k % 2;
    m[3] = 1 + r % 2;
}

static void mul(const int a[4], const int b[4], int out[4])
{
    int m[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    memcpy(out, m, sizeof m);
}

#define K 2

int main(int argc, char **argv)
{
    int rank, size, i, r, k, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int p = size;

    /* Column 1 of a 4x3 matrix at the root into column 2 elsewhere. */
    int m[4][3], col[4];
    MPI_Datatype column, colp, colr;
    MPI_Type_vector(4, 1, 3, MPI_INT, &column);
    MPI_Type_commit(&column);
    memset(m, 0, sizeof m);
    if (rank == 0)
        for (i = 0; i < 4; i++)
            m[i][1] = i + 1;
    MPI_Bcast(rank == 0 ? &m[0][1] : &m[0][2], 1, column, 0, MPI_COMM_WORLD);
    for (i = 0; i < 4; i++)
        bad += m[i][rank == 0 ? 1 : 2] != i + 1 || m[i][0] != 0;
    if (bad)
        printf("rank %d: Bcast of a column wrong\n", rank);

    /* Gather each rank's 4 values as column r of a 4 x p matrix. */
    int *g = calloc(4 * (size_t)p, sizeof(int));
    MPI_Type_vector(4, 1, p, MPI_INT, &colp);
    MPI_Type_create_resized(colp, 0, sizeof(int), &colr);
    MPI_Type_commit(&colr);
    for (i = 0; i < 4; i++)
        col[i] = 10 * rank + i;
    MPI_Gather(col, 4, MPI_INT, g, 1, colr, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (i = 0; i < 4; i++)
            for (r = 0; r < p; r++)
                bad += g[i * p + r] != 10 * r + i;
    /* Allgather of columns, then an in-place Allreduce SUM over the columns. */
    MPI_Allgather(col, 4, MPI_INT, g, 1, colr, MPI_COMM_WORLD);
    for (i = 0; i < 4; i++)
        for (r = 0; r < p; r++)
            bad += g[i * p + r] != 10 * r + i;
    MPI_Allreduce(MPI_IN_PLACE, g, p, colr, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < 4; i++)
        for (r = 0; r < p; r++)
            bad += g[i * p + r] != p * (10 * r + i);
    if (bad)
        printf("rank %d: column gathers wrong\n", rank);
    free(g);

    /* The matrix product, rank order, on a contiguous type. */
    MPI_Datatype m4, m4s, m4v;
    MPI_Op op1, op2;
    MPI_Type_contiguous(4, MPI_INT, &m4);
    MPI_Type_commit(&m4);
    MPI_Op_create(matmul1, 0, &op1);
    int mine[K][4], out[K][4], pre[64][K][4];
    for (k = 0; k < K; k++) {
        mat(rank, k, mine[k]);
        mat(0, k, pre[0][k]);
        for (r = 1; r < p; r++) {
            int x[4];
            mat(r, k, x);
            mul(pre[r - 1][k], x, pre[r][k]);
        }
    }
    MPI_Allreduce(mine, out, K, m4, op1, MPI_COMM_WORLD);
    for (k = 0; k < K; k++)
        bad += memcmp(out[k], pre[p - 1][k], sizeof out[k]) != 0;
    memset(out, 0, sizeof out);
    MPI_Reduce(mine, out, K, m4, op1, 1, MPI_COMM_WORLD);
    if (rank == 1)
        for (k = 0; k < K; k++)
            bad += memcmp(out[k], pre[p - 1][k], sizeof out[k]) != 0;
    MPI_Scan(mine, out, K, m4, op1, MPI_COMM_WORLD);
    for (k = 0; k < K; k++)
        bad += memcmp(out[k], pre[rank][k], sizeof out[k]) != 0;
    if (bad)
        printf("rank %d: matrix product on a contiguous type wrong\n", rank);

    /* The same on a strided type: the 4 ints every other int, extent 8 ints. */
    int sin[K][8], sout[K][8];
    MPI_Type_vector(4, 1, 2, MPI_INT, &m4s);
    MPI_Type_create_resized(m4s, 0, 8 * sizeof(int), &m4v);
    MPI_Type_commit(&m4v);
    MPI_Op_create(matmul2, 0, &op2);
    for (k = 0; k < K; k++)
        for (i = 0; i < 4; i++)
            sin[k][2 * i] = mine[k][i], sin[k][2 * i + 1] = -1, sout[k][2 * i] = 0, sout[k][2 * i + 1] = -2;
    MPI_Allreduce(sin, sout, K, m4v, op2, MPI_COMM_WORLD);
    for (k = 0; k < K; k++)
        for (i = 0; i < 4; i++)
            bad += sout[k][2 * i] != pre[p - 1][k][i] || sout[k][2 * i + 1] != -2;
    {
        /* Overlapping: an Iscan and an Iexscan with the user operation. */
        int sc2[K][8];
        MPI_Request rq[2];
        for (k = 0; k < K; k++)
            for (i = 0; i < 8; i++)
                sc2[k][i] = -3, sout[k][i] = -2;
        MPI_Iscan(sin, sc2, K, m4v, op2, MPI_COMM_WORLD, &rq[0]);
        MPI_Iexscan(sin, sout, K, m4v, op2, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        for (k = 0; k < K; k++)
            for (i = 0; i < 4; i++) {
                bad += sc2[k][2 * i] != pre[rank][k][i] || sc2[k][2 * i + 1] != -3;
                if (rank > 0)
                    bad += sout[k][2 * i] != pre[rank - 1][k][i] || sout[k][2 * i + 1] != -2;
                else
                    bad += sout[k][2 * i] != -2;
            }
    }
    if (bad)
        printf("rank %d: matrix product on a strided type wrong\n", rank);
    int called = strided_calls > 0 || rank == 0;
    bad += !layout_ok;

    int all = 0, anycall = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&called, &anycall, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: derived wrong %d user function called %d\n", all, anycall);
    MPI_Op_free(&op1);
    MPI_Op_free(&op2);
    MPI_Type_free(&column);
    MPI_Type_free(&colp);
    MPI_Type_free(&colr);
    MPI_Type_free(&m4);
    MPI_Type_free(&m4s);
    MPI_Type_free(&m4v);
    MPI_Finalize();
    return 0;
}
