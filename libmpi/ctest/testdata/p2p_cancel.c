/* MPI_Cancel of sends (MPI-4.1 3.8.4): an unmatched send of any mode is
 * cancelled (MPI_Test_cancelled true, the receiver never gets it), a
 * matched one completes normally; eager and rendezvous sizes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs;

static void check(const char *what, int size, MPI_Request *req, int want)
{
    MPI_Status st;
    int flag = -1;
    MPI_Cancel(req);
    MPI_Wait(req, &st);
    MPI_Test_cancelled(&st, &flag);
    if (flag != want) {
        errs++;
        printf("%s of %d bytes: cancelled %d, want %d\n", what, size, flag, want);
    }
}

int main(int argc, char **argv)
{
    static const int sizes[2] = {4, 200000};
    int rank, size, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 0; i < 2; i++) {
        int n = sizes[i], flag;
        char *buf = calloc((size_t)n, 1), *got = calloc((size_t)n, 1);
        MPI_Request req, rr;
        MPI_Status st;
        if (rank == 0) {
            char *bbuf = malloc((size_t)n + MPI_BSEND_OVERHEAD);
            void *detached;
            int bsize;
            buf[0] = 'm';
            MPI_Isend(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &req);
            check("MPI_Isend", n, &req, 1);
            MPI_Issend(buf, n, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req);
            check("MPI_Issend", n, &req, 1);
            MPI_Send_init(buf, n, MPI_CHAR, 1, 3, MPI_COMM_WORLD, &req);
            MPI_Start(&req);
            check("MPI_Send_init", n, &req, 1);
            MPI_Request_free(&req);
            MPI_Buffer_attach(bbuf, n + MPI_BSEND_OVERHEAD);
            MPI_Ibsend(buf, n, MPI_CHAR, 1, 4, MPI_COMM_WORLD, &req);
            check("MPI_Ibsend", n, &req, 1);
            MPI_Bsend_init(buf, n, MPI_CHAR, 1, 4, MPI_COMM_WORLD, &req);
            MPI_Start(&req);
            check("MPI_Bsend_init", n, &req, 1);
            MPI_Request_free(&req);
            MPI_Buffer_detach(&detached, &bsize);
            free(bbuf);
            MPI_Barrier(MPI_COMM_WORLD); /* rank 1's receive of tag 5 is posted */
            MPI_Isend(buf, n, MPI_CHAR, 1, 5, MPI_COMM_WORLD, &req);
            if (n <= 1024)
                check("matched MPI_Isend", n, &req, 0);
            else
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Send(buf, n, MPI_CHAR, 1, 9, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Irecv(got, n, MPI_CHAR, 0, 5, MPI_COMM_WORLD, &rr);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&rr, &st);
            MPI_Test_cancelled(&st, &flag);
            if (flag || got[0] != 'm') {
                errs++;
                printf("matched receive of %d bytes: cancelled %d, data %d\n", n, flag, got[0]);
            }
            MPI_Recv(got, n, MPI_CHAR, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            /* Every cancelled send was answered before tag 9 left. */
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
            if (flag) {
                errs++;
                printf("a cancelled message of %d bytes was left (tag %d)\n", n, st.MPI_TAG);
            }
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        free(buf);
        free(got);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* MPICH's scancel_unmatch: cancelling the second of two sends with one
     * envelope leaves the first for the receive. */
    if (rank == 0) {
        int a = 10, b = 20;
        MPI_Request r[2];
        MPI_Isend(&a, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&b, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r[1]);
        check("second of two MPI_Isend", 4, &r[1], 1);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    } else {
        int a = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            MPI_Recv(&a, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (a != 10) {
                errs++;
                printf("received %d, want 10\n", a);
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("result: errors %d\n", errs);
    MPI_Finalize();
    return 0;
}
