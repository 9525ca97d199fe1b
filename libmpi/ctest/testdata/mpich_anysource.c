/* MPICH ft/anysource: after a failure, a blocking MPI_ANY_SOURCE receive
 * fails with MPI_ERR_PROC_FAILED and a nonblocking one stays pending,
 * its Wait answering MPI_ERR_PROC_FAILED_PENDING (ULFM), until the failure
 * is acknowledged. Run with 3 ranks and --on-failure continue. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, err, recv_class = -1, wait_class = -1, buf = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 1)
        exit(EXIT_FAILURE);
    if (rank == 0) {
        MPI_Request req;
        MPI_Status st;
        err = MPI_Recv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Error_class(err, &recv_class);
        MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &req);
        err = MPI_Wait(&req, &st);
        MPI_Error_class(err, &wait_class);
        MPIX_Comm_failure_ack(MPI_COMM_WORLD);
        MPI_Cancel(&req);
        MPI_Wait(&req, &st);
        printf("result: recv %d (proc-failed %d) wait %d (pending %d)\n", recv_class,
               recv_class == MPI_ERR_PROC_FAILED, wait_class,
               wait_class == MPI_ERR_PROC_FAILED_PENDING);
    }
    MPI_Finalize();
    return 0;
}
