/* comm_attr.c (np 2): communicator attributes with C copy and delete
 * callbacks (counted: copy on dup, delete on free, delete_attr and
 * replacement), MPI_COMM_DUP_FN and the null callbacks, the MPI-1 names,
 * the predefined attributes; info objects (set/get/delete, nkeys/nthkey,
 * dup, get_string, MPI_INFO_ENV) and communicator hints. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int copies, deletes, lastdel, extra_seen;

static int copy_fn(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)old, (void)key;
    copies++;
    extra_seen = (int)(intptr_t)extra;
    *(void **)out = (void *)((intptr_t)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int key, void *val, void *extra)
{
    (void)c, (void)key, (void)extra;
    deletes++;
    lastdel = (int)(intptr_t)val;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int key, dupkey, nullkey, flag;
    void *v;
    MPI_Comm_create_keyval(copy_fn, delete_fn, &key, (void *)(intptr_t)77);
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &dupkey, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &nullkey, NULL);
    MPI_Comm c1, c2;
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    MPI_Comm_set_attr(c1, key, (void *)(intptr_t)5);
    MPI_Comm_set_attr(c1, dupkey, (void *)(intptr_t)9);
    MPI_Comm_set_attr(c1, nullkey, (void *)(intptr_t)3);
    MPI_Comm_dup(c1, &c2); /* copies: key (5 -> 6), dupkey (9) */
    int got, gotdup, gotnull;
    MPI_Comm_get_attr(c2, key, &v, &flag);
    got = flag ? (int)(intptr_t)v : -1;
    MPI_Comm_get_attr(c2, dupkey, &v, &flag);
    gotdup = flag ? (int)(intptr_t)v : -1;
    MPI_Comm_get_attr(c2, nullkey, &v, &flag);
    gotnull = flag ? (int)(intptr_t)v : -1;
    int after_dup = copies;
    MPI_Comm_set_attr(c2, key, (void *)(intptr_t)20); /* deletes 6 */
    int del_replace = deletes, last_replace = lastdel;
    MPI_Comm_delete_attr(c2, key); /* deletes 20 */
    MPI_Comm_get_attr(c2, key, &v, &flag);
    int gone = !flag;
    int del_explicit = deletes, last_explicit = lastdel;
    MPI_Comm_free_keyval(&key); /* c1 keeps its attribute */
    int keyinvalid = key == MPI_KEYVAL_INVALID;
    MPI_Comm_free(&c1); /* deletes 5 */
    int del_free = deletes, last_free = lastdel;
    MPI_Comm_free(&c2);
    MPI_Comm_free_keyval(&dupkey);
    MPI_Comm_free_keyval(&nullkey);

    /* The MPI-1 names. */
    int k1;
    MPI_Keyval_create(MPI_NULL_COPY_FN, delete_fn, &k1, NULL);
    MPI_Attr_put(MPI_COMM_SELF, k1, (void *)(intptr_t)31);
    MPI_Attr_get(MPI_COMM_SELF, k1, &v, &flag);
    int mpi1 = flag ? (int)(intptr_t)v : -1;
    MPI_Attr_delete(MPI_COMM_SELF, k1);
    int mpi1del = lastdel;
    MPI_Keyval_free(&k1);

    /* Predefined attributes. */
    int *ip, tagub = 0, host = 0, io = 0, wtg = -1, appnum = -1, usize = 0, last = 0, f1, f2, f3, f4, f5, f6, f7;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ip, &f1);
    if (f1)
        tagub = *ip >= 32767;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &ip, &f2);
    if (f2)
        host = *ip == MPI_PROC_NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &ip, &f3);
    if (f3)
        io = *ip == MPI_ANY_SOURCE || *ip == rank;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &ip, &f4);
    if (f4)
        wtg = *ip;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &ip, &f5);
    if (f5)
        appnum = *ip;
    /* Not set (flag 0): ftmpirun has no slots beyond -np to tell. */
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &ip, &f6);
    if (f6)
        usize = *ip;
    int cls;
    MPI_Add_error_class(&cls);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &ip, &f7);
    if (f7)
        last = *ip == cls;
    MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc_ro = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL), ro_class;
    MPI_Error_class(rc_ro, &ro_class);

    printf("result: rank %d attr copy %d extra %d dup %d %d %d del %d:%d %d:%d gone %d invalid %d free %d:%d mpi1 %d %d "
           "predef %d %d %d %d %d %d %d %d ro %d\n",
           rank, after_dup, extra_seen, got, gotdup, gotnull, del_replace, last_replace, del_explicit, last_explicit,
           gone, keyinvalid, del_free, last_free, mpi1, mpi1del, tagub, host, io, wtg, appnum, usize, last,
           f1 && f2 && f3 && f4 && f5 && !f6 && f7, ro_class == MPI_ERR_KEYVAL);

    /* Info. */
    MPI_Info info, dup;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alpha", "1");
    MPI_Info_set(info, "beta", "two");
    MPI_Info_set(info, "gamma", "three3");
    MPI_Info_set(info, "alpha", "uno");
    int nkeys, vlen, vflag, f8;
    char val[MPI_MAX_INFO_VAL + 1], k2[MPI_MAX_INFO_KEY + 1], small[4];
    MPI_Info_get_nkeys(info, &nkeys);
    MPI_Info_get_nthkey(info, 1, k2);
    MPI_Info_get_valuelen(info, "gamma", &vlen, &vflag);
    MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, val, &flag);
    MPI_Info_delete(info, "beta");
    int n2;
    MPI_Info_get_nkeys(info, &n2);
    MPI_Info_get(info, "beta", MPI_MAX_INFO_VAL, val + 100, &f8);
    int buflen = sizeof small;
    MPI_Info_get_string(info, "gamma", &buflen, small, &flag);
    MPI_Info_dup(info, &dup);
    MPI_Info_set(info, "delta", "4");
    int nd;
    MPI_Info_get_nkeys(dup, &nd);
    MPI_Comm c3;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, dup, &c3);
    MPI_Info used;
    MPI_Comm_get_info(c3, &used);
    char uv[16];
    int uf;
    MPI_Info_get(used, "gamma", 15, uv, &uf);
    MPI_Info_free(&used);
    MPI_Comm_free(&c3);
    MPI_Info_free(&dup);
    MPI_Info_free(&info);
    int infonull = info == MPI_INFO_NULL;
    char mp[16];
    int mf;
    MPI_Info_get(MPI_INFO_ENV, "maxprocs", 15, mp, &mf);

    printf("result: rank %d info nkeys %d nth %s len %d/%d get %s del %d/%d small %s:%d dup %d comm %s:%d null %d env %s:%d\n",
           rank, nkeys, k2, vlen, vflag, val, n2, f8, small, buflen, nd, uv, uf, infonull, mf ? mp : "-", mf);
    MPI_Finalize();
    return 0;
}
