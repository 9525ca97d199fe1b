/* ft_ompi_style.c: a program written as for Open MPI's ULFM (mpi-ext.h, the
 * MPIX_ names and error classes, MPI_ERRORS_RETURN, rc == MPIX_ERR_...
 * checks), in the pattern of seed 002 A.5.2: every iteration exchanges the
 * ranks' partial sums (point to point, each with each), agrees on its
 * success, and on a failure revokes, acknowledges, shrinks and redoes the
 * iteration on the survivors. The work of an iteration is split over the
 * live ranks, so the total is the same whoever dies.
 *
 * Prints "ompi: iteration N committed" (rank 0) after each iteration, the
 * recovery lines, and one result line from the lowest surviving rank. */
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>

#if !defined(OMPI_HAVE_MPI_EXT_FTMPI) || !defined(MPIX_ERR_PROC_FAILED) || !defined(MPIX_ERR_REVOKED) || !defined(MPIX_ERR_PROC_FAILED_PENDING)
#error "no ULFM extension"
#endif

#define ITERS 100
#define WORK 1000

/* part sums the terms i*iter (mod 1000003) of [0, WORK) that rank r of n owns. */
static long long part(int iter, int r, int n)
{
    long long s = 0;
    for (int i = r; i < WORK; i += n)
        s += ((long long)i * (iter + 1)) % 1000003;
    return s;
}

/* allsum sums v over comm, each rank sending to and receiving from each. */
static int allsum(MPI_Comm comm, long long v, long long *sum)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long long *in = calloc((size_t)size, sizeof *in);
    MPI_Request *rq = calloc((size_t)(2 * size), sizeof *rq);
    int k = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        MPI_Irecv(&in[p], 1, MPI_LONG_LONG, p, 7, comm, &rq[k++]);
        MPI_Isend(&v, 1, MPI_LONG_LONG, p, 7, comm, &rq[k++]);
    }
    int rc = MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
    if (rc == MPI_ERR_IN_STATUS)
        rc = MPIX_ERR_PROC_FAILED;
    for (int i = 0; i < k; i++)
        if (rq[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&rq[i]);
    *sum = v;
    for (int p = 0; p < size; p++)
        if (p != rank)
            *sum += in[p];
    free(in);
    free(rq);
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm comm = MPI_COMM_WORLD;
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    long long total = 0;
    int recoveries = 0, revoked_seen = 0, failed_seen = 0;
    for (int iter = 0; iter < ITERS;) {
        int rank, size;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        long long sum;
        int rc = allsum(comm, part(iter, rank, size), &sum);
        if (rc == MPIX_ERR_PROC_FAILED)
            failed_seen = 1;
        if (rc == MPIX_ERR_REVOKED)
            revoked_seen = 1;
        if (rc == MPIX_ERR_PROC_FAILED)
            MPIX_Comm_revoke(comm);
        int ok = (rc == MPI_SUCCESS);
        rc = MPIX_Comm_agree(comm, &ok);
        if (rc != MPI_SUCCESS && rc != MPIX_ERR_PROC_FAILED) {
            fprintf(stderr, "rank %d: MPIX_Comm_agree: %d\n", wrank, rc);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (!ok) {
            int flag = 0;
            MPIX_Comm_revoke(comm);
            MPIX_Comm_is_revoked(comm, &flag);
            MPIX_Comm_failure_ack(comm);
            MPI_Group failed;
            int nfailed = 0;
            MPIX_Comm_failure_get_acked(comm, &failed);
            MPI_Group_size(failed, &nfailed);
            MPI_Group_free(&failed);
            MPI_Comm newcomm;
            rc = MPIX_Comm_shrink(comm, &newcomm);
            if (rc != MPI_SUCCESS) {
                fprintf(stderr, "rank %d: MPIX_Comm_shrink: %d\n", wrank, rc);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            if (comm != MPI_COMM_WORLD)
                MPI_Comm_free(&comm);
            comm = newcomm;
            MPI_Comm_rank(comm, &rank);
            MPI_Comm_size(comm, &size);
            recoveries++;
            if (rank == 0)
                printf("ompi: recovery %d at iteration %d: revoked %d acked %d, %d ranks left\n", recoveries, iter, flag, nfailed, size);
            continue; /* redo the iteration on the survivors */
        }
        total += sum;
        if (rank == 0)
            printf("ompi: iteration %d committed\n", iter);
        iter++;
    }
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank == 0) {
        printf("ompi: rank %d saw proc_failed %d revoked %d; %d ranks\n", wrank, failed_seen, revoked_seen, size);
        printf("result: ompi-style total %lld iterations %d\n", total, ITERS);
    }
    if (comm != MPI_COMM_WORLD)
        MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
