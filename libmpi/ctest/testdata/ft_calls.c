/* ft_calls.c: the fault-tolerance calls one by one after a real failure.
 * Rank 3 prints "calls: rank 3 waiting" and blocks; the test's ftmpirun
 * SIGKILLs it then. Ranks 0-2 see the failure in a receive from rank 3
 * (MPI_ERRORS_RETURN) and go through the ULFM calls on communicators,
 * windows and files, and seed 003's run-through calls; rank 0 prints what
 * each returned. argv[1] is a directory for the file. */
#include <mpi-ext.h>
#include <stdio.h>
#include <string.h>

static int handler_calls, handler_code;
static MPI_Comm handler_comm;

static void handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_code = *code;
    handler_comm = *comm;
}

static int gsize(MPI_Group g)
{
    int n = -1;
    MPI_Group_size(g, &n);
    MPI_Group_free(&g);
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm ulfm, rt, withh;
    MPI_Comm_dup(MPI_COMM_WORLD, &ulfm);
    MPI_Comm_dup(MPI_COMM_WORLD, &withh);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(withh, eh);
    MPI_Comm_dup(MPI_COMM_WORLD, &rt);
    int mem[4] = {0};
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    char path[4096];
    snprintf(path, sizeof path, "%s/ft_calls.dat", argc > 1 ? argv[1] : ".");
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 3) {
        printf("calls: rank 3 waiting\n");
        int x;
        MPI_Recv(&x, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("calls: rank 3 was not killed\n");
        MPI_Finalize();
        return 1;
    }
    int x, rc, flag, n;
    MPI_Group g;
    rc = MPI_Recv(&x, 1, MPI_INT, 3, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int eclass = -1;
    MPI_Error_class(rc, &eclass);
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    if (rank == 0)
        printf("calls: recv rc %d class %d proc_failed %d rank_fail_stop %d string-names-class %d\n", rc, eclass,
               rc == MPIX_ERR_PROC_FAILED, rc == MPI_ERR_RANK_FAIL_STOP, strstr(msg, "MPI_ERR_PROC_FAILED") != NULL);

    /* A C error handler gets the failure's code. */
    rc = MPI_Recv(&x, 1, MPI_INT, 3, 99, withh, MPI_STATUS_IGNORE);
    if (rank == 0)
        printf("calls: handler calls %d code %d rc %d comm-ok %d\n", handler_calls, handler_code, rc, handler_comm == withh);

    /* ULFM on a communicator. */
    MPI_Comm_get_failed(MPI_COMM_WORLD, &g);
    int nfailed = gsize(g);
    rc = MPI_Comm_ack_failed(MPI_COMM_WORLD, 0, &n);
    int rc2 = MPI_Comm_ack_failed(MPI_COMM_WORLD, 5, &x);
    if (rank == 0)
        printf("calls: get_failed %d ack_failed(0) %d rc %d ack_failed(5) %d rc %d\n", nfailed, n, rc, x, rc2);
    MPI_Request req;
    flag = 0xf0 | (1 << rank);
    MPIX_Comm_iagree(ulfm, &flag, &req);
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == 0)
        printf("calls: iagree unacked rc %d flag %#x null-request %d\n", rc, flag, req == MPI_REQUEST_NULL);
    MPIX_Comm_failure_ack(ulfm);
    MPIX_Comm_failure_get_acked(ulfm, &g);
    int acked = gsize(g);
    flag = 0xf0 | (1 << rank);
    rc = MPIX_Comm_agree(ulfm, &flag);
    if (rank == 0)
        printf("calls: acked %d agree rc %d flag %#x\n", acked, rc, flag);
    rc = MPIX_Comm_revoke(ulfm);
    MPIX_Comm_is_revoked(ulfm, &flag);
    rc2 = MPI_Send(&x, 1, MPI_INT, (rank + 1) % 3, 5, ulfm);
    if (rank == 0)
        printf("calls: revoke rc %d is_revoked %d send rc %d revoked %d\n", rc, flag, rc2, rc2 == MPIX_ERR_REVOKED);
    MPI_Comm shrunk = MPI_COMM_NULL;
    rc = MPIX_Comm_ishrink(ulfm, &shrunk, &req);
    rc2 = MPI_Wait(&req, MPI_STATUS_IGNORE);
    int ssize = -1, srank = -1;
    if (shrunk != MPI_COMM_NULL) {
        MPI_Comm_size(shrunk, &ssize);
        MPI_Comm_rank(shrunk, &srank);
    }
    int sum = -1;
    if (shrunk != MPI_COMM_NULL)
        MPI_Allreduce(&srank, &sum, 1, MPI_INT, MPI_SUM, shrunk);
    if (rank == 0)
        printf("calls: ishrink rc %d wait %d size %d allreduce %d\n", rc, rc2, ssize, sum);

    /* Windows and files. */
    g = MPI_GROUP_NULL;
    int rc0 = MPI_Win_get_failed(win, &g);
    nfailed = gsize(g);
    /* Everybody asked before anybody revokes (package mpi's
     * MPI_Win_get_failed on a revoked window is MPI_ERR_REVOKED). */
    MPI_Barrier(shrunk);
    rc = MPI_Win_revoke(win);
    rc2 = MPI_Win_fence(0, win);
    if (rank == 0)
        printf("calls: win get_failed rc %d failed %d revoke rc %d fence rc %d revoked %d\n", rc0, nfailed, rc, rc2, rc2 == MPIX_ERR_REVOKED);
    rc = MPI_File_revoke(fh);
    rc2 = MPI_File_write_at_all(fh, 0, &x, 1, MPI_INT, MPI_STATUS_IGNORE);
    if (rank == 0)
        printf("calls: file revoke rc %d write_at_all rc %d revoked %d\n", rc, rc2, rc2 == MPIX_ERR_REVOKED);

    /* Run-through (seed 003) on another communicator. */
    int active = -1, active2 = -1;
    MPI_Comm_group_failed(rt, &g);
    nfailed = gsize(g);
    MPI_Comm_collectives_enabled(rt, &active);
    rc = MPI_Icomm_validate(rt, &g, &req);
    rc2 = MPI_Wait(&req, MPI_STATUS_IGNORE);
    int validated = gsize(g);
    MPI_Comm_collectives_enabled(rt, &active2);
    int one = 1, alive = -1;
    int rc3 = MPI_Allreduce(&one, &alive, 1, MPI_INT, MPI_SUM, rt);
    if (rank == 0)
        printf("calls: group_failed %d enabled %d ivalidate rc %d wait %d failed %d enabled %d allreduce rc %d alive %d\n",
               nfailed, active, rc, rc2, validated, active2, rc3, alive);
    MPI_Comm_validate(rt, &g);
    validated = gsize(g);
    MPI_Comm_reenable_any_source(rt, &g);
    n = gsize(g);
    if (rank == 0) {
        printf("calls: validate %d reenable_any_source %d\n", validated, n);
        printf("result: ft calls done\n");
    }
    MPI_Finalize();
    return 0;
}
