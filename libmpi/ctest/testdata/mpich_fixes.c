/* Regressions of the core bindings found by MPICH's test suite
 * (docs/conformance.md): each line prints what the standard requires. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int ndel, order[3], fin_during = -1;

static int del_fn(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    if (ndel < 3)
        order[ndel] = *(int *)val;
    ndel++;
    MPI_Finalized(&fin_during);
    return MPI_SUCCESS;
}

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

    /* init/attrself: MPI_Finalize deletes MPI_COMM_SELF's attributes
     * first, in the reverse order of their setting, even with their keyvals
     * freed. */
    int key[3], val[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_fn, &key[i], NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, key[2], &val[2]);
    MPI_Comm_set_attr(MPI_COMM_SELF, key[0], &val[0]);
    MPI_Comm_set_attr(MPI_COMM_SELF, key[1], &val[1]);
    for (int i = 0; i < 3; i++)
        MPI_Comm_free_keyval(&key[i]);
    MPI_Finalize();
    printf("result: self attrs deleted %d order %d %d %d finalized-during %d\n",
           ndel, order[0], order[1], order[2], fin_during);
    return 0;
}
