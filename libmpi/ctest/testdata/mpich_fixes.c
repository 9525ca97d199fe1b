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

    /* pt2pt/bsend*: buffered mode, to self, a strided datatype packed. */
    static char bbuf[3 * (64 + MPI_BSEND_OVERHEAD)];
    MPI_Buffer_attach(bbuf, (int)sizeof bbuf);
    int src[6] = {1, 2, 3, 4, 5, 6}, got[3][3];
    MPI_Datatype every2;
    MPI_Type_vector(3, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    MPI_Request rq[2];
    MPI_Bsend(src, 1, every2, 0, 1, MPI_COMM_WORLD);
    MPI_Ibsend(src + 1, 1, every2, 0, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Bsend_init(src, 3, MPI_INT, 0, 3, MPI_COMM_WORLD, &rq[1]);
    MPI_Start(&rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    for (int t = 1; t <= 3; t++)
        MPI_Recv(got[t - 1], 3, MPI_INT, 0, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request_free(&rq[1]);
    MPI_Type_free(&every2);
    void *back = NULL;
    int bsize = 0;
    MPI_Buffer_detach(&back, &bsize);
    printf("result: bsend %d %d %d | %d %d %d | %d %d %d detach-same %d size %d\n",
           got[0][0], got[0][1], got[0][2], got[1][0], got[1][1], got[1][2],
           got[2][0], got[2][1], got[2][2], back == (void *)bbuf, bsize == (int)sizeof bbuf);

    /* datatype/pairtype_size_extent: MPI_LONG_DOUBLE_INT holds 16 + 4
     * bytes of data in the extent of struct { long double; int }. */
    int ldsize = 0;
    MPI_Aint ldlb = -1, ldext = 0;
    MPI_Type_size(MPI_LONG_DOUBLE_INT, &ldsize);
    MPI_Type_get_extent(MPI_LONG_DOUBLE_INT, &ldlb, &ldext);
    struct ldi { long double v; int i; };
    printf("result: long_double_int size %d lb %ld extent-ok %d\n", ldsize, (long)ldlb,
           ldext == (MPI_Aint)sizeof(struct ldi));

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
