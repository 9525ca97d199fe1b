/* io_datarep.c: data representations and view typemaps from C at np 2.
 * argv[1]: a file path shared by the ranks. Each rank writes two ints
 * collectively through an "external32" view (MPI-4.1 14.5.2: big-endian);
 * MPI_File_get_view names the representation; a "native" view of bytes
 * sees the big-endian bytes; an "external32" read restores the ints; an
 * unknown representation is MPI_ERR_UNSUPPORTED_DATAREP; a filetype with a
 * negative displacement is MPI_ERR_IO (MPICH's io/tst_fileview). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, cls = -1, i;
    MPI_File fh;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2) {
        printf("usage: io_datarep path\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);

    int rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL);
    MPI_Error_class(rc, &cls);
    printf("rank %d: unknown datarep class %d want %d\n", rank, cls, MPI_ERR_UNSUPPORTED_DATAREP);

    int blen[2] = {1, 1}, disp[2] = {-2, 2};
    MPI_Datatype neg;
    MPI_Type_indexed(2, blen, disp, MPI_INT, &neg);
    MPI_Type_commit(&neg);
    rc = MPI_File_set_view(fh, 0, MPI_INT, neg, "native", MPI_INFO_NULL);
    MPI_Error_class(rc, &cls);
    printf("rank %d: negative filetype class %d want %d\n", rank, cls, MPI_ERR_IO);
    MPI_Type_free(&neg);

    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL);
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_Offset d;
    MPI_Datatype et, ft;
    MPI_File_get_view(fh, &d, &et, &ft, rep);
    printf("rank %d: view datarep %s\n", rank, rep);
    int w[2] = {0x01020304 + rank, -2};
    MPI_File_write_at_all(fh, 2 * rank, w, 2, MPI_INT, &st);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int r[2] = {0, 0};
    MPI_File_read_at_all(fh, 2 * (1 - rank), r, 2, MPI_INT, &st);
    printf("rank %d: external32 back %x %d\n", rank, (unsigned) r[0], r[1]);

    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    if (rank == 0) {
        unsigned char b[16];
        MPI_File_read_at(fh, 0, b, 16, MPI_BYTE, &st);
        printf("result: bytes");
        for (i = 0; i < 16; i++)
            printf(" %02x", b[i]);
        printf("\n");
    }
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
