/* coll_mismatch.c: members passing different counts, operations or
 * signatures to one collective get an error (the class naming what
 * differs) under MPI_ERRORS_RETURN instead of a crash or a hang, and the
 * communicator stays usable. */
#include <mpi.h>
#include <stdio.h>
static void dummy(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in, (void)inout, (void)len, (void)dt;
}

int main(int argc, char **argv)
{
    int rank, v[8] = {0}, w[8] = {0}, rc, cls, len;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Bcast(v, rank == 0 ? 2 : 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls); MPI_Error_string(rc, msg, &len);
    printf("rank %d bcast-count rc %d: %s\n", rank, cls, rc ? msg : "");
    rc = MPI_Allreduce(v, w, 2, MPI_INT, rank == 1 ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls); MPI_Error_string(rc, msg, &len);
    printf("rank %d allreduce-op rc %d: %s\n", rank, cls, rc ? msg : "");
    rc = MPI_Gather(v, 2, MPI_INT, w, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls); MPI_Error_string(rc, msg, &len);
    printf("rank %d gather-sig rc %d: %s\n", rank, cls, rc ? msg : "");
    rc = MPI_Allreduce(v, w, 1, rank == 2 ? MPI_DOUBLE : MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls); MPI_Error_string(rc, msg, &len);
    printf("rank %d allreduce-type rc %d: %s\n", rank, cls, rc ? msg : "");
    MPI_Op op;
    MPI_Op_create(dummy, 1, &op);
    rc = MPI_Reduce(v, w, 1, MPI_INT, rank == 1 ? op : MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Op_free(&op);
    MPI_Error_class(rc, &cls); MPI_Error_string(rc, msg, &len);
    printf("rank %d reduce-userop rc %d: %s\n", rank, cls, rc ? msg : "");
    int one = 1, s = 0;
    rc = MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d after rc %d sum %d\n", rank, rc, s);
    MPI_Finalize();
    return 0;
}
