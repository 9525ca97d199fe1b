/* coll_bigcount.c: the large-count (_c) collectives take MPI_Count counts
 * and MPI_Aint displacements. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, bad = 0, i, r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int p = size;
    long v[3] = {rank, 2 * rank, 3 * rank}, s[3];
    MPI_Allreduce_c(v, s, (MPI_Count)3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < 3; i++)
        bad += s[i] != (long)(i + 1) * p * (p - 1) / 2;
    int b = rank == 0 ? 5 : 0;
    MPI_Bcast_c(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
    bad += b != 5;
    /* Gatherv_c: rank r sends r+1 ints, reversed blocks. */
    MPI_Count *counts = malloc(sizeof(MPI_Count) * p);
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * p);
    int tot = p * (p + 1) / 2, off = tot, mine[64], *all = malloc(sizeof(int) * tot);
    for (r = 0; r < p; r++) {
        counts[r] = r + 1;
        off -= r + 1;
        displs[r] = off;
    }
    for (i = 0; i <= rank; i++)
        mine[i] = 10 * rank + i;
    MPI_Gatherv_c(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (r = 0; r < p; r++)
            for (i = 0; i <= r; i++)
                bad += all[displs[r] + i] != 10 * r + i;
    /* Ireduce_scatter_c with MPI_Count counts. */
    int *in = malloc(sizeof(int) * tot), got[64];
    for (i = 0; i < tot; i++)
        in[i] = i;
    MPI_Request req;
    MPI_Ireduce_scatter_c(in, got, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    off = rank * (rank + 1) / 2;
    for (i = 0; i <= rank; i++)
        bad += got[i] != p * (off + i);
    /* Alltoallw_c: one int to everyone. */
    MPI_Count *wc = malloc(sizeof(MPI_Count) * p);
    MPI_Aint *wd = malloc(sizeof(MPI_Aint) * p);
    MPI_Datatype *wt = malloc(sizeof(MPI_Datatype) * p);
    int *ws = malloc(sizeof(int) * p), *wr = malloc(sizeof(int) * p);
    for (r = 0; r < p; r++) {
        wc[r] = 1;
        wd[r] = (MPI_Aint)(sizeof(int) * r);
        wt[r] = MPI_INT;
        ws[r] = 100 * rank + r;
    }
    MPI_Alltoallw_c(ws, wc, wd, wt, wr, wc, wd, wt, MPI_COMM_WORLD);
    for (r = 0; r < p; r++)
        bad += wr[r] != 100 * r + rank;
    int x = 1, y = 0;
    MPI_Reduce_local_c(&x, &y, 1, MPI_INT, MPI_SUM);
    bad += y != 1;
    int all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: large-count wrong %d\n", all_bad);
    free(counts);
    free(displs);
    free(all);
    free(in);
    free(wc);
    free(wd);
    free(wt);
    free(ws);
    free(wr);
    MPI_Finalize();
    return 0;
}
