/* MPI_Intercomm_create over a spawn's intercommunicator (np 2): parent
 * rank 0 alone spawns two children over MPI_COMM_SELF; then both parents
 * and both children build an intercommunicator of the two worlds, and
 * parent rank 1, which did not take part in the spawn, exchanges a message
 * with each child over it. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Comm parent, inter = MPI_COMM_NULL, ic2;
    int rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        if (rank == 0)
            MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
                           MPI_ERRCODES_IGNORE);
    } else {
        inter = parent;
    }
    MPI_Intercomm_create(MPI_COMM_WORLD, 0, inter, 0, 123, &ic2);
    int rsize, got = 0;
    MPI_Comm_remote_size(ic2, &rsize);
    if (parent == MPI_COMM_NULL) {
        if (rank == 1) {
            for (int i = 0; i < rsize; i++) {
                int v = -1;
                MPI_Send(&i, 1, MPI_INT, i, 7, ic2);
                MPI_Recv(&v, 1, MPI_INT, i, 8, ic2, MPI_STATUS_IGNORE);
                got += v == 100 + i;
            }
            printf("result: parent 1 remote %d answers %d\n", rsize, got);
            fflush(stdout);
        }
    } else {
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, 1, 7, ic2, MPI_STATUS_IGNORE);
        v += 100;
        MPI_Send(&v, 1, MPI_INT, 1, 8, ic2);
    }
    MPI_Barrier(ic2);
    MPI_Comm_free(&ic2);
    if (inter != MPI_COMM_NULL)
        MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
}
