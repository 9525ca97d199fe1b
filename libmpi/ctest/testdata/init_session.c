/* MPI sessions: a library that starts MPI on its own (argv[1] "alone"),
 * or inside a program that called MPI_Init ("world"). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs;

static int library(void)
{
    MPI_Session s;
    MPI_Info info;
    MPI_Group g;
    MPI_Comm c;
    char val[64];
    int flag, n, len, rank, size, sum;

    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    if (MPI_Session_init(info, MPI_ERRORS_RETURN, &s) != MPI_SUCCESS)
        return ++errs, -1;
    MPI_Info_free(&info);
    MPI_Session_get_info(s, &info);
    MPI_Info_get(info, "thread_level", sizeof val, val, &flag);
    if (!flag || strcmp(val, "MPI_THREAD_MULTIPLE"))
        errs++;
    MPI_Info_free(&info);

    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    int found = 0;
    for (int i = 0; i < n; i++) {
        len = 0;
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL);
        char *name = malloc(len);
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name);
        if ((int)strlen(name) + 1 != len)
            errs++;
        MPI_Session_get_pset_info(s, name, &info);
        MPI_Info_get(info, "mpi_size", sizeof val, val, &flag);
        if (!strcmp(name, "mpi://WORLD") || !strcmp(name, "mpi://SELF"))
            found++;
        if (!flag || atoi(val) < 1)
            errs++;
        MPI_Info_free(&info);
        free(name);
    }
    if (found != 2)
        errs++;
    if (MPI_Group_from_session_pset(s, "mpi://no-such-set", &g) != MPI_ERR_ARG)
        errs++;

    MPI_Group_from_session_pset(s, "mpi://world", &g);
    MPI_Comm_create_from_group(g, "org.ftmpi.test", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    MPI_Group_free(&g);
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c);
    if (sum != size * (size - 1) / 2)
        errs++;
    MPI_Comm_free(&c);
    if (MPI_Session_finalize(&s) != MPI_SUCCESS || s != MPI_SESSION_NULL)
        errs++;
    return rank;
}

int main(int argc, char **argv)
{
    int flag;
    if (argc > 1 && !strcmp(argv[1], "world")) {
        MPI_Init(&argc, &argv);
        for (int i = 0; i < 3; i++)
            library();
        MPI_Initialized(&flag);
        if (!flag)
            errs++;
        int rank, total;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("result: world errors %d\n", total);
        MPI_Finalize();
        return 0;
    }
    int rank = library();
    MPI_Initialized(&flag);
    if (flag) /* sessions alone do not initialize the world model */
        errs++;
    printf("result: rank %d errors %d\n", rank, errs);
    return 0;
}
