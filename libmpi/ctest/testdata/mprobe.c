/* mprobe.c: matched probes from C: MPI_Mprobe and MPI_Improbe take a
 * message out of matching, MPI_Mrecv and MPI_Imrecv receive exactly it;
 * a matched probe of MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        int a[3] = {1, 2, 3}, b[2] = {7, 8};
        MPI_Send(a, 3, MPI_INT, 1, 5, MPI_COMM_WORLD);
        MPI_Send(b, 2, MPI_INT, 1, 6, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Message m1, m2, m3;
        MPI_Status st;
        int a[3] = {0}, b[2] = {0}, n = -1, flag = 0;
        MPI_Mprobe(0, 5, MPI_COMM_WORLD, &m1, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        MPI_Mrecv(a, 3, MPI_INT, &m1, MPI_STATUS_IGNORE);
        while (!flag)
            MPI_Improbe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m2, &st);
        MPI_Request r;
        MPI_Imrecv(b, 2, MPI_INT, &m2, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m3, &st);
        int noproc = m3 == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL;
        MPI_Mrecv(NULL, 0, MPI_INT, &m3, &st);
        printf("result: mprobe count %d a %d %d %d tag %d b %d %d nulled %d noproc %d\n", n, a[0], a[1], a[2], st.MPI_TAG,
               b[0], b[1], m1 == MPI_MESSAGE_NULL && m2 == MPI_MESSAGE_NULL, noproc);
    }
    MPI_Finalize();
    return 0;
}
