/* adderr.c: user error classes and codes added, given strings, and
 * removed again (MPI-4.1 9.5), also under MPICH's MPIX_Delete_ names. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls, code, len, cls2;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Add_error_class(&cls);
    MPI_Add_error_code(cls, &code);
    MPI_Add_error_string(code, "the code");
    int busy = MPI_Remove_error_class(cls) != MPI_SUCCESS; /* a code is still attached */
    int rs = MPI_Remove_error_string(code) == MPI_SUCCESS;
    MPI_Error_string(code, msg, &len);
    int rc = MPI_Remove_error_code(code) == MPI_SUCCESS;
    int rcl = MPI_Remove_error_class(cls) == MPI_SUCCESS;
    int again = MPI_Remove_error_class(cls) != MPI_SUCCESS;
    MPI_Add_error_class(&cls2);
    int mpix = MPIX_Delete_error_class(cls2) == MPI_SUCCESS;
    printf("result: busy %d string-removed %d empty %d code %d class %d again %d mpix %d\n", busy, rs, len == 0, rc, rcl,
           again, mpix);
    MPI_Finalize();
    return 0;
}
