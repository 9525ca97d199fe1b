/* threads.c: MPI_THREAD_MULTIPLE from many C threads. Every rank runs
 * NT threads; thread t of rank r exchanges ITERS messages with thread t of
 * the partner rank on tag t (blocking sends and receives from all threads at
 * once) and sums what it received. Rank 0 checks the sums. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define NT 4
#define ITERS 200

static int rank, size;
static long sums[NT];

static void *worker(void *arg)
{
    int t = (int)(long)arg, peer = rank ^ 1;
    long sum = 0;
    for (int i = 0; i < ITERS; i++) {
        int out = rank * 100000 + t * 1000 + i, in = -1;
        if (rank < peer) {
            MPI_Send(&out, 1, MPI_INT, peer, t, MPI_COMM_WORLD);
            MPI_Recv(&in, 1, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&in, 1, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&out, 1, MPI_INT, peer, t, MPI_COMM_WORLD);
        }
        sum += in;
    }
    sums[t] = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE || size % 2 != 0) {
        printf("provided %d size %d\n", provided, size);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    pthread_t th[NT];
    for (long t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    int ok = 1, peer = rank ^ 1;
    for (int t = 0; t < NT; t++) {
        long want = 0;
        for (int i = 0; i < ITERS; i++)
            want += peer * 100000 + t * 1000 + i;
        ok = ok && sums[t] == want;
    }
    int main_flag = 0;
    MPI_Is_thread_main(&main_flag);
    /* Every rank reports to rank 0 (point-to-point only). */
    if (rank == 0) {
        int all = ok;
        for (int r = 1; r < size; r++) {
            int v = 0;
            MPI_Recv(&v, 1, MPI_INT, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            all = all && v;
        }
        printf("result: threads %d ranks %d ok %d main %d\n", NT, size, all, main_flag);
    } else {
        MPI_Send(&ok, 1, MPI_INT, 0, 99, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
