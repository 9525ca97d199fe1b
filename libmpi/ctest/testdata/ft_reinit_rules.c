/* ft_reinit_rules.c: seed 000's rules as C sees them, without failures.
 * Rank 0 prints what each call returned. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

static int calls;

static void fn(void *data)
{
    int state = -1, rank;
    calls++;
    MPI_Reinit_state(&state);
    int rc = MPI_Test_failure();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("rules: inside state %d new %d test_failure %d data %d\n", state, state == MPI_REINIT_NEW, rc, *(int *)data);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, state = -1, data = 42, cls = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rc1 = MPI_Test_failure();
    int rc2 = MPI_Reinit_state(&state);
    int rc3 = MPI_Reinit(fn, &data); /* no Reinit handler on MPI_COMM_WORLD yet */
    MPI_Error_class(rc3, &cls);
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc3, msg, &len);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int rc4 = MPI_Comm_set_errhandler(dup, MPI_ERRORS_REINIT_ASYNC);
    /* Nor on a file, nor on MPI_FILE_NULL (seed 000 1.6 (5)). */
    char path[64];
    snprintf(path, sizeof path, "/tmp/ft_reinit_rules.%d.%d", (int)getpid(), rank);
    MPI_File fh;
    MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    int rc6 = MPI_File_set_errhandler(fh, MPI_ERRORS_REINIT_SYNC);
    int rc7 = MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_REINIT_ASYNC);
    MPI_Errhandler feh, fneh;
    MPI_File_get_errhandler(fh, &feh);
    MPI_File_get_errhandler(MPI_FILE_NULL, &fneh);
    MPI_File_close(&fh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_REINIT_SYNC);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    if (rank == 0) {
        printf("rules: before test_failure %d state rc %d (other %d) reinit class %d calls %d\n", rc1, rc2, rc2 == MPI_ERR_OTHER, cls, calls);
        printf("rules: reinit without handler says: %s\n", msg);
        printf("rules: reinit handler on a dup rc %d (arg %d); world has sync %d\n", rc4, rc4 == MPI_ERR_ARG, eh == MPI_ERRORS_REINIT_SYNC);
        printf("rules: reinit handler on a file arg %d kept %d; on MPI_FILE_NULL arg %d kept %d\n", rc6 == MPI_ERR_ARG, feh == MPI_ERRORS_RETURN, rc7 == MPI_ERR_ARG, fneh == MPI_ERRORS_RETURN);
    }
    int rc5 = MPI_Reinit(fn, &data);
    if (rank == 0)
        printf("result: reinit rc %d calls %d\n", rc5, calls);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
