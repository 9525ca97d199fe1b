/* dpm_basic.c: dynamic processes from C at np 4. The job spawns two
 * children of this program (argv[1] is its path) from the communicator of
 * ranks 0 and 1; each child finds
 * its parent with MPI_Comm_get_parent and answers the parent's question;
 * then ranks 0-1 and 2-3 meet through a port published under a service
 * name (accept/connect) and exchange their ranks; every intercommunicator
 * is disconnected. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int child(MPI_Comm parent)
{
    int rank, rsize, q = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_remote_size(parent, &rsize);
    MPI_Recv(&q, 1, MPI_INT, 0, 1, parent, MPI_STATUS_IGNORE);
    int a = q * 10 + rank;
    MPI_Send(&a, 1, MPI_INT, 0, 2, parent);
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size, i;
    MPI_Comm parent;
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL)
        return child(parent);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || size != 4) {
        printf("usage: ftmpirun -n 4 dpm_basic /path/to/dpm_basic\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);

    if (rank < 2) {
        /* Spawn two children from ranks 0 and 1. */
        MPI_Comm kids;
        int errs[2] = {-1, -1}, rsize = -1;
        char *args[] = {"child", NULL};
        MPI_Comm_spawn(argv[1], args, 2, MPI_INFO_NULL, 0, half, &kids, errs);
        MPI_Comm_remote_size(kids, &rsize);
        if (rank == 0) {
            int q = 7, ans[2] = {-1, -1};
            for (i = 0; i < 2; i++)
                MPI_Send(&q, 1, MPI_INT, i, 1, kids);
            for (i = 0; i < 2; i++)
                MPI_Recv(&ans[i], 1, MPI_INT, i, 2, kids, MPI_STATUS_IGNORE);
            printf("result: spawned %d errcodes %d %d answers %d %d\n", rsize, errs[0], errs[1], ans[0], ans[1]);
        }
        MPI_Comm_disconnect(&kids);
        printf("rank %d: kids disconnected %d\n", rank, kids == MPI_COMM_NULL);
    }

    /* Ports and names: ranks 0-1 accept, ranks 2-3 connect. */
    char port[MPI_MAX_PORT_NAME] = "", found[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter;
    int token = 0, peer = -1, rsize = -1;
    if (rank < 2) {
        if (rank == 0) {
            MPI_Open_port(MPI_INFO_NULL, port);
            MPI_Publish_name("ftmpi-dpm-test", MPI_INFO_NULL, port);
            MPI_Send(&token, 1, MPI_INT, 2, 9, MPI_COMM_WORLD);
        }
        MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter);
    } else {
        if (rank == 2) {
            MPI_Recv(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Lookup_name("ftmpi-dpm-test", MPI_INFO_NULL, found);
        }
        MPI_Comm_connect(found, MPI_INFO_NULL, 0, half, &inter);
    }
    MPI_Comm_remote_size(inter, &rsize);
    int hr;
    MPI_Comm_rank(half, &hr);
    MPI_Sendrecv(&rank, 1, MPI_INT, hr, 3, &peer, 1, MPI_INT, hr, 3, inter, MPI_STATUS_IGNORE);
    printf("rank %d: connected remote %d peer %d\n", rank, rsize, peer);
    MPI_Comm_disconnect(&inter);
    if (rank == 0) {
        MPI_Unpublish_name("ftmpi-dpm-test", MPI_INFO_NULL, port);
        MPI_Close_port(port);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int cls = -1, rc = MPI_Lookup_name("ftmpi-dpm-test", MPI_INFO_NULL, found);
        MPI_Error_class(rc, &cls);
        printf("result: unpublished class %d want %d\n", cls, MPI_ERR_NAME);
    }
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
