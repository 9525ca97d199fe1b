/* MPI_Isendrecv, MPI_Isendrecv_replace and generalized requests. */
#include <mpi.h>
#include <stdio.h>

static int queries, frees, cancels;

static int query_fn(void *extra, MPI_Status *status)
{
    queries++;
    MPI_Status_set_elements(status, MPI_INT, *(int *)extra);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    (void)extra;
    frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    if (!complete)
        cancels++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int me, n, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (me + 1) % n, left = (me + n - 1) % n;

    int out[2] = {me, 10 * me}, in[2] = {-1, -1};
    MPI_Request r;
    MPI_Status st;
    MPI_Isendrecv(out, 2, MPI_INT, right, 7, in, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, &st);
    int count;
    MPI_Get_count(&st, MPI_INT, &count);
    if (in[0] != left || in[1] != 10 * left || st.MPI_SOURCE != left || st.MPI_TAG != 7 || count != 2)
        errs++;

    int buf[3] = {me, me, me};
    MPI_Isendrecv_replace(buf, 3, MPI_INT, right, 8, left, 8, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, &st);
    if (buf[0] != left || buf[2] != left || st.MPI_SOURCE != left)
        errs++;

    int elems = 5, flag = 1;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &elems, &r);
    MPI_Test(&r, &flag, &st);
    if (flag)
        errs++;
    MPI_Cancel(&r);
    MPI_Grequest_complete(r);
    MPI_Wait(&r, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    if (r != MPI_REQUEST_NULL || count != 5 || queries != 1 || frees != 1 || cancels != 1)
        errs++;

    int total;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("result: errors %d\n", total);
    MPI_Finalize();
    return 0;
}
