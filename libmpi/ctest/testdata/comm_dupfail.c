/* MPI_Info_create_env gives the same values before MPI_Init, after it and
 * after MPI_Finalize; a Dup whose attribute copy callback fails returns
 * the callback's error class and a null handle. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int copybomb(MPI_Comm c, int k, void *x, void *in, void *out, int *flag)
{
    (void)c; (void)k; (void)x; (void)in; (void)out;
    *flag = 1;
    return MPI_ERR_OTHER;
}

static int typebomb(MPI_Datatype t, int k, void *x, void *in, void *out, int *flag)
{
    (void)t; (void)k; (void)x; (void)in; (void)out;
    *flag = 1;
    return MPI_ERR_OTHER;
}

static int same(MPI_Info a, MPI_Info b)
{
    const char *keys[] = {"command", "argv", "maxprocs", "host", "arch", "wdir", "thread_level"};
    int diffs = 0;
    for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char va[MPI_MAX_INFO_VAL], vb[MPI_MAX_INFO_VAL];
        int fa, fb;
        MPI_Info_get(a, keys[i], MPI_MAX_INFO_VAL - 1, va, &fa);
        MPI_Info_get(b, keys[i], MPI_MAX_INFO_VAL - 1, vb, &fb);
        if (fa != fb || (fa && strcmp(va, vb)))
            diffs++;
    }
    return diffs;
}

int main(int argc, char **argv)
{
    MPI_Info before, during, after;
    int errs = 0, key, rc, cls;
    MPI_Info_create_env(argc, argv, &before);
    MPI_Init(&argc, &argv);
    MPI_Info_create_env(argc, argv, &during);
    errs += same(before, during);

    MPI_Comm dup, d2;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Comm_create_keyval(copybomb, MPI_COMM_NULL_DELETE_FN, &key, NULL);
    MPI_Comm_set_attr(dup, key, &key);
    d2 = MPI_COMM_WORLD;
    rc = MPI_Comm_dup(dup, &d2);
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_OTHER || d2 != MPI_COMM_NULL)
        errs++;
    MPI_Comm_delete_attr(dup, key);
    MPI_Comm_free_keyval(&key);
    MPI_Comm_free(&dup);

    MPI_Datatype t = MPI_INT;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_create_keyval(typebomb, MPI_TYPE_NULL_DELETE_FN, &key, NULL);
    MPI_Datatype mine;
    MPI_Type_contiguous(2, MPI_INT, &mine);
    MPI_Type_set_attr(mine, key, &key);
    rc = MPI_Type_dup(mine, &t);
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_OTHER || t != MPI_DATATYPE_NULL)
        errs++;
    MPI_Type_delete_attr(mine, key);
    MPI_Type_free(&mine);
    MPI_Type_free_keyval(&key);

    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Finalize();
    MPI_Info_create_env(argc, argv, &after);
    errs += same(before, after);
    printf("result: rank %d errors %d\n", rank, errs);
    return 0;
}
