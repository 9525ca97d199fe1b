/* coll_nb.c: nonblocking collectives outstanding together on one
 * communicator (completed in another order than started), and persistent
 * collectives started twice. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, i, r, bad = 0, mine[64];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int p = size;
    MPI_Request reqs[12];
    int bc[4] = {0, 0, 0, 0}, x = rank + 1, sum = 0, scan = 0, ex = -1;
    int *g = malloc(sizeof(int) * p), *a2a_s = malloc(sizeof(int) * p), *a2a_r = malloc(sizeof(int) * p);
    int *gv = malloc(sizeof(int) * p * p), *cnt = malloc(sizeof(int) * p), *dsp = malloc(sizeof(int) * p);
    int *rs = malloc(sizeof(int) * p), rsout = 0, sc = -1, *scv = malloc(sizeof(int) * p);
    double dmax = 0, d = rank;
    if (rank == 0)
        for (i = 0; i < 4; i++)
            bc[i] = 40 + i;
    for (r = 0; r < p; r++) {
        a2a_s[r] = 100 * rank + r;
        cnt[r] = r + 1;
        dsp[r] = r * p;
        rs[r] = r + rank;
        scv[r] = 7 * r;
    }
    MPI_Ibarrier(MPI_COMM_WORLD, &reqs[0]);
    MPI_Ibcast(bc, 4, MPI_INT, 0, MPI_COMM_WORLD, &reqs[1]);
    MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[2]);
    MPI_Igather(&x, 1, MPI_INT, g, 1, MPI_INT, p - 1, MPI_COMM_WORLD, &reqs[3]);
    MPI_Ialltoall(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, MPI_COMM_WORLD, &reqs[4]);
    MPI_Iscan(&x, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[5]);
    MPI_Iexscan(&x, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[6]);
    for (i = 0; i < rank + 1; i++)
        mine[i] = 10 * rank + i;
    MPI_Iallgatherv(mine, rank + 1, MPI_INT, gv, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &reqs[7]);
    MPI_Ireduce_scatter_block(rs, &rsout, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[8]);
    MPI_Iscatter(scv, 1, MPI_INT, &sc, 1, MPI_INT, 1 % p, MPI_COMM_WORLD, &reqs[9]);
    MPI_Ireduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, &reqs[10]);
    /* Complete the last ones first. */
    for (i = 10; i >= 6; i--)
        MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    MPI_Waitall(6, reqs, MPI_STATUSES_IGNORE);
    for (i = 0; i < 4; i++)
        bad += bc[i] != 40 + i;
    bad += sum != p * (p + 1) / 2;
    if (rank == p - 1)
        for (r = 0; r < p; r++)
            bad += g[r] != r + 1;
    for (r = 0; r < p; r++)
        bad += a2a_r[r] != 100 * r + rank;
    bad += scan != (rank + 1) * (rank + 2) / 2;
    bad += rank > 0 && ex != rank * (rank + 1) / 2;
    for (r = 0; r < p; r++)
        for (i = 0; i < r + 1; i++)
            bad += gv[r * p + i] != 10 * r + i;
    bad += rsout != p * rank + p * (p - 1) / 2;
    bad += sc != 7 * rank;
    bad += rank == 0 && dmax != p - 1;
    for (i = 0; i <= 10; i++)
        bad += reqs[i] != MPI_REQUEST_NULL;

    /* The v-variants and the rest, outstanding together, some in place. */
    {
        int tot = p * (p + 1) / 2, off = 0, k;
        int *c1 = malloc(sizeof(int) * p), *d1 = malloc(sizeof(int) * p), *gvr = malloc(sizeof(int) * tot);
        int *svs = malloc(sizeof(int) * tot), svr[64], *ag = malloc(sizeof(int) * p);
        int *a2s = malloc(sizeof(int) * tot), *a2r = malloc(sizeof(int) * p * p);
        int *c2 = malloc(sizeof(int) * p), *d2 = malloc(sizeof(int) * p), *rc = malloc(sizeof(int) * p), *rd = malloc(sizeof(int) * p);
        int *ws = malloc(sizeof(int) * p), *wr = malloc(sizeof(int) * p), *wc = malloc(sizeof(int) * p), *wd = malloc(sizeof(int) * p);
        int *rsin = malloc(sizeof(int) * tot), rsout[64], xs = rank, xin = -1;
        MPI_Datatype *wt = malloc(sizeof(MPI_Datatype) * p);
        MPI_Request rq[8];
        for (r = 0; r < p; r++) {
            c1[r] = r + 1;
            d1[r] = off;
            for (k = 0; k <= r; k++)
                svs[off + k] = 1000 + 10 * r + k, a2s[off + k] = 100 * rank + 10 * r + k, rsin[off + k] = off + k;
            off += r + 1;
            c2[r] = r + 1, d2[r] = d1[r], rc[r] = rank + 1, rd[r] = r * (rank + 1);
            wc[r] = 1, wd[r] = (int)sizeof(int) * r, wt[r] = MPI_INT, ws[r] = 10 * rank + r;
            ag[r] = r == rank ? 7 * rank : -1;
        }
        for (k = 0; k <= rank; k++)
            mine[k] = 10 * rank + k;
        MPI_Igatherv(mine, rank + 1, MPI_INT, gvr, c1, d1, MPI_INT, p - 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Iscatterv(svs, c1, d1, MPI_INT, svr, rank + 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[1]);
        MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 1, MPI_INT, MPI_COMM_WORLD, &rq[2]);
        MPI_Ialltoallv(a2s, c2, d2, MPI_INT, a2r, rc, rd, MPI_INT, MPI_COMM_WORLD, &rq[3]);
        MPI_Ialltoallw(ws, wc, wd, wt, wr, wc, wd, wt, MPI_COMM_WORLD, &rq[4]);
        MPI_Ireduce_scatter(rsin, rsout, c1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[5]);
        MPI_Iexscan(MPI_IN_PLACE, &xs, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[6]);
        MPI_Iscatter(NULL, 0, MPI_INT, &xin, 0, MPI_INT, 0, MPI_COMM_WORLD, &rq[7]);
        MPI_Waitall(8, rq, MPI_STATUSES_IGNORE);
        if (rank == p - 1)
            for (r = 0; r < p; r++)
                for (k = 0; k <= r; k++)
                    bad += gvr[d1[r] + k] != 10 * r + k;
        for (k = 0; k <= rank; k++)
            bad += svr[k] != 1000 + 10 * rank + k;
        for (r = 0; r < p; r++) {
            bad += ag[r] != 7 * r;
            for (k = 0; k <= rank; k++)
                bad += a2r[rd[r] + k] != 100 * r + 10 * rank + k;
            bad += wr[r] != 10 * r + rank;
        }
        for (k = 0; k <= rank; k++)
            bad += rsout[k] != p * (d1[rank] + k);
        bad += rank > 0 && xs != rank - 1;
        bad += xin != -1;
        free(c1), free(d1), free(gvr), free(svs), free(ag), free(a2s), free(a2r), free(c2), free(d2), free(rc), free(rd);
        free(ws), free(wr), free(wc), free(wd), free(rsin), free(wt);
    }

    /* Persistent: an Allreduce and a Bcast started twice with new data. */
    MPI_Request pr[2];
    int in = 0, out = 0, pb = 0;
    MPI_Allreduce_init(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[0]);
    MPI_Bcast_init(&pb, 1, MPI_INT, p - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[1]);
    for (int round = 1; round <= 2; round++) {
        in = round * (rank + 1);
        if (rank == p - 1)
            pb = 1000 * round;
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        bad += out != round * p * (p + 1) / 2;
        bad += pb != 1000 * round;
    }
    bad += pr[0] == MPI_REQUEST_NULL;
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);

    /* Persistent collectives match in Init order, whatever the Start order;
     * the data is read when they start. */
    {
        int a = -1, ag[64];
        MPI_Request q[3];
        MPI_Bcast_init(&a, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]);
        MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]);
        MPI_Allgather_init(&a, 1, MPI_INT, ag, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]);
        if (rank == 0) {
            a = 42;
            MPI_Start(&q[0]);
            MPI_Start(&q[1]);
        } else {
            MPI_Start(&q[1]);
            MPI_Start(&q[0]);
        }
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        bad += a != 42;
        a = rank;
        MPI_Start(&q[2]);
        MPI_Wait(&q[2], MPI_STATUS_IGNORE);
        for (r = 0; r < p; r++)
            bad += ag[r] != r;
        for (i = 0; i < 3; i++)
            MPI_Request_free(&q[i]);
    }

    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: nonblocking and persistent wrong %d\n", all);
    free(g);
    free(a2a_s);
    free(a2a_r);
    free(gv);
    free(cnt);
    free(dsp);
    free(rs);
    free(scv);
    MPI_Finalize();
    return 0;
}
