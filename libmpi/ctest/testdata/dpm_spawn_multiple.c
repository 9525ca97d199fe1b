/* MPI_Comm_spawn_multiple with two commands (np 2): this program twice,
 * with different arguments, 1 and 2 processes, the second in "wdir" /.
 * The three children form one world (size 3); each reports its rank in
 * it, its MPI_APPNUM, its first argument and its working directory to
 * parent rank 0, which checks them. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        int *appnum, flag, rep[3];
        char cwd[256] = "", arg[32] = "";
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
        rep[0] = size;
        rep[1] = flag ? *appnum : -1;
        rep[2] = rank;
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            strcpy(cwd, "?");
        if (argc > 1)
            strncpy(arg, argv[1], sizeof(arg) - 1);
        MPI_Send(rep, 3, MPI_INT, 0, 1, parent);
        MPI_Send(arg, (int) sizeof(arg), MPI_CHAR, 0, 2, parent);
        MPI_Send(cwd, (int) sizeof(cwd), MPI_CHAR, 0, 3, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }

    char *cmds[2] = { argv[0], argv[0] };
    char *args0[] = { "first", NULL }, *args1[] = { "second", NULL };
    char **argvs[2] = { args0, args1 };
    int np[2] = { 1, 2 }, errcodes[3] = { -1, -1, -1 };
    MPI_Info infos[2];
    MPI_Info_create(&infos[0]);
    MPI_Info_create(&infos[1]);
    MPI_Info_set(infos[1], "wdir", "/");
    MPI_Comm_spawn_multiple(2, cmds, argvs, np, infos, 0, MPI_COMM_WORLD, &inter, errcodes);
    MPI_Info_free(&infos[0]);
    MPI_Info_free(&infos[1]);
    if (rank == 0) {
        int rsize, ok = 0;
        MPI_Comm_remote_size(inter, &rsize);
        for (int i = 0; i < rsize; i++) {
            int rep[3];
            char arg[32], cwd[256];
            MPI_Recv(rep, 3, MPI_INT, i, 1, inter, MPI_STATUS_IGNORE);
            MPI_Recv(arg, (int) sizeof(arg), MPI_CHAR, i, 2, inter, MPI_STATUS_IGNORE);
            MPI_Recv(cwd, (int) sizeof(cwd), MPI_CHAR, i, 3, inter, MPI_STATUS_IGNORE);
            int app = i == 0 ? 0 : 1;
            ok += rep[0] == 3 && rep[1] == app && rep[2] == i &&
                strcmp(arg, app == 0 ? "first" : "second") == 0 && (app == 0 || strcmp(cwd, "/") == 0);
        }
        printf("result: remote %d children ok %d errcodes %d %d %d\n", rsize, ok, errcodes[0], errcodes[1],
               errcodes[2]);
        fflush(stdout);
    }
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
}
