/*
 * ulfm_ft: the fault-tolerance measurements of `ftmpi-bench -bench ft` and
 * `-bench detect`, with Open MPI 5's ULFM (MPIX_* from <mpi-ext.h>), so
 * that bench/ft-compare.sh can put both side by side. Same definitions,
 * same JSON lines (rank 0 prints them), so bench/ftmedian takes medians of
 * either.
 *
 *   ulfm_ft -bench ft     [-runs 5] [-iters 300]  failure-free, microseconds
 *       Each repetition: MPI_Barrier, then rank 0 times -iters back-to-back
 *       calls and takes the mean, for MPI_Allreduce of one int64 (MPI_BAND),
 *       MPIX_Comm_agree, and (-iters/20 calls, at least 1) MPIX_Comm_shrink +
 *       MPI_Comm_free. Reported: rank 0's median over -runs repetitions:
 *       ft_allreduce8, ft_agree, ft_shrink.
 *
 *   ulfm_ft -bench detect                         one SIGKILL, milliseconds
 *       Seed 002 section 4.6.2: rank 0 picks a wall-clock instant 200 ms
 *       ahead and broadcasts it; the last rank kills itself (SIGKILL) at that
 *       instant while every other rank is blocked in MPI_Recv from it; each
 *       survivor records when its receive returns (error expected). Then each
 *       survivor times MPIX_Comm_revoke + MPIX_Comm_shrink, MPIX_Comm_agree
 *       on the shrunken communicator, and MPIX_Comm_agree on the old one
 *       (which holds the dead rank). Reported, from one launch, the slowest
 *       survivor's value: ft_detect_max, ft_revoke_shrink_max,
 *       ft_agree_after_failure_max (old communicator), ft_agree_new_comm_max.
 *       Afterwards (untimed) the survivors acknowledge the failure
 *       (MPIX_Comm_failure_ack / _get_acked) and check that the acked group
 *       is exactly the victim.
 *
 *   ulfm_ft -bench replace (or spawn)             one SIGKILL, milliseconds
 *       `ftmpi-bench -bench replace`'s definition. As detect up to the
 *       failure, then the replacement recipe: revoke +
 *       shrink, MPI_Comm_spawn of one process (this program, "-child"),
 *       MPI_Intercomm_merge (parents low), MPI_Comm_split back to the old
 *       ranks (the child takes the victim's). Reported, slowest survivor:
 *       ft_replace_shrink_max (revoke + shrink), ft_replace_spawn_max
 *       (includes the child's MPI_Init), ft_replace_merge_max,
 *       ft_replace_split_max, ft_replace_total_max (kill instant -> restored
 *       communicator), and ft_replace_detect_max (kill -> receive returned).
 *       Needs a BTL that reaches a spawned process (self,sm,tcp).
 *
 * Common flags: -impl NAME, -transport NAME (labels for the JSON line).
 * Run under `mpirun --with-ft ulfm`; ULFM's error handler is set to
 * MPI_ERRORS_RETURN on every communicator used.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if !defined(OMPI_HAVE_MPI_EXT_FTMPI) || !OMPI_HAVE_MPI_EXT_FTMPI
#error "this MPI has no ULFM extension (need Open MPI 5 with <mpi-ext.h> ftmpi)"
#endif

static const char *impl = "openmpi5-ulfm", *transport = "shm", *mode = "ft";
static int runs = 5, iters = 300, child = 0, child_key = -1;

static double now_s(void) /* monotonic seconds */
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t wall_ns(void) /* wall clock, shared by all ranks of the host */
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until_wall(int64_t at)
{
    struct timespec ts = {.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Same median as ftmpi-bench's emit: the upper middle after sorting. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

static void emit(const char *name, int np, int size, double v, const char *unit, int nruns)
{
    printf("{\"name\":\"%s\",\"impl\":\"%s\",\"transport\":\"%s\",\"np\":%d,\"size\":%d,"
           "\"median\":%.6f,\"unit\":\"%s\",\"runs\":%d}\n",
           name, impl, transport, np, size, v, unit, nruns);
    fflush(stdout);
}

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0, cls = 0;
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "ulfm_ft: %s: %s (class %d)\n", what, msg, cls);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-bench ft|detect|replace] [-runs N] [-iters N] [-impl NAME] "
            "[-transport NAME]\n",
            prog);
}

