/* refinement.c: seed 002 A.5.2 (iterative refinement) in C. Jacobi
 * iterations solve the tridiagonal system 2.5x_i - x_{i-1} - x_{i+1} = b_i;
 * every rank keeps the whole vector and computes the rows it owns (i mod
 * size). Each iteration an MPI_Allreduce assembles the vector and another
 * the norm of the change. On a failure, as A.5.2 does: revoke, agree on
 * whether everybody succeeded, shrink, free the revoked communicator and
 * force one more iteration; the survivors share the rows of the dead.
 *
 *   ftmpicc -o refinement examples/c/refinement.c
 *   ftmpirun -n 4 --on-failure continue --inject 'kill:rank=2,on=iteration 10' ./refinement
 *
 * The lowest surviving rank prints the result, the same as without a
 * failure (the iteration converges to the same solution). */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 2000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    static double x[N], xn[N], mine[N];
    for (int i = 0; i < N; i++)
        x[i] = 0.0;
    const double epsilon = 1e-12;
    double gnorm = epsilon + 1.0;
    int iter = 0, recoveries = 0;
    while (gnorm > epsilon) {
        int rank, size;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        /* A computation iteration on the rows this rank owns. */
        double lnorm = 0.0;
        memset(mine, 0, sizeof mine);
        for (int i = rank; i < N; i += size) {
            double l = i > 0 ? x[i - 1] : 0.0, r = i < N - 1 ? x[i + 1] : 0.0;
            mine[i] = (1.0 + i % 7 + l + r) / 2.5;
            lnorm = fmax(lnorm, fabs(mine[i] - x[i]));
        }
        int rc = MPI_Allreduce(mine, xn, N, MPI_DOUBLE, MPI_SUM, comm);
        if (rc == MPI_SUCCESS)
            rc = MPI_Allreduce(&lnorm, &gnorm, 1, MPI_DOUBLE, MPI_MAX, comm);
        if (rc == MPI_SUCCESS)
            memcpy(x, xn, sizeof x);
        iter++;
        if (rank == 0 && iter % 5 == 0)
            printf("refinement: iteration %d\n", iter);

        if (rc == MPI_ERR_PROC_FAILED || rc == MPI_ERR_REVOKED || gnorm <= epsilon) {
            if (rc == MPI_ERR_PROC_FAILED)
                MPI_Comm_revoke(comm);
            /* About to leave: be sure that everybody received the same
             * information. */
            int allsucceeded = (rc == MPI_SUCCESS);
            MPI_Comm_agree(comm, &allsucceeded);
            if (!allsucceeded) {
                /* We plan to join the shrink, thus the communicator
                 * should be marked as revoked. */
                MPI_Comm_revoke(comm);
                MPI_Comm comm2;
                if (MPI_Comm_shrink(comm, &comm2) != MPI_SUCCESS) {
                    fprintf(stderr, "refinement: MPI_Comm_shrink failed\n");
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                /* Release the revoked communicator. */
                MPI_Comm_free(&comm);
                comm = comm2;
                recoveries++;
                MPI_Comm_rank(comm, &rank);
                MPI_Comm_size(comm, &size);
                if (rank == 0)
                    printf("refinement: recovery %d after iteration %d: %d ranks left\n", recoveries, iter, size);
                /* Force one more iteration. */
                gnorm = epsilon + 1.0;
            }
        } else if (rc != MPI_SUCCESS) {
            fprintf(stderr, "refinement: unexpected error %d\n", rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        double sum = 0.0;
        for (int i = 0; i < N; i++)
            sum += x[i];
        printf("result: refinement n=%d sum=%.6f x[n/2]=%.6f\n", N, sum, x[N / 2]);
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
