/* runthrough.c: run-through stabilization (seed 003, chapter 17) in C,
 * after its examples 17.7 (broadcasts in recovery blocks, redone when
 * MPI_Comm_validate finds a new failure) and 17.5/17.6 (MPI_ANY_SOURCE
 * receives re-enabled by MPI_Comm_reenable_any_source). Failed processes
 * stay in the communicator; collectives skip the recognized ones.
 *
 *   ftmpicc -o runthrough examples/c/runthrough.c
 *   ftmpirun -n 4 --on-failure continue --inject 'kill:rank=2,on=block 20 done' ./runthrough
 *
 * Rank 0 (the root, which must survive) prints the result, the same as
 * without a failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 150

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rank, comm_size, ret, idx = 1, redone = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &comm_size);

    /* Example 17.7: get a starting set of failures. */
    MPI_Group failed_grp[2];
    MPI_Comm_validate(comm, &failed_grp[0]);
    long long sum = 0;
    for (int offset = 0; offset < BLOCKS; ++offset) {
        long long block = 0;
        for (int i = 0; i < comm_size; ++i) {
            int buffer = offset + i;
            ret = MPI_Bcast(&buffer, 1, MPI_INT, 0, comm);
            if (ret == MPI_ERR_RANK_FAIL_STOP)
                break; /* some rank failed during the broadcast */
            block += buffer;
        }
        MPI_Comm_validate(comm, &failed_grp[idx]);
        MPI_Group_compare(failed_grp[(idx + 1) % 2], failed_grp[idx], &ret);
        idx = (idx + 1) % 2;
        MPI_Group_free(&failed_grp[idx]);
        /* Handle any new failures and continue. */
        if (ret != MPI_IDENT) {
            if (rank == 0)
                printf("runthrough: some process failed in block %d, trying again\n", offset);
            redone++;
            offset--; /* redo the last set of broadcasts */
            continue;
        }
        sum += block;
        if (rank == 0 && (offset + 1) % 10 == 0)
            printf("runthrough: block %d done\n", offset + 1);
    }
    MPI_Group_free(&failed_grp[(idx + 1) % 2]);

    /* Collectives skip the recognized failed processes: the live ranks
     * check that they all got the same sum. */
    int active = 0;
    MPI_Comm_collectives_enabled(comm, &active);
    long long lo = sum, hi = sum, glo, ghi;
    ret = MPI_Allreduce(&lo, &glo, 1, MPI_LONG_LONG, MPI_MIN, comm);
    if (ret == MPI_SUCCESS)
        ret = MPI_Allreduce(&hi, &ghi, 1, MPI_LONG_LONG, MPI_MAX, comm);
    if (ret != MPI_SUCCESS) {
        fprintf(stderr, "runthrough: rank %d: MPI_Allreduce: %d\n", rank, ret);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* Examples 17.5/17.6: the clients send their sums to rank 0, which
     * receives from MPI_ANY_SOURCE until every live client answered;
     * wildcard receives are disabled by a new failure until
     * MPI_Comm_reenable_any_source. */
    if (rank == 0) {
        int *answered = calloc((size_t)comm_size, sizeof *answered), got = 0, nfailed = 0;
        MPI_Group failed, all;
        MPI_Comm_group(comm, &all);
        for (;;) {
            MPI_Comm_reenable_any_source(comm, &failed);
            MPI_Group_size(failed, &nfailed);
            /* Count the clients that are alive and have not answered. */
            int waiting = 0;
            for (int p = 1; p < comm_size; p++) {
                int out;
                MPI_Group_translate_ranks(all, 1, &p, failed, &out);
                if (out == MPI_UNDEFINED && !answered[p])
                    waiting++;
            }
            MPI_Group_free(&failed);
            if (waiting == 0)
                break;
            long long v;
            MPI_Status st;
            ret = MPI_Recv(&v, 1, MPI_LONG_LONG, MPI_ANY_SOURCE, 9, comm, &st);
            if (ret == MPI_ERR_RANK_FAIL_STOP)
                continue; /* something failed: check whether we can continue */
            if (ret != MPI_SUCCESS) {
                fprintf(stderr, "runthrough: MPI_Recv: %d\n", ret);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            if (v != sum)
                printf("runthrough: client %d has sum %lld, want %lld\n", st.MPI_SOURCE, v, sum);
            answered[st.MPI_SOURCE] = 1;
            got++;
        }
        MPI_Group_free(&all);
        printf("runthrough: %d clients answered, %d failed, %d blocks redone, collectives enabled %d\n", got, nfailed, redone, active);
        printf("result: runthrough blocks=%d sum=%lld agreed=%d\n", BLOCKS, sum, glo == ghi && glo == sum);
        free(answered);
    } else {
        MPI_Send(&sum, 1, MPI_LONG_LONG, 0, 9, comm);
    }
    MPI_Finalize();
    return 0;
}