static int parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (f[0] != '-')
            goto bad;
        f++;
        if (f[0] == '-')
            f++;
        if (strcmp(f, "child") == 0) {
            child = 1;
            continue;
        }
        if (i + 1 >= argc)
            goto bad;
        const char *v = argv[++i];
        if (strcmp(f, "bench") == 0)
            mode = v;
        else if (strcmp(f, "runs") == 0)
            runs = atoi(v);
        else if (strcmp(f, "iters") == 0)
            iters = atoi(v);
        else if (strcmp(f, "impl") == 0)
            impl = v;
        else if (strcmp(f, "transport") == 0)
            transport = v;
        else if (strcmp(f, "key") == 0)
            child_key = atoi(v);
        else
            goto bad;
    }
    if (runs < 1)
        runs = 1;
    if (iters < 1)
        iters = 1;
    if (strcmp(mode, "spawn") == 0)
        mode = "replace";
    if (strcmp(mode, "ft") != 0 && strcmp(mode, "detect") != 0 && strcmp(mode, "replace") != 0)
        goto bad;
    return 0;
bad:
    usage(argv[0]);
    return -1;
}

/* ---- failure-free: Allreduce 8 B, Agree, Shrink ---- */

enum { OP_ALLREDUCE, OP_AGREE, OP_SHRINK };

/* Barrier, then this rank's mean time per call in microseconds. */
static double time_op(MPI_Comm c, int op, int n)
{
    int64_t in = 1, out = 0;
    int flag;
    MPI_Comm s;
    check(MPI_Barrier(c), "MPI_Barrier");
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        switch (op) {
        case OP_ALLREDUCE:
            check(MPI_Allreduce(&in, &out, 1, MPI_INT64_T, MPI_BAND, c), "MPI_Allreduce");
            break;
        case OP_AGREE:
            flag = 1;
            check(MPIX_Comm_agree(c, &flag), "MPIX_Comm_agree");
            break;
        case OP_SHRINK:
            check(MPIX_Comm_shrink(c, &s), "MPIX_Comm_shrink");
            check(MPI_Comm_free(&s), "MPI_Comm_free");
            break;
        }
    }
    return (now_s() - t0) * 1e6 / n;
}

static void failure_free(void)
{
    MPI_Comm c = MPI_COMM_WORLD;
    int rank, np;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &np);
    double *ar = calloc((size_t)runs, sizeof(double));
    double *ag = calloc((size_t)runs, sizeof(double));
    double *sh = calloc((size_t)runs, sizeof(double));
    if (!ar || !ag || !sh) {
        fprintf(stderr, "ulfm_ft: out of memory\n");
        MPI_Abort(c, 1);
    }
    int nshrink = iters / 20 > 0 ? iters / 20 : 1;
    for (int r = 0; r < runs; r++) {
        ar[r] = time_op(c, OP_ALLREDUCE, iters);
        ag[r] = time_op(c, OP_AGREE, iters);
        sh[r] = time_op(c, OP_SHRINK, nshrink);
    }
    if (rank == 0) {
        emit("ft_allreduce8", np, 8, median(ar, runs), "us", runs);
        emit("ft_agree", np, 0, median(ag, runs), "us", runs);
        emit("ft_shrink", np, 0, median(sh, runs), "us", runs);
    }
    free(ar);
    free(ag);
    free(sh);
}

/* ---- one failure ---- */

/* Broadcasts a kill instant 200 ms ahead; the last rank dies then, the
 * others block receiving from it. Returns (survivors only) the instant in
 * wall-clock ns and stores in *detect_ms when this rank's receive returned. */
