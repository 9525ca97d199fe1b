/* ft_repair.c: how long a repair takes from C. Rank 2 writes the time
 * (MPI_Wtime: CLOCK_MONOTONIC, the same clock in every process of the
 * machine) and SIGKILLs itself in iteration 50; rank 0 reports when it
 * saw the failure and when the job was repaired:
 *   ulfm:   MPI_Allreduce in a loop; revoke, agree, shrink, and a barrier
 *           of the survivors (ftmpirun --on-failure continue);
 *   reinit: MPI_Reinit with MPI_ERRORS_REINIT_ASYNC; repaired when the
 *           respawned rank and the survivors passed a barrier in the new
 *           epoch (ftmpirun --on-failure reinit).
 * argv[1] is the mode, argv[2] a directory for the time of the kill. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static const char *dir;

static void die(void)
{
    char name[4096];
    snprintf(name, sizeof name, "%s/t0", dir);
    FILE *f = fopen(name, "w");
    fprintf(f, "%.9f\n", MPI_Wtime());
    fclose(f);
    raise(SIGKILL);
}

static double t0(void)
{
    char name[4096];
    double t = 0;
    snprintf(name, sizeof name, "%s/t0", dir);
    FILE *f = fopen(name, "r");
    if (f) {
        if (fscanf(f, "%lf", &t) != 1)
            t = 0;
        fclose(f);
    }
    return t;
}

static double detected;

static void loop(MPI_Comm comm, int iters, int kill)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (int i = 0; i < iters; i++) {
        if (kill && i == 50 && rank == 2)
            die();
        int one = 1, n;
        if (MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS) {
            detected = MPI_Wtime();
            return;
        }
    }
}

static void resilient(void *arg)
{
    (void)arg;
    int state, rank;
    MPI_Reinit_state(&state);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (state != MPI_REINIT_NEW) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            printf("repair: reinit kill->repaired %.1f ms\n", (MPI_Wtime() - t0()) * 1e3);
        return;
    }
    loop(MPI_COMM_WORLD, 1000000, 1); /* rolled back from inside */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    dir = argv[2];
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (strcmp(argv[1], "reinit") == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_REINIT_ASYNC);
        MPI_Reinit(resilient, NULL);
    } else {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        loop(comm, 1000000, 1);
        MPI_Comm_revoke(comm);
        int ok = 0;
        MPI_Comm_agree(comm, &ok);
        MPI_Comm nc;
        MPI_Comm_shrink(comm, &nc);
        MPI_Barrier(nc);
        double repaired = MPI_Wtime();
        int nrank;
        MPI_Comm_rank(nc, &nrank);
        if (nrank == 0)
            printf("repair: ulfm kill->detected %.1f ms kill->repaired %.1f ms\n", (detected - t0()) * 1e3, (repaired - t0()) * 1e3);
        MPI_Comm_free(&nc);
        MPI_Comm_free(&comm);
    }
    MPI_Finalize();
    return 0;
}
