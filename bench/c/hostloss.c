/*
 * hostloss: what an MPI without ULFM does when a whole host is lost
 * (bench/xhostcmp; the counterpart of `ftmpi-bench -bench hostloss`).
 *
 *   hostloss -impl NAME -victims K
 *
 * The last K ranks are the host that the driver kills. Every other rank
 * posts a receive from the first of them (the victims one from rank 0 that
 * is never sent) and tells rank 0 so (a zero-byte message, tag 97); rank
 * 0 prints "xhost: armed" once it heard from every rank (not after a
 * barrier: rank 0 can leave one while a slow rank is still inside), and
 * every rank waits with MPI_ERRORS_RETURN. A survivor whose receive
 * returns prints one JSON line with the return code and the instant
 * (Unix ns of the machine's clock, shared by the namespace hosts):
 *
 *   {"name":"xhost-recv-returned","impl":"openmpi","rank":3,"rc":17,"unix_ns":...}
 *
 * Open MPI 4.1 and MPICH 4.0 usually abort the job instead; the driver
 * then times the launcher's exit.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *impl = "unknown";
    int victims = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-impl") == 0)
            impl = argv[i + 1];
        else if (strcmp(argv[i], "-victims") == 0)
            victims = atoi(argv[i + 1]);
    }
    if (victims < 1 || victims >= np) {
        if (rank == 0)
            fprintf(stderr, "hostloss: -victims %d: want 1..%d\n", victims, np - 1);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int first = np - victims;
    char buf = 0;
    MPI_Request req;
    if (rank >= first)
        MPI_Irecv(&buf, 1, MPI_CHAR, 0, 98, MPI_COMM_WORLD, &req);
    else
        MPI_Irecv(&buf, 1, MPI_CHAR, first, 99, MPI_COMM_WORLD, &req);
    if (rank != 0) {
        MPI_Send(NULL, 0, MPI_CHAR, 0, 97, MPI_COMM_WORLD);
    } else {
        for (int i = 1; i < np; i++)
            MPI_Recv(NULL, 0, MPI_CHAR, MPI_ANY_SOURCE, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("xhost: armed\n");
        fflush(stdout);
    }
    int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("{\"name\":\"xhost-recv-returned\",\"impl\":\"%s\",\"rank\":%d,\"rc\":%d,\"unix_ns\":%lld}\n", impl,
           rank, rc, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
