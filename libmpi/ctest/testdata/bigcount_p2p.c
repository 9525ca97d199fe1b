/* bigcount_p2p.c: the large-count point-to-point and status calls
 * (MPI_Send_c, MPI_Recv_c, MPI_Isend_c, MPI_Irecv_c, MPI_Get_count_c,
 * MPI_Status_set_elements_x); a message of more than INT_MAX elements is
 * MPI_ERR_COUNT, a status holds any count. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v[3] = {4, 5, 6}, w[3] = {0, 0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0) {
        MPI_Send_c(v, 3, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Request r;
        MPI_Isend_c(v, 2, MPI_INT, 1, 2, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Status st;
        MPI_Count n = -1, big = -1;
        MPI_Recv_c(w, 3, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
        MPI_Get_count_c(&st, MPI_INT, &n);
        MPI_Request r;
        int u[2] = {0, 0};
        MPI_Irecv_c(u, 2, MPI_INT, 0, 2, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Status_set_elements_x(&st, MPI_BYTE, (MPI_Count)3000000000LL);
        MPI_Get_elements_x(&st, MPI_BYTE, &big);
        int cls = -1, rc = MPI_Send_c(v, (MPI_Count)3000000000LL, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        printf("result: bigcount w %d %d %d n %lld u %d %d status %lld too-large %d\n", w[0], w[1], w[2], (long long)n, u[0],
               u[1], (long long)big, cls == MPI_ERR_COUNT);
    }
    MPI_Finalize();
    return 0;
}
