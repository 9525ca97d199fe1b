// cxx_hello.cc: mpi.h and mpi-ext.h from C++ (extern "C", the handle
// macros in C++ expressions), and a round trip of the handle conversions.
#include <mpi.h>
#include <cstdio>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm c = MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_WORLD));
    int v = rank, sum = -1;
    if (rank == 0) {
        sum = v;
        for (int r = 1; r < size; r++) {
            MPI_Recv(&v, 1, MPI_INT, r, 0, c, MPI_STATUS_IGNORE);
            sum += v;
        }
        int major = 0, minor = -1;
        MPI_Abi_get_version(&major, &minor);
        std::printf("result: c++ sum %d abi %d.%d world %#x int %#x\n", sum, major, minor,
                    MPI_Comm_toint(MPI_COMM_WORLD), MPI_Type_toint(MPI_INT));
    } else {
        MPI_Send(&v, 1, MPI_INT, 0, 0, c);
    }
    MPI_Finalize();
    return 0;
}
