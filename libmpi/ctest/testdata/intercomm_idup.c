/* intercomm_idup.c (np 4): MPI_Comm_idup on overlapping communicators
 * started in different orders at different ranks, as MPICH's
 * comm_idup_overlap does. Pair communicator i holds world ranks i and
 * i+1 mod n; each rank idups its left pair, then its right pair, with an
 * idup of MPI_COMM_WORLD first (even ranks) or last (odd ranks), and
 * completes the three with MPI_Waitall: done one after the other at the
 * call, the idups of the ring of pairs would wait for each other forever.
 * The copies are then used with nonblocking allreduces. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    /* The two pairs of this rank, created in increasing pair order (no
     * cycle among the blocking create_group calls). */
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int li = (rank + n - 1) % n, ri = rank;
    MPI_Comm pair[2]; /* [0]: left, [1]: right */
    for (int k = 0; k < 2; k++) {
        int lo = li < ri ? (k == 0 ? li : ri) : (k == 0 ? ri : li);
        int ranks[2] = {lo, (lo + 1) % n};
        MPI_Group g;
        MPI_Group_incl(world, 2, ranks, &g);
        MPI_Comm_create_group(MPI_COMM_WORLD, g, lo, &pair[lo == li ? 0 : 1]);
        MPI_Group_free(&g);
    }
    MPI_Group_free(&world);

    MPI_Comm dup[3]; /* left, right, world */
    MPI_Request req[3];
    int j = 0;
    if (rank % 2 == 0)
        MPI_Comm_idup(MPI_COMM_WORLD, &dup[2], &req[j++]);
    MPI_Comm_idup(pair[0], &dup[0], &req[j++]);
    MPI_Comm_idup(pair[1], &dup[1], &req[j++]);
    if (rank % 2 == 1)
        MPI_Comm_idup(MPI_COMM_WORLD, &dup[2], &req[j++]);
    MPI_Waitall(3, req, MPI_STATUSES_IGNORE);

    int sum[3] = {-1, -1, -1}, cmp[3], sz[3];
    for (int k = 0; k < 3; k++) {
        MPI_Comm_compare(dup[k], k < 2 ? pair[k] : MPI_COMM_WORLD, &cmp[k]);
        MPI_Comm_size(dup[k], &sz[k]);
        MPI_Iallreduce(&rank, &sum[k], 1, MPI_INT, MPI_SUM, dup[k], &req[k]);
    }
    MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    printf("result: rank %d left %d/%d right %d/%d world %d/%d congruent %d %d %d\n", rank, sum[0], sz[0], sum[1], sz[1],
           sum[2], sz[2], cmp[0] == MPI_CONGRUENT, cmp[1] == MPI_CONGRUENT, cmp[2] == MPI_CONGRUENT);
    for (int k = 0; k < 3; k++)
        MPI_Comm_free(&dup[k]);
    MPI_Comm_free(&pair[0]);
    MPI_Comm_free(&pair[1]);
    MPI_Finalize();
    return 0;
}
