/* intercomm_split.c (np 5): an intercommunicator from MPI_Intercomm_create
 * (world ranks {0,1,2} and {3,4}) split by MPI_Comm_split (colour rank % 2,
 * world rank 1 MPI_UNDEFINED, keys reversing the order: colour 0 is
 * {2,0} / {4}, colour 1 only on the second side, so MPI_COMM_NULL there)
 * with a message across the result; then MPI_Comm_create with the first
 * local rank of each side (a 1 x 1 intercommunicator between world ranks 0
 * and 3). Each rank prints one line. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 5) {
        if (rank == 0)
            printf("needs 5 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int inA = rank < 3;
    MPI_Comm local, ic;
    MPI_Comm_split(MPI_COMM_WORLD, !inA, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, inA ? 3 : 0, 12, &ic);

    char split[128] = "null";
    MPI_Comm sc;
    int colour = rank == 1 ? MPI_UNDEFINED : rank % 2;
    int rc = MPI_Comm_split(ic, colour, -rank, &sc);
    if (rc != MPI_SUCCESS) {
        snprintf(split, sizeof split, "error %d", rc);
    } else if (sc != MPI_COMM_NULL) {
        int inter, r, n, rn, got = -1;
        MPI_Comm_test_inter(sc, &inter);
        MPI_Comm_rank(sc, &r);
        MPI_Comm_size(sc, &n);
        MPI_Comm_remote_size(sc, &rn);
        if (r == 0)
            for (int i = 0; i < rn; i++)
                MPI_Send(&rank, 1, MPI_INT, i, 3, sc);
        MPI_Recv(&got, 1, MPI_INT, 0, 3, sc, MPI_STATUS_IGNORE);
        MPI_Barrier(sc);
        snprintf(split, sizeof split, "inter %d %d/%d remote %d got %d", inter, r, n, rn, got);
        MPI_Comm_free(&sc);
    }

    char create[128] = "null";
    MPI_Group lg, first;
    int zero = 0;
    MPI_Comm_group(ic, &lg);
    MPI_Group_incl(lg, 1, &zero, &first);
    MPI_Comm cc;
    rc = MPI_Comm_create(ic, first, &cc);
    if (rc != MPI_SUCCESS) {
        snprintf(create, sizeof create, "error %d", rc);
    } else if (cc != MPI_COMM_NULL) {
        int n, rn, got = -1;
        MPI_Comm_size(cc, &n);
        MPI_Comm_remote_size(cc, &rn);
        MPI_Sendrecv(&rank, 1, MPI_INT, 0, 4, &got, 1, MPI_INT, 0, 4, cc, MPI_STATUS_IGNORE);
        snprintf(create, sizeof create, "%d/%d got %d", n, rn, got);
        MPI_Comm_free(&cc);
    }
    MPI_Group_free(&first);
    MPI_Group_free(&lg);

    printf("result: rank %d split %s create %s\n", rank, split, create);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
