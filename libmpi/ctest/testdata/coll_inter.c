/* coll_inter.c (np 4): the rooted, v, all-to-all and reduce-scatter
 * collectives on an intercommunicator of world rank 0 (group A) and ranks
 * 1..3 (group B), as the C binding passes them: MPI_ROOT at the root with
 * only its significant arguments, MPI_PROC_NULL with none (NULL buffers,
 * MPI_DATATYPE_NULL), the remote group's counts; MPI_IN_PLACE is
 * MPI_ERR_BUFFER on an intercommunicator. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, i, j, bad = 0, inplace_ok = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int inA = rank == 0;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, inA ? 0 : 1, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, inA ? 1 : 0, 7, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int lr, ls, rs;
    MPI_Comm_rank(inter, &lr);
    MPI_Comm_size(inter, &ls);
    MPI_Comm_remote_size(inter, &rs);
    int lo = inA ? 1 : 0; /* world rank of remote rank 0 */

    /* Gather to B's local rank 2 (world 3): A sends, B's others idle. */
    int got[8];
    for (i = 0; i < 8; i++)
        got[i] = -1;
    int v = 100 + rank;
    if (inA)
        bad += MPI_Gather(&v, 1, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 2, inter) != MPI_SUCCESS;
    else if (lr == 2)
        bad += MPI_Gather(NULL, 0, MPI_DATATYPE_NULL, got, 1, MPI_INT, MPI_ROOT, inter) != MPI_SUCCESS || got[0] != 100 || got[1] != -1;
    else
        bad += MPI_Gather(NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, inter) != MPI_SUCCESS;

    /* Scatterv from A (its root) to B: remote rank j gets j+1 ints. */
    int sendv[6] = {10, 20, 21, 30, 31, 32}, counts[3] = {1, 2, 3}, displs[3] = {0, 1, 3};
    if (inA)
        bad += MPI_Scatterv(sendv, counts, displs, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, MPI_ROOT, inter) != MPI_SUCCESS;
    else {
        bad += MPI_Scatterv(NULL, NULL, NULL, MPI_DATATYPE_NULL, got, lr + 1, MPI_INT, 0, inter) != MPI_SUCCESS;
        for (i = 0; i <= lr; i++)
            bad += got[i] != 10 * (lr + 1) + i;
    }

    /* Reduce to A's root: the sum of B's world ranks. */
    int sum = -1;
    bad += MPI_Reduce(inA ? NULL : &rank, inA ? &sum : NULL, 1, MPI_INT, MPI_SUM, inA ? MPI_ROOT : 0, inter) != MPI_SUCCESS;
    bad += inA && sum != 6;

    /* Alltoallw: one int from world w to world v, w*10+v, received as a
     * double-spaced int array (byte displacements). */
    int sw[3], rw[6], sc[3], sd[3], rc[3], rd[3];
    MPI_Datatype st[3], rt[3];
    for (j = 0; j < rs; j++) {
        sw[j] = rank * 10 + lo + j;
        sc[j] = rc[j] = 1;
        sd[j] = j * (int)sizeof(int);
        rd[j] = 2 * j * (int)sizeof(int);
        st[j] = rt[j] = MPI_INT;
    }
    for (i = 0; i < 6; i++)
        rw[i] = -1;
    bad += MPI_Alltoallw(sw, sc, sd, st, rw, rc, rd, rt, inter) != MPI_SUCCESS;
    for (j = 0; j < rs; j++)
        bad += rw[2 * j] != (lo + j) * 10 + rank || rw[2 * j + 1] != -1;

    /* Reduce_scatter_block: A (1 process) scatters nothing of its own:
     * each group gets the other's sum, 3 ints in all. */
    int rsb_send[3], rsb_recv[3] = {-1, -1, -1};
    int each = 3 / ls;
    for (i = 0; i < 3; i++)
        rsb_send[i] = rank + i;
    bad += MPI_Reduce_scatter_block(rsb_send, rsb_recv, each, MPI_INT, MPI_SUM, inter) != MPI_SUCCESS;
    for (i = 0; i < each; i++) {
        int e = lr * each + i, want = 0;
        for (j = 0; j < rs; j++)
            want += lo + j + e;
        bad += rsb_recv[i] != want;
    }

    /* MPI_IN_PLACE on an intercommunicator: MPI_ERR_BUFFER, at once. */
    int cls = 0, a2a[3] = {0, 0, 0};
    int err = MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a2a, 1, MPI_INT, inter);
    MPI_Error_class(err, &cls);
    inplace_ok = cls == MPI_ERR_BUFFER;

    int all[2] = {0, 0}, mine[2] = {bad, !inplace_ok};
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: intercommunicator collectives wrong %d in-place not refused %d\n", all[0], all[1]);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