static int64_t kill_and_wait(MPI_Comm c, double *detect_ms)
{
    int rank, np;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &np);
    int victim = np - 1;
    int64_t at = 0;
    if (rank == 0)
        at = wall_ns() + 200000000;
    check(MPI_Bcast(&at, 1, MPI_INT64_T, 0, c), "MPI_Bcast");
    if (rank == victim) {
        sleep_until_wall(at);
        kill(getpid(), SIGKILL);
        for (;;)
            pause();
    }
    char b;
    int rc = MPI_Recv(&b, 1, MPI_CHAR, victim, 99, c, MPI_STATUS_IGNORE);
    int64_t learned = wall_ns();
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "ulfm_ft: receive from the killed rank succeeded\n");
        MPI_Abort(c, 1);
    }
    *detect_ms = (double)(learned - at) / 1e6;
    return at;
}

/* Gathers k doubles per rank of s to its rank 0 and returns, there, the
 * maximum of each column over the ranks whose values are >= 0 (a spawned
 * child sends -1). */
static int gather_max(MPI_Comm s, const double *mine, int k, double *mx)
{
    int rank, n;
    MPI_Comm_rank(s, &rank);
    MPI_Comm_size(s, &n);
    double *all = NULL;
    if (rank == 0) {
        all = malloc(sizeof(double) * (size_t)(k * n));
        if (!all)
            MPI_Abort(s, 1);
    }
    check(MPI_Gather(mine, k, MPI_DOUBLE, all, k, MPI_DOUBLE, 0, s), "MPI_Gather");
    if (rank != 0)
        return 0;
    for (int j = 0; j < k; j++) {
        mx[j] = -1;
        for (int i = 0; i < n; i++)
            if (all[i * k + j] > mx[j])
                mx[j] = all[i * k + j];
    }
    free(all);
    return 1;
}

/* The acknowledged failed group of c must be exactly {victim} (untimed). */
static void check_acked(MPI_Comm c, int victim)
{
    MPI_Group failed, cg;
    int n = -1, tr = -1;
    check(MPIX_Comm_failure_ack(c), "MPIX_Comm_failure_ack");
    check(MPIX_Comm_failure_get_acked(c, &failed), "MPIX_Comm_failure_get_acked");
    MPI_Group_size(failed, &n);
    if (n == 1) {
        int zero = 0;
        MPI_Comm_group(c, &cg);
        MPI_Group_translate_ranks(failed, 1, &zero, cg, &tr);
        MPI_Group_free(&cg);
    }
    MPI_Group_free(&failed);
    if (n != 1 || tr != victim) {
        fprintf(stderr, "ulfm_ft: acked failures: %d processes (first: rank %d), want rank %d\n", n,
                tr, victim);
        MPI_Abort(c, 1);
    }
}

static void detect(void)
{
    MPI_Comm c = MPI_COMM_WORLD, s;
    int np, flag;
    MPI_Comm_size(c, &np);
    double m[4];
    kill_and_wait(c, &m[0]);
    double t0 = now_s();
    check(MPIX_Comm_revoke(c), "MPIX_Comm_revoke");
    check(MPIX_Comm_shrink(c, &s), "MPIX_Comm_shrink");
    m[1] = (now_s() - t0) * 1e3;
    MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
    double t1 = now_s();
    flag = 1;
    MPIX_Comm_agree(s, &flag); /* first agreement after the failure, new communicator */
    m[2] = (now_s() - t1) * 1e3;
    double t2 = now_s();
    flag = 1;
    MPIX_Comm_agree(c, &flag); /* on the communicator holding the dead rank: error expected */
    m[3] = (now_s() - t2) * 1e3;
    check_acked(c, np - 1);
    double mx[4];
    if (gather_max(s, m, 4, mx)) {
        emit("ft_detect_max", np, 0, mx[0], "ms", 1);
        emit("ft_revoke_shrink_max", np, 0, mx[1], "ms", 1);
        emit("ft_agree_after_failure_max", np, 0, mx[3], "ms", 1);
        emit("ft_agree_new_comm_max", np, 0, mx[2], "ms", 1);
    }
    MPI_Comm_free(&s);
}

