/* Regressions of the core bindings found by MPICH's test suite
 * (docs/conformance.md): each line prints what the standard requires. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);

    /* errhan/errstring2: an added class without a string has an empty one. */
    int cls, len = -1;
    char s[MPI_MAX_ERROR_STRING] = {64, 0};
    MPI_Add_error_class(&cls);
    MPI_Error_string(cls, s, &len);
    printf("result: errstring empty %d len %d\n", s[0] == '\0', len);

    /* pt2pt/rqstatus: MPI_REQUEST_NULL gives an empty status, MPI_ERROR
     * included, whatever the status held before. */
    MPI_Status st;
    int flag = 0;
    memset(&st, 0x5a, sizeof st);
    MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st);
    printf("result: get_status flag %d empty %d\n", flag,
           st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG && st.MPI_ERROR == MPI_SUCCESS);
    MPI_Request req = MPI_REQUEST_NULL;
    memset(&st, 0x5a, sizeof st);
    MPI_Wait(&req, &st);
    printf("result: wait empty %d\n",
           st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG && st.MPI_ERROR == MPI_SUCCESS);

    MPI_Finalize();
    return 0;
}
