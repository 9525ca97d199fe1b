/*
 * collpair: bench/collcpu for the C MPIs (the same output lines): the
 * small collectives' wall time, processor time and context switches a
 * call on MPI_COMM_WORLD, alone in a loop and right after a Barrier.
 *
 * Usage: collpair [-op barrier|bcast|reduce|allreduce|gather] [-calls N] [-pair]
 * Each rank makes 200 calls of op (8 B: one double, sum, root 0), then
 * times N calls and reads its getrusage around them; rank 0 prints the
 * slowest rank's wall time a call and the processor time and voluntary /
 * involuntary switches a call summed over the ranks. With -pair it then
 * times N pairs "MPI_Barrier, then op": pair_us is a pair's wall time,
 * x_us the op's time inside it (from the Barrier's return), both the
 * slowest rank's means.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void usage_now(double *cpu_us, double *vol, double *invol)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *cpu_us = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
              (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    *vol = (double)ru.ru_nvcsw;
    *invol = (double)ru.ru_nivcsw;
}

static double s = 1, r, *g;
static int op;
enum { OP_BARRIER, OP_BCAST, OP_REDUCE, OP_ALLREDUCE, OP_GATHER };
static const char *names[] = {"barrier", "bcast", "reduce", "allreduce", "gather"};

static void call(void)
{
    switch (op) {
    case OP_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case OP_BCAST:
        MPI_Bcast(&s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
    case OP_REDUCE:
        MPI_Reduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case OP_ALLREDUCE:
        MPI_Allreduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case OP_GATHER:
        MPI_Gather(&s, 1, MPI_DOUBLE, g, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
    }
}

static void report(const char *mode, int rank, int np, long calls, double wall, double inop, double cpu,
                   double vol, double invol)
{
    double mine[3] = {cpu, vol, invol}, sums[3], t[2] = {wall, inop}, slow[2];
    MPI_Allreduce(mine, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(t, slow, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    double n = (double)calls;
    if (mode == NULL)
        printf("collcpu op %s np %d wall_us %.2f cpu_us %.2f vcsw %.2f ivcsw %.2f\n", names[op], np,
               slow[0] * 1e6 / n, sums[0] / n, sums[1] / n, sums[2] / n);
    else
        printf("collcpu op %s np %d mode %s pair_us %.2f x_us %.2f cpu_us %.2f vcsw %.2f ivcsw %.2f\n",
               names[op], np, mode, slow[0] * 1e6 / n, slow[1] * 1e6 / n, sums[0] / n, sums[1] / n,
               sums[2] / n);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np, pair = 0;
    long calls = 5000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-pair") == 0) {
            pair = 1;
        } else if (strcmp(argv[i], "-calls") == 0 && i + 1 < argc) {
            calls = atol(argv[++i]);
        } else if (strcmp(argv[i], "-op") == 0 && i + 1 < argc) {
            const char *name = argv[++i];
            op = -1;
            for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++)
                if (strcmp(name, names[k]) == 0)
                    op = k;
            if (op < 0) {
                if (rank == 0)
                    fprintf(stderr, "unknown -op %s\n", name);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: collpair [-op NAME] [-calls N] [-pair]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    g = malloc(sizeof(double) * (size_t)np);
    for (int i = 0; i < 200; i++)
        call();
    double c0, v0, i0, c1, v1, i1;
    MPI_Barrier(MPI_COMM_WORLD);
    usage_now(&c0, &v0, &i0);
    double t0 = MPI_Wtime();
    for (long i = 0; i < calls; i++)
        call();
    double wall = MPI_Wtime() - t0;
    usage_now(&c1, &v1, &i1);
    report(NULL, rank, np, calls, wall, 0, c1 - c0, v1 - v0, i1 - i0);
    if (pair) {
        double inop = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        usage_now(&c0, &v0, &i0);
        t0 = MPI_Wtime();
        for (long i = 0; i < calls; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            call();
            inop += MPI_Wtime() - t;
        }
        wall = MPI_Wtime() - t0;
        usage_now(&c1, &v1, &i1);
        report("pair", rank, np, calls, wall, inop, c1 - c0, v1 - v0, i1 - i0);
    }
    free(g);
    MPI_Finalize();
    return 0;
}
