/* comm_errors.c (np 2): bad arguments of the communicator, group,
 * topology, attribute, info and datatype calls give the right error class
 * under MPI_ERRORS_RETURN; one line per check: "name class want ok". */
#include <mpi.h>
#include <stdio.h>

static int fails;

static void check(const char *name, int rc, int want)
{
    int cls = -1;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    else
        cls = MPI_SUCCESS;
    if (cls != want)
        fails++;
    printf("err: %s class %d want %d %s\n", name, cls, want, cls == want ? "ok" : "WRONG");
}

int main(int argc, char **argv)
{
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    MPI_Group g = MPI_GROUP_NULL, gw, ng;
    check("group_null", MPI_Group_size(g, &n), MPI_ERR_GROUP);
    MPI_Comm_group(MPI_COMM_WORLD, &gw);
    int bad[1] = {5};
    check("group_incl_rank", MPI_Group_incl(gw, 1, bad, &ng), MPI_ERR_RANK);
    MPI_Group freed = gw;
    MPI_Group_free(&gw);
    check("group_freed", MPI_Group_size(freed, &n), MPI_ERR_GROUP);

    MPI_Comm c;
    check("comm_null", MPI_Comm_dup(MPI_COMM_NULL, &c), MPI_ERR_COMM);
    MPI_Comm d, dd;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    dd = d;
    MPI_Comm_free(&d);
    check("comm_freed", MPI_Comm_size(dd, &n), MPI_ERR_COMM);
    check("comm_free_world", MPI_Comm_free(&(MPI_Comm){MPI_COMM_WORLD}), MPI_ERR_COMM);
    check("comm_split_color", MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &c), MPI_ERR_ARG);
    check("remote_size_intra", MPI_Comm_remote_size(MPI_COMM_WORLD, &n), MPI_ERR_COMM);

    int co[2];
    check("cart_coords_notopo", MPI_Cart_coords(MPI_COMM_WORLD, 0, 2, co), MPI_ERR_TOPOLOGY);
    int dims[2] = {4, 0};
    check("dims_create", MPI_Dims_create(6, 2, dims), MPI_ERR_DIMS);
    int big[1] = {3};
    int per[1] = {0};
    check("cart_too_big", MPI_Cart_create(MPI_COMM_WORLD, 1, big, per, 0, &c), MPI_ERR_DIMS);

    void *v;
    int flag;
    check("keyval_bad", MPI_Comm_get_attr(MPI_COMM_WORLD, 12345, &v, &flag), MPI_ERR_KEYVAL);
    int key;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL);
    int k2 = key;
    MPI_Comm_free_keyval(&key);
    check("keyval_freed", MPI_Comm_set_attr(MPI_COMM_WORLD, k2, NULL), MPI_ERR_KEYVAL);

    MPI_Info info, fi;
    check("info_null_set", MPI_Info_set(MPI_INFO_NULL, "k", "v"), MPI_ERR_INFO);
    MPI_Info_create(&info);
    fi = info;
    MPI_Info_free(&info);
    check("info_freed", MPI_Info_get_nkeys(fi, &n), MPI_ERR_INFO);
    MPI_Info_create(&info);
    check("info_nokey", MPI_Info_delete(info, "absent"), MPI_ERR_INFO_NOKEY);
    check("info_key_empty", MPI_Info_set(info, "", "v"), MPI_ERR_INFO_KEY);
    MPI_Info_free(&info);

    MPI_Datatype t, ft;
    check("type_null", MPI_Type_size(MPI_DATATYPE_NULL, &n), MPI_ERR_TYPE);
    check("type_count", MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    MPI_Datatype pre = MPI_INT;
    check("type_free_predef", MPI_Type_free(&pre), MPI_ERR_TYPE);
    MPI_Type_contiguous(2, MPI_INT, &t);
    int x[2] = {1, 2};
    check("send_uncommitted", MPI_Send(x, 1, t, 0, 0, MPI_COMM_SELF), MPI_ERR_TYPE);
    char buf[4];
    int pos = 0;
    MPI_Type_commit(&t);
    check("pack_overflow", MPI_Pack(x, 1, t, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
    ft = t;
    MPI_Type_free(&t);
    check("type_freed", MPI_Type_size(ft, &n), MPI_ERR_TYPE);
    int sz[1] = {4}, sub[1] = {3}, st[1] = {2};
    check("subarray_range", MPI_Type_create_subarray(1, sz, sub, st, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    check("subarray_order", MPI_Type_create_subarray(1, sz, sub, st, 99, MPI_INT, &t), MPI_ERR_ARG);

    printf("result: rank %d errors wrong %d\n", rank, fails);
    MPI_Finalize();
    return 0;
}
