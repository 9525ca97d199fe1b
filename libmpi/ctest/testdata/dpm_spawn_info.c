/* MPI_Comm_spawn's reserved info keys "path" and "wdir" (MPI-4.1 11.3.4),
 * MPI_UNIVERSE_SIZE (11.10.1) and the parent communicator's name (7.8).
 * The parents (np 2) leave MPI_UNIVERSE_SIZE unset (flag 0) and spawn two
 * copies of this program by its bare name, found through "path" (the
 * directory of argv[0]), working in "wdir" (that directory's parent). Each
 * child prints one line and sends its working directory and the name of
 * its parent communicator to parent rank 0, which compares them. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int rank, flag, *usize;
    char dir[1024], wdir[1024], name[1024];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        char cwd[1024] = "", pname[MPI_MAX_OBJECT_NAME] = "";
        int len;
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            strcpy(cwd, "?");
        MPI_Comm_get_name(parent, pname, &len);
        printf("child %d: started\n", rank);
        fflush(stdout);
        MPI_Send(cwd, (int) sizeof(cwd), MPI_CHAR, 0, 1, parent);
        MPI_Send(pname, MPI_MAX_OBJECT_NAME, MPI_CHAR, 0, 2, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }

    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);

    /* dir: the directory of argv[0]; wdir: its parent; name: the base name. */
    if (argv[0][0] == '/') {
        strncpy(dir, argv[0], sizeof(dir) - 1);
    } else {
        if (getcwd(dir, sizeof(dir)) == NULL)
            return 1;
        strncat(dir, "/", sizeof(dir) - strlen(dir) - 1);
        strncat(dir, argv[0], sizeof(dir) - strlen(dir) - 1);
    }
    dir[sizeof(dir) - 1] = 0;
    char *slash = strrchr(dir, '/');
    strncpy(name, slash + 1, sizeof(name) - 1);
    name[sizeof(name) - 1] = 0;
    *slash = 0;
    strncpy(wdir, dir, sizeof(wdir) - 1);
    wdir[sizeof(wdir) - 1] = 0;
    slash = strrchr(wdir, '/');
    if (slash == wdir)
        slash[1] = 0;
    else
        *slash = 0;

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "path", dir);
    MPI_Info_set(info, "wdir", wdir);
    int errcodes[2] = { -1, -1 };
    MPI_Comm_spawn(name, MPI_ARGV_NULL, 2, info, 0, MPI_COMM_WORLD, &inter, errcodes);
    MPI_Info_free(&info);

    if (rank == 0) {
        int cwd_ok = 0, name_ok = 0;
        for (int i = 0; i < 2; i++) {
            char cwd[1024], pname[MPI_MAX_OBJECT_NAME];
            MPI_Recv(cwd, (int) sizeof(cwd), MPI_CHAR, i, 1, inter, MPI_STATUS_IGNORE);
            MPI_Recv(pname, MPI_MAX_OBJECT_NAME, MPI_CHAR, i, 2, inter, MPI_STATUS_IGNORE);
            cwd_ok += strcmp(cwd, wdir) == 0;
            name_ok += strcmp(pname, "MPI_COMM_PARENT") == 0;
        }
        printf("result: universe flag %d errcodes %d %d cwd %d parent name %d\n", flag, errcodes[0],
               errcodes[1], cwd_ok, name_ok);
        fflush(stdout);
    }
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
}
