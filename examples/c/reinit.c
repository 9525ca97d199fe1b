/* reinit.c: seed 000's examples 1.1 and 1.2 in C, global restart with
 * MPI_Reinit. Each step every rank computes its share of the step's terms
 * and the ranks exchange their partial sums (point to point, each with
 * each); every 10 steps each rank writes a checkpoint file. After a
 * failure ftmpirun --on-failure reinit respawns the failed rank and every
 * rank runs the resilient function again, which resumes from the newest
 * checkpoint all ranks have:
 *
 *   ftmpicc -o reinit examples/c/reinit.c
 *   ftmpirun -n 4 --on-failure reinit --inject 'kill:rank=2,on=step 40 done' ./reinit /tmp/ckpt sync
 *
 * Mode "sync" sets MPI_ERRORS_REINIT_SYNC (example 1.2: errors return, and
 * MPI_Test_failure after each step goes back to the rollback location);
 * "async" sets MPI_ERRORS_REINIT_ASYNC (example 1.1: a failing MPI call
 * goes back at once). The result line is the same as without failures. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 200
#define EVERY 10
#define WORK 5000

typedef struct {
    int argc;
    char **argv;
    int sync;
    long long total;   /* the result, for main */
    int errors_seen;   /* errors returned under MPI_ERRORS_REINIT_SYNC */
} data_t;

/* part sums the terms of step s that rank r of n owns. */
static long long part(int s, int r, int n)
{
    long long sum = 0;
    for (int i = r; i < WORK; i += n)
        sum += ((long long)i * (s + 1)) % 1000003;
    return sum;
}

/* exchange combines v over MPI_COMM_WORLD (min if want_min, else sum),
 * each rank sending to and receiving from each. */
static int exchange(long long v, int want_min, int tag, long long *out)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long long *in = calloc((size_t)size, sizeof *in);
    MPI_Request *rq = calloc((size_t)(2 * size), sizeof *rq);
    int k = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        MPI_Irecv(&in[p], 1, MPI_LONG_LONG, p, tag, MPI_COMM_WORLD, &rq[k++]);
        MPI_Isend(&v, 1, MPI_LONG_LONG, p, tag, MPI_COMM_WORLD, &rq[k++]);
    }
    int rc = MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
    *out = v;
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        if (want_min)
            *out = in[p] < *out ? in[p] : *out;
        else
            *out += in[p];
    }
    free(in);
    free(rq);
    return rc;
}

static void ckpt_name(char *buf, size_t n, const char *dir, int rank, int slot)
{
    snprintf(buf, n, "%s/ckpt.%d.%d", dir, rank, slot);
}

/* load reads the checkpoint of step want (or the newest if want < 0). */
static int load(const char *dir, int rank, long long want, long long *step, long long *total)
{
    int found = 0;
    for (int slot = 0; slot < 2; slot++) {
        char name[4096];
        ckpt_name(name, sizeof name, dir, rank, slot);
        FILE *f = fopen(name, "r");
        if (!f)
            continue;
        long long s, t;
        if (fscanf(f, "%lld %lld", &s, &t) == 2 && (want < 0 ? (!found || s > *step) : s == want)) {
            *step = s;
            *total = t;
            found = 1;
        }
        fclose(f);
    }
    return found;
}

/* store writes the checkpoint of step s in slot (s/EVERY)%2, keeping the one before. */
static void store(const char *dir, int rank, long long s, long long total)
{
    char name[4096], tmp[4200];
    ckpt_name(name, sizeof name, dir, rank, (int)(s / EVERY) % 2);
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        perror(tmp);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fprintf(f, "%lld %lld\n", s, total);
    fclose(f);
    rename(tmp, name);
}

static void resilient_function(void *arg)
{
    data_t *d = (data_t *)arg;
    const char *dir = d->argv[1];
    int rank, size, state;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reinit_state(&state);
    const char *why = state == MPI_REINIT_NEW ? "new" : state == MPI_REINIT_REINITED ? "reinited" : "restarted";

    /* Resume from the newest checkpoint every rank has (each keeps two,
     * and no rank is more than one checkpoint ahead of another). */
    long long step = 0, total = 0, agreed;
    if (!load(dir, rank, -1, &step, &total))
        step = 0, total = 0;
    if (exchange(step, 1, 1, &agreed) != MPI_SUCCESS) {
        MPI_Test_failure(); /* a failure during the restore: roll back again */
        return;
    }
    if (agreed > 0 && !load(dir, rank, agreed, &step, &total)) {
        fprintf(stderr, "rank %d: no checkpoint of step %lld\n", rank, agreed);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (agreed == 0)
        step = 0, total = 0;
    if (rank == 0 || state == MPI_REINIT_RESTARTED)
        printf("reinit: rank %d %s: %s at step %lld\n", rank, why, step ? "resume from checkpoint" : "initialise", step);

    while (step < STEPS) {
        long long sum;
        if (exchange(part((int)step, rank, size), 0, 2, &sum) != MPI_SUCCESS)
            d->errors_seen++; /* returned, as with MPI_ERRORS_RETURN */
        if (d->sync)
            MPI_Test_failure(); /* does not return after a failure */
        total += sum;
        step++;
        if (step % EVERY == 0) {
            store(dir, rank, step, total);
            if (rank == 0)
                printf("reinit: step %lld done\n", step);
        }
    }
    d->total = total;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "sync") != 0 && strcmp(argv[2], "async") != 0)) {
        fprintf(stderr, "usage: reinit CHECKPOINT-DIR sync|async\n");
        return 2;
    }
    data_t data = {argc, argv, strcmp(argv[2], "sync") == 0, 0, 0};
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, data.sync ? MPI_ERRORS_REINIT_SYNC : MPI_ERRORS_REINIT_ASYNC);
    /* MPI_Reinit sets the rollback location to resilient_function and
     * calls it. */
    int rc = MPI_Reinit(resilient_function, &data);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: MPI_Reinit: %s\n", rank, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        printf("reinit: done; rank 0 saw %d returned errors\n", data.errors_seen);
        printf("result: reinit total %lld steps %d\n", data.total, STEPS);
    }
    MPI_Finalize();
    return 0;
}
