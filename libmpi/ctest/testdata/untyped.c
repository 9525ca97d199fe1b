/* untyped.c: MPI's type matching for C: MPI_PACKED matches any type, and
 * ftmpi, as other MPIs, does not check element types between a send and its
 * receive (the program's duty); lengths still are (MPI_ERR_TRUNCATE). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v[4] = {1, 2, 3, 4}, w[4] = {0, 0, 0, 0};
    char packed[64];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0) {
        int pos = 0;
        MPI_Pack(v, 4, MPI_INT, packed, (int)sizeof packed, &pos, MPI_COMM_WORLD);
        MPI_Send(packed, pos, MPI_PACKED, 1, 1, MPI_COMM_WORLD); /* packed -> ints */
        MPI_Send(v, 4, MPI_INT, 1, 2, MPI_COMM_WORLD);           /* ints -> packed */
        MPI_Send(v, 16, MPI_BYTE, 1, 3, MPI_COMM_WORLD);         /* bytes -> ints */
        MPI_Send(v, 4, MPI_INT, 1, 4, MPI_COMM_WORLD);           /* too long */
    } else if (rank == 1) {
        int ok = 1, pos = 0, rc;
        MPI_Status st;
        rc = MPI_Recv(w, 4, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
        ok = ok && rc == MPI_SUCCESS && w[3] == 4;
        rc = MPI_Recv(packed, (int)sizeof packed, MPI_PACKED, 0, 2, MPI_COMM_WORLD, &st);
        w[0] = w[1] = w[2] = w[3] = 0;
        MPI_Unpack(packed, (int)sizeof packed, &pos, w, 4, MPI_INT, MPI_COMM_WORLD);
        ok = ok && rc == MPI_SUCCESS && w[2] == 3;
        rc = MPI_Recv(w, 4, MPI_INT, 0, 3, MPI_COMM_WORLD, &st);
        int n = -1;
        MPI_Get_count(&st, MPI_INT, &n);
        ok = ok && rc == MPI_SUCCESS && w[1] == 2 && n == 4;
        int cls = -1;
        rc = MPI_Recv(w, 2, MPI_INT, 0, 4, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &cls);
        printf("result: untyped ok %d truncate %d\n", ok, cls == MPI_ERR_TRUNCATE);
    }
    MPI_Finalize();
    return 0;
}
