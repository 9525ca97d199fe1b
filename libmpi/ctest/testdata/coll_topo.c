/* coll_topo.c: neighbourhood collectives on a periodic ring (Cartesian
 * topology), and the intercommunicator collectives (Bcast with MPI_ROOT
 * and MPI_PROC_NULL, Allreduce, Allgather, Barrier, Ibcast) between the
 * even and the odd ranks. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, bad = 0, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int p = size;

    MPI_Comm ring;
    int dims[1] = {p}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int r, left, right;
    MPI_Comm_rank(ring, &r);
    MPI_Cart_shift(ring, 0, 1, &left, &right);

    int got[4] = {-1, -1, -1, -1}, send[4];
    int mine = 10 * r;
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, ring);
    bad += got[0] != 10 * left || got[1] != 10 * right;
    send[0] = 100 * r + 1; /* to the left */
    send[1] = 100 * r + 2; /* to the right */
    MPI_Neighbor_alltoall(send, 1, MPI_INT, got, 1, MPI_INT, ring);
    bad += got[0] != 100 * left + 2 || got[1] != 100 * right + 1;
    /* 1 element left, 2 right; 2 from the left (at 1), 1 from the right (at 0). */
    int sc[2] = {1, 2}, sd[2] = {0, 1}, rc[2] = {2, 1}, rd[2] = {1, 0};
    send[0] = r, send[1] = r + 10, send[2] = r + 20;
    MPI_Request req;
    MPI_Ineighbor_alltoallv(send, sc, sd, MPI_INT, got, rc, rd, MPI_INT, ring, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bad += got[0] != right || got[1] != left + 10 || got[2] != left + 20;
    /* Alltoallw: an int to the left, a double to the right. */
    struct { int i; double d; } out = {r, r + 0.5}, in = {-1, -1};
    int wc[2] = {1, 1};
    MPI_Aint wsd[2] = {0, (MPI_Aint)((char *)&out.d - (char *)&out)};
    MPI_Aint wrd[2] = {(MPI_Aint)((char *)&in.d - (char *)&in), 0};
    MPI_Datatype wst[2] = {MPI_INT, MPI_DOUBLE}, wrt[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Neighbor_alltoallw(&out, wc, wsd, wst, &in, wc, wrd, wrt, ring);
    bad += in.d != left + 0.5 || in.i != right;
    int topo_bad = bad;
    MPI_Comm_free(&ring);

    /* Intercommunicator between even (group 0) and odd (group 1) ranks. */
    MPI_Comm half, inter;
    int color = rank % 2, hr, hsize, rsize;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hsize);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 99, &inter);
    MPI_Comm_remote_size(inter, &rsize);
    /* Bcast from even rank 0 (group 0's local rank 0) to the odd ranks. */
    int v = -1;
    if (color == 0)
        v = hr == 0 ? 4242 : -1;
    MPI_Bcast(&v, 1, MPI_INT, color == 0 ? (hr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter);
    bad += color == 1 && v != 4242;
    bad += color == 0 && hr != 0 && v != -1;
    /* Allreduce: each group gets the sum over the other group. */
    int x = rank + 1, s = 0, want = 0;
    MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, inter);
    for (i = 0; i < p; i++)
        if (i % 2 != color)
            want += i + 1;
    bad += s != want;
    /* Allgather: the other group's ranks in order. */
    int g[64];
    MPI_Allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, inter);
    for (i = 0; i < rsize; i++)
        bad += g[i] != 2 * i + (1 - color);
    MPI_Barrier(inter);
    v = color == 1 && hr == 0 ? 77 : -1;
    MPI_Ibcast(&v, 1, MPI_INT, color == 1 ? (hr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bad += color == 0 && v != 77;
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);

    int all[2] = {0, 0}, mineb[2] = {topo_bad, bad - topo_bad};
    MPI_Allreduce(mineb, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: neighbourhood wrong %d intercommunicator wrong %d\n", all[0], all[1]);
    MPI_Finalize();
    return 0;
}
