/*
 * io: collective file bandwidth, the C side of `ftmpi-bench -bench io`
 * (cmd/ftmpi-bench/io.go). Every rank owns S bytes of one shared file in
 * the directory -dir (default /tmp), S = 64 KiB, 1 MiB, 16 MiB (sizes
 * outside -min..-max are skipped); reported: the aggregate bandwidth in
 * MB/s (np*S bytes / time), the median over -runs repetitions:
 *
 *   io-write          MPI_File_write_at_all of a contiguous block per rank
 *                     (rank r at byte r*S), then MPI_File_sync;
 *   io-read           MPI_File_read_at_all of the same blocks;
 *   io-strided-write  MPI_File_write_at_all through a view of 4 KiB blocks
 *                     of every rank interleaved in rank order (a vector
 *                     filetype resized to np*4 KiB), then MPI_File_sync:
 *                     the case two-phase collective buffering is for.
 *
 * The file is deleted at the end. Flags: those of common.h, plus -dir DIR.
 */
#include <unistd.h>

#include "common.h"

#define STRIDE_BLOCK 4096L

static double timed(int strided, int write, MPI_File fh, char *buf, long size, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Offset off = strided ? 0 : (MPI_Offset)rank * size;
    if (write) {
        MPI_File_write_at_all(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
    } else {
        MPI_File_read_at_all(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    /* Take -dir out of argv; common.h parses the rest. */
    const char *dir = "/tmp";
    int ac = 1;
    for (int i = 1; i < argc; i++) {
        const char *f = bench_flag_name(argv[i]);
        if (f != NULL && strcmp(f, "dir") == 0 && i + 1 < argc) {
            dir = argv[++i];
            continue;
        }
        argv[ac++] = argv[i];
    }
    bench_opts o;
    if (bench_parse(ac, argv, &o, 16L << 20) != 0)
        MPI_Abort(MPI_COMM_WORLD, 2);

    char path[4096];
    snprintf(path, sizeof path, "%s/ftmpi-bench-io-%s-%d.dat", dir, o.impl, (int)getpid());
    MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    double *res = malloc(sizeof(double) * (size_t)o.runs);
    long sizes[] = {64L << 10, 1L << 20, 16L << 20};
    for (int s = 0; s < 3; s++) {
        long size = sizes[s];
        if (size < o.min || size > o.max)
            continue;
        char *buf = bench_alloc((size_t)size);
        const char *names[] = {"io-write", "io-read", "io-strided-write"};
        for (int k = 0; k < 3; k++) {
            int strided = k == 2, write = k != 1;
            MPI_File fh;
            if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
                fprintf(stderr, "io: cannot open %s\n", path);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MPI_Datatype ft = MPI_DATATYPE_NULL;
            if (strided) {
                MPI_Datatype vec;
                MPI_Type_vector(1, (int)STRIDE_BLOCK, (int)STRIDE_BLOCK, MPI_BYTE, &vec);
                MPI_Type_create_resized(vec, 0, (MPI_Aint)np * STRIDE_BLOCK, &ft);
                MPI_Type_commit(&ft);
                MPI_Type_free(&vec);
                MPI_File_set_view(fh, (MPI_Offset)rank * STRIDE_BLOCK, MPI_BYTE, ft, "native", MPI_INFO_NULL);
            }
            if (!write) /* the blocks exist: write them once */
                timed(0, 1, fh, buf, size, rank);
            timed(strided, write, fh, buf, size, rank); /* warm-up */
            for (int r = 0; r < o.runs; r++)
                res[r] = (double)np * (double)size / 1e6 / timed(strided, write, fh, buf, size, rank);
            MPI_File_close(&fh);
            if (ft != MPI_DATATYPE_NULL)
                MPI_Type_free(&ft);
            if (rank == 0)
                bench_emit(&o, names[k], np, size, bench_median(res, o.runs), "MB/s");
        }
        free(buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    free(res);
    MPI_Finalize();
    return 0;
}
