/* ft_agree_mismatch.c: rank 1 calls MPIX_Comm_agree where the other ranks
 * call MPIX_Comm_shrink (a program whose ranks make different agreement
 * calls). Every rank gets MPI_ERR_OTHER whose string names both calls,
 * instead of a hang or a communicator made of a flag; MPI_COMM_WORLD
 * still works afterwards. */
#include <mpi-ext.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size, rc, cls = -1, len = 0, flag = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm s = MPI_COMM_NULL;
    char msg[MPI_MAX_ERROR_STRING];
    if (rank == 1)
        rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    else
        rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &s);
    MPI_Error_class(rc, &cls);
    msg[0] = 0;
    MPI_Error_string(rc, msg, &len);
    int named = strstr(msg, "mismatched agreement") != NULL && strstr(msg, "MPI_Comm_shrink") != NULL &&
                strstr(msg, "MPI_Comm_agree") != NULL;
    printf("mismatch: rank %d other %d named %d null %d\n", rank, cls == MPI_ERR_OTHER, named, s == MPI_COMM_NULL);
    if (!named)
        printf("mismatch: rank %d string %s\n", rank, msg);
    int sum = 0;
    rc = MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: allreduce rc %d sum %d\n", rc, sum);
    MPI_Finalize();
    return 0;
}
