/* hello: MPI_Init, MPI_Barrier, MPI_Finalize. Used to time job start; prints nothing. */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
