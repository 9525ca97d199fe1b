/* io_basic.c: MPI-IO from C at np 4. argv[1], argv[2]: two file paths
 * (shared by the ranks). A collective write through views with a
 * displacement per rank, read back whole as bytes and through a view of
 * the next rank's block; positions, byte offsets, sizes; nonblocking and
 * split collective accesses; the shared file pointer: write_ordered in
 * rank order, then write_shared in a token-passing order; errors: opening
 * a missing file returns MPI_ERR_NO_SUCH_FILE. argv[3]: a collective write
 * of a strided memory datatype through an interleaved filetype (blocks of 2
 * ints per rank), read back whole; a file error handler written in C. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int fh_calls = 0, fh_last = -1;
static MPI_File fh_seen = MPI_FILE_NULL;

static void file_errh(MPI_File *f, int *code, ...)
{
    fh_calls++;
    fh_last = *code;
    fh_seen = *f;
}

int main(int argc, char **argv)
{
    int rank, size, i, n = -1;
    MPI_File fh;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        printf("usage: io_basic path1 path2 path3\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int next = (rank + 1) % size;

    /* A missing file: MPI_ERR_NO_SUCH_FILE returned (MPI_FILE_NULL's handler). */
    int rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-ftmpi-dir/x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), cls = -1;
    MPI_Error_class(rc, &cls);
    printf("rank %d: missing class %d want %d\n", rank, cls, MPI_ERR_NO_SUCH_FILE);

    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_Errhandler eh;
    int amode = 0;
    MPI_File_get_errhandler(fh, &eh);
    MPI_File_get_amode(fh, &amode);

    /* Each rank's view starts at its block of 4 ints. */
    MPI_File_set_view(fh, (MPI_Offset)rank * 16, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    int w[4];
    for (i = 0; i < 4; i++)
        w[i] = 10 * rank + i;
    MPI_File_write_all(fh, w, 4, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    MPI_Offset pos = -1, boff = -1, fsize = -1;
    MPI_File_get_position(fh, &pos);
    MPI_File_get_byte_offset(fh, 2, &boff);
    MPI_File_sync(fh);
    MPI_File_get_size(fh, &fsize);
    printf("rank %d: wrote %d pos %lld byteoff %lld size %lld return %d amode %d\n", rank, n, (long long)pos,
           (long long)boff, (long long)fsize, eh == MPI_ERRORS_RETURN, amode == (MPI_MODE_CREATE | MPI_MODE_RDWR));

    /* Read the next rank's block through a view of it. */
    int r[4] = {-1, -1, -1, -1};
    MPI_File_set_view(fh, (MPI_Offset)next * 16, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    MPI_File_read_all(fh, r, 4, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    printf("rank %d: next block %d %d %d %d count %d\n", rank, r[0], r[1], r[2], r[3], n);
    if (rank == 0) {
        /* Reading past the end (etype 11 of the view at byte 16 is byte 60): fewer bytes. */
        char tail[8];
        MPI_File_read_at_c(fh, 11, tail, 8, MPI_BYTE, &st); /* the large-count form */
        MPI_Get_count(&st, MPI_BYTE, &n);
        printf("result: tail bytes %d\n", n);
    }

    /* Bytes view: rank 0 reads the whole file. */
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_Offset disp = -1;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_File_get_view(fh, &disp, &et, &ft, rep);
    if (rank == 0) {
        int all[16];
        MPI_File_read_at(fh, 0, all, 64, MPI_BYTE, &st);
        MPI_Get_count(&st, MPI_BYTE, &n);
        printf("result: file");
        for (i = 0; i < 16; i++)
            printf(" %d", all[i]);
        printf(" bytes %d view %lld %d %d %s\n", n, (long long)disp, et == MPI_BYTE, ft == MPI_BYTE, rep);
    }

    /* Nonblocking at explicit offsets, then a split collective. */
    MPI_Request req;
    int x = 1000 + rank, y = -1;
    MPI_File_iwrite_at(fh, 64 + 4 * rank, &x, 4, MPI_BYTE, &req);
    MPI_Wait(&req, &st);
    MPI_Get_count(&st, MPI_BYTE, &n);
    MPI_File_write_at_all_begin(fh, 80 + 4 * rank, &x, 4, MPI_BYTE);
    MPI_File_write_at_all_end(fh, &x, &st);
    MPI_File_sync(fh);
    MPI_File_iread_at(fh, 64 + 4 * next, &y, 4, MPI_BYTE, &req);
    MPI_Wait(&req, &st);
    int n2 = -1, z = -1;
    MPI_Get_count(&st, MPI_BYTE, &n2);
    MPI_File_read_at_all_begin(fh, 80 + 4 * next, &z, 4, MPI_BYTE);
    MPI_File_read_at_all_end(fh, &z, &st);
    printf("rank %d: nonblocking wrote %d read %d (%d) split %d\n", rank, n, y, n2, z);
    MPI_File_close(&fh);
    printf("rank %d: closed %d\n", rank, fh == MPI_FILE_NULL);

    /* The shared file pointer. */
    MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    char mine[8];
    memset(mine, 'a' + rank, sizeof mine);
    MPI_File_write_ordered(fh, mine, rank + 1, MPI_CHAR, &st);
    MPI_Offset sp = -1;
    int token = 0;
    if (rank > 0)
        MPI_Recv(&token, 1, MPI_INT, rank - 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    char tag[3];
    snprintf(tag, sizeof tag, "R%d", rank);
    MPI_File_write_shared(fh, tag, 2, MPI_CHAR, &st);
    MPI_File_get_position_shared(fh, &sp); /* the last rank's: 18 */
    if (rank < size - 1)
        MPI_Send(&token, 1, MPI_INT, rank + 1, 5, MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    char back[8] = {0};
    MPI_File_read_ordered(fh, back, rank + 1, MPI_CHAR, &st);
    MPI_Get_count(&st, MPI_CHAR, &n);
    printf("rank %d: ordered back %s %d\n", rank, back, n);
    if (rank == size - 1)
        printf("result: shared pos %lld\n", (long long)sp);
    MPI_File_sync(fh);
    if (rank == size - 1) {
        char whole[32] = {0};
        MPI_File_read_at(fh, 0, whole, 31, MPI_CHAR, &st);
        MPI_File_get_size(fh, &fsize);
        printf("result: shared %s size %lld\n", whole, (long long)fsize);
    }
    MPI_File_close(&fh);

    /* Interleaved view: rank r owns ints [2(b*size+r), +2) of block row b. */
    MPI_File_open(MPI_COMM_WORLD, argv[3], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_Errhandler feh;
    MPI_File_create_errhandler(file_errh, &feh);
    MPI_File_set_errhandler(fh, feh);
    MPI_Datatype pair, ftype, memv;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_create_resized(pair, 0, (MPI_Aint)(2 * size * sizeof(int)), &ftype);
    MPI_Type_commit(&ftype);
    MPI_Type_vector(3, 2, 4, MPI_INT, &memv);
    MPI_Type_commit(&memv);
    int m[12];
    for (i = 0; i < 12; i++)
        m[i] = (i % 4 < 2) ? 100 * rank + 2 * (i / 4) + i % 4 : -7;
    MPI_File_set_view(fh, (MPI_Offset)(rank * 2 * sizeof(int)), MPI_INT, ftype, "native", MPI_INFO_NULL);
    MPI_File_write_at_all(fh, 0, m, 1, memv, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    int mine6[6] = {-1, -1, -1, -1, -1, -1};
    MPI_File_sync(fh);
    MPI_File_read_at_all(fh, 0, mine6, 6, MPI_INT, &st);
    printf("rank %d: interleaved wrote %d back %d %d %d %d %d %d\n", rank, n, mine6[0], mine6[1], mine6[2], mine6[3],
           mine6[4], mine6[5]);
    rc = MPI_File_read_at(fh, -1, mine6, 1, MPI_INT, &st); /* negative offset: the handler */
    MPI_File_call_errhandler(fh, MPI_ERR_IO);
    printf("rank %d: file errh calls %d last %d same %d rc %d\n", rank, fh_calls, fh_last, fh_seen == fh, rc == MPI_ERR_ARG);
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    if (rank == 0) {
        int all[24];
        MPI_File_read_at(fh, 0, all, 24, MPI_INT, &st);
        printf("result: interleaved");
        for (i = 0; i < 24; i++)
            printf(" %d", all[i]);
        printf("\n");
    }
    MPI_Type_free(&pair);
    MPI_Type_free(&ftype);
    MPI_Type_free(&memv);
    MPI_File_close(&fh);
    MPI_Errhandler_free(&feh);
    MPI_Finalize();
    return 0;
}
