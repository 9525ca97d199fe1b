/* mprobe.c: matched probes from C: MPI_Mprobe and MPI_Improbe take a
 * message out of matching, MPI_Mrecv and MPI_Imrecv receive exactly it;
 * a matched probe of MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC; a
 * non-contiguous receive datatype (a vector) is laid out by Mrecv and
 * Imrecv alike. */
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
        int v[4] = {11, 12, 13, 14};
        MPI_Send(v, 4, MPI_INT, 1, 7, MPI_COMM_WORLD);
        MPI_Send(v, 4, MPI_INT, 1, 8, MPI_COMM_WORLD);
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
        int tag = st.MPI_TAG;
        /* Two blocks of two ints, stride 3: 11 12 _ 13 14 */
        MPI_Datatype vec;
        MPI_Type_vector(2, 2, 3, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int v1[5] = {0}, v2[5] = {0}, vn = -1;
        MPI_Mprobe(0, 7, MPI_COMM_WORLD, &m1, &st);
        MPI_Mrecv(v1, 1, vec, &m1, &st);
        MPI_Get_count(&st, vec, &vn);
        MPI_Mprobe(0, 8, MPI_COMM_WORLD, &m2, &st);
        MPI_Imrecv(v2, 1, vec, &m2, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Type_free(&vec);
        printf("result: mprobe count %d a %d %d %d tag %d b %d %d nulled %d noproc %d\n", n, a[0], a[1], a[2], tag,
               b[0], b[1], m1 == MPI_MESSAGE_NULL && m2 == MPI_MESSAGE_NULL, noproc);
        printf("result: vector %d %d %d %d %d count %d imrecv %d %d %d %d %d\n", v1[0], v1[1], v1[2], v1[3], v1[4], vn,
               v2[0], v2[1], v2[2], v2[3], v2[4]);
    }
    MPI_Finalize();
    return 0;
}