/* The replacement recipe; returns the restored communicator. */
static void respawn(const char *self)
{
    MPI_Comm c = MPI_COMM_WORLD, s, inter, merged, restored;
    int rank, np;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &np);
    double m[6];
    int64_t at = kill_and_wait(c, &m[0]);
    double t0 = now_s();
    check(MPIX_Comm_revoke(c), "MPIX_Comm_revoke");
    check(MPIX_Comm_shrink(c, &s), "MPIX_Comm_shrink");
    MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
    double t1 = now_s();
    char key[16];
    snprintf(key, sizeof key, "%d", np - 1);
    char *args[] = {"-bench", "replace", "-child", "-key", key, NULL};
    check(MPI_Comm_spawn(self, args, 1, MPI_INFO_NULL, 0, s, &inter, MPI_ERRCODES_IGNORE),
          "MPI_Comm_spawn");
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    double t2 = now_s();
    check(MPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge");
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    double t3 = now_s();
    check(MPI_Comm_split(merged, 0, rank, &restored), "MPI_Comm_split");
    double t4 = now_s();
    int64_t done = wall_ns();
    MPI_Comm_set_errhandler(restored, MPI_ERRORS_RETURN);
    m[1] = (t1 - t0) * 1e3;
    m[2] = (t2 - t1) * 1e3;
    m[3] = (t3 - t2) * 1e3;
    m[4] = (t4 - t3) * 1e3;
    m[5] = (double)(done - at) / 1e6;
    int rr, rn;
    MPI_Comm_rank(restored, &rr);
    MPI_Comm_size(restored, &rn);
    if (rr != rank || rn != np) {
        fprintf(stderr, "ulfm_ft: restored communicator: rank %d of %d, want %d of %d\n", rr, rn,
                rank, np);
        MPI_Abort(restored, 1);
    }
    double mx[6];
    if (gather_max(restored, m, 6, mx)) {
        emit("ft_replace_detect_max", np, 0, mx[0], "ms", 1);
        emit("ft_replace_shrink_max", np, 0, mx[1], "ms", 1);
        emit("ft_replace_spawn_max", np, 0, mx[2], "ms", 1);
        emit("ft_replace_merge_max", np, 0, mx[3], "ms", 1);
        emit("ft_replace_split_max", np, 0, mx[4], "ms", 1);
        emit("ft_replace_total_max", np, 0, mx[5], "ms", 1);
    }
    MPI_Comm_free(&restored);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&s);
}

/* The replacement process: merge high, split to the victim's rank, join the
 * gather with no timings of its own. */
static void spawned_child(void)
{
    MPI_Comm parent, merged, restored;
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL || child_key < 0) {
        fprintf(stderr, "ulfm_ft: -child without a parent or -key\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    check(MPI_Intercomm_merge(parent, 1, &merged), "MPI_Intercomm_merge (child)");
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    check(MPI_Comm_split(merged, 0, child_key, &restored), "MPI_Comm_split (child)");
    MPI_Comm_set_errhandler(restored, MPI_ERRORS_RETURN);
    double none[6] = {-1, -1, -1, -1, -1, -1}, mx[6];
    gather_max(restored, none, 6, mx);
    MPI_Comm_free(&restored);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&parent);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (parse(argc, argv) != 0) {
        MPI_Finalize();
        return 2;
    }
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (child) {
        spawned_child();
    } else if (strcmp(mode, "ft") == 0) {
        failure_free();
    } else {
        if (np < 2) {
            fprintf(stderr, "ulfm_ft: %s needs at least 2 ranks\n", mode);
            MPI_Finalize();
            return 2;
        }
        if (strcmp(mode, "detect") == 0)
            detect();
        else
        {
            /* MPI_Comm_spawn needs a path the launcher can start as is. */
            static char self[4096];
            ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
            if (n <= 0) {
                fprintf(stderr, "ulfm_ft: readlink /proc/self/exe failed\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            self[n] = 0;
            respawn(self);
        }
    }
    MPI_Finalize();
    return 0;
}
