/* masterworker.c: seed 002 A.5.1 (master/worker) in C. Rank 0 hands out
 * tasks, collects the answers with an MPI_ANY_SOURCE MPI_Irecv, and on a
 * worker's failure acknowledges it (MPI_Comm_failure_ack), finds the lost
 * workers in the acknowledged group and requeues their tasks; the receive
 * is reposted only when it was the one that failed (MPI_ERR_PROC_FAILED),
 * and kept when it is still pending (MPI_ERR_PROC_FAILED_PENDING; seed
 * 002 calls it MPI_ERR_PENDING).
 *
 *   ftmpicc -o masterworker examples/c/masterworker.c
 *   ftmpirun -n 4 --on-failure continue --inject 'kill:rank=2,on=20 tasks done' ./masterworker
 *
 * The master prints the result, the same as without a failure. */
#define _POSIX_C_SOURCE 200809L
#include <mpi-ext.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define TASKS 150
#define TAG_WORK 1
#define TAG_STOP 2
#define TAG_ANSWER 3

/* work is the task's answer (a little computation). */
static long long work(long long task)
{
    long long s = 0;
    for (long long i = 0; i < 200000; i++)
        s += (i * (task + 1)) % 1009;
    return s;
}

static void worker(MPI_Comm comm)
{
    for (;;) {
        long long task;
        MPI_Status st;
        if (MPI_Recv(&task, 1, MPI_LONG_LONG, 0, MPI_ANY_TAG, comm, &st) != MPI_SUCCESS || st.MPI_TAG == TAG_STOP)
            return;
        long long answer[2] = {task, work(task)};
        if (MPI_Send(answer, 2, MPI_LONG_LONG, 0, TAG_ANSWER, comm) != MPI_SUCCESS)
            return;
    }
}

/* wait completes req as MPI_Wait does. It tests instead because ftmpi's
 * C MPI_Wait frees a receive that is still pending after
 * MPI_ERR_PROC_FAILED_PENDING (libmpi/p2p.go), where MPI_Test keeps it. */
static int wait(MPI_Request *req, MPI_Status *status)
{
    int flag = 0, rc;
    while ((rc = MPI_Test(req, &flag, status)) == MPI_SUCCESS && !flag)
        sched_yield();
    return rc;
}

static int master(MPI_Comm comm)
{
    int size;
    MPI_Comm_size(comm, &size);
    long long *busy = malloc((size_t)size * sizeof *busy); /* the task a worker holds, or -1 */
    int *dead = calloc((size_t)size, sizeof *dead);
    int finished[TASKS] = {0};
    long long queue[TASKS];
    int qlen = 0, done_count = 0, active_workers = 0, failures = 0;
    for (long long t = TASKS - 1; t >= 0; t--)
        queue[qlen++] = t;
    long long total = 0;

    /* Submit the initial work requests. */
    for (int w = 1; w < size; w++) {
        busy[w] = -1;
        if (qlen > 0 && MPI_Send(&queue[qlen - 1], 1, MPI_LONG_LONG, w, TAG_WORK, comm) == MPI_SUCCESS) {
            busy[w] = queue[--qlen];
            active_workers++;
        }
    }
    long long answer[2];
    MPI_Request req;
    MPI_Status status;
    MPI_Irecv(answer, 2, MPI_LONG_LONG, MPI_ANY_SOURCE, TAG_ANSWER, comm, &req);

    /* Progress engine: get answers, send new requests, and handle process
     * failures. */
    while (active_workers > 0 && done_count < TASKS) {
        int rc = wait(&req, &status);
        if (rc == MPIX_ERR_PROC_FAILED || rc == MPIX_ERR_PROC_FAILED_PENDING || rc == MPI_ERR_PENDING) {
            MPI_Group g, all;
            int gsize;
            MPIX_Comm_failure_ack(comm);
            MPIX_Comm_failure_get_acked(comm, &g);
            MPI_Group_size(g, &gsize);
            /* Find the lost work and requeue it. */
            MPI_Comm_group(comm, &all);
            int *in = malloc((size_t)gsize * sizeof *in), *out = malloc((size_t)gsize * sizeof *out);
            for (int i = 0; i < gsize; i++)
                in[i] = i;
            MPI_Group_translate_ranks(g, gsize, in, all, out);
            for (int i = 0; i < gsize; i++) {
                int w = out[i];
                if (w <= 0 || dead[w])
                    continue;
                dead[w] = 1;
                failures++;
                if (busy[w] >= 0)
                    queue[qlen++] = busy[w];
                busy[w] = -1;
                printf("masterworker: worker %d failed; requeued its task (%s)\n", w,
                       rc == MPIX_ERR_PROC_FAILED ? "MPIX_ERR_PROC_FAILED" : rc == MPI_ERR_PENDING ? "MPI_ERR_PENDING" : "MPIX_ERR_PROC_FAILED_PENDING");
            }
            free(in);
            free(out);
            MPI_Group_free(&all);
            active_workers = size - gsize - 1;
            MPI_Group_free(&g);
            /* Repost the request if it matched the failed process. */
            if (rc == MPIX_ERR_PROC_FAILED)
                MPI_Irecv(answer, 2, MPI_LONG_LONG, MPI_ANY_SOURCE, TAG_ANSWER, comm, &req);
            /* Give the requeued tasks to idle live workers. */
            for (int w = 1; w < size && qlen > 0; w++)
                if (!dead[w] && busy[w] < 0 && MPI_Send(&queue[qlen - 1], 1, MPI_LONG_LONG, w, TAG_WORK, comm) == MPI_SUCCESS)
                    busy[w] = queue[--qlen];
            continue;
        }
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "masterworker: MPI_Wait: %d\n", rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        /* Process the answer and update the work available. */
        int w = status.MPI_SOURCE;
        busy[w] = -1;
        if (!finished[answer[0]]) { /* a requeued task may come back twice */
            finished[answer[0]] = 1;
            total += answer[1];
            done_count++;
        }
        if (done_count % 10 == 0)
            printf("masterworker: %d tasks done\n", done_count);
        if (qlen > 0 && MPI_Send(&queue[qlen - 1], 1, MPI_LONG_LONG, w, TAG_WORK, comm) == MPI_SUCCESS)
            busy[w] = queue[--qlen];
        if (done_count < TASKS)
            MPI_Irecv(answer, 2, MPI_LONG_LONG, MPI_ANY_SOURCE, TAG_ANSWER, comm, &req);
    }
    /* Stop the live workers, clean up. */
    long long none = -1;
    for (int w = 1; w < size; w++)
        if (!dead[w])
            MPI_Send(&none, 1, MPI_LONG_LONG, w, TAG_STOP, comm);
    printf("masterworker: %d worker failures\n", failures);
    printf("result: masterworker tasks=%d total=%lld\n", done_count, total);
    free(busy);
    free(dead);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        master(comm);
    else
        worker(comm);
    MPI_Finalize();
    return 0;
}
