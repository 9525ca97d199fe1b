/* MPI-1's bound markers (MPI_LB, MPI_UB: an ftmpi extension, removed in
 * MPI-3.0) with the MPI-1 calls (MPI_Type_struct, MPI_Type_lb/ub/extent),
 * and the large-count constructors with counts above 2^31 (MPICH datatype/
 * lbub_oldapi, struct_no_real_types, typename_oldapi; with the argument
 * "large", type_large). Prints one "result:" line; "FAIL ..." lines name
 * what is wrong. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs;

static void expect(const char *what, long long got, long long want)
{
    if (got != want) {
        printf("FAIL %s: %lld, want %lld\n", what, got, want);
        errs++;
    }
}

/* Large counts: sizes and extents above 2^31. */
static void large_counts(void)
{
    MPI_Datatype big;
    int size;
    MPI_Count csize, clb, cext, n = 5LL << 30;
    expect("MPI_Type_contiguous_c", MPI_Type_contiguous_c(n, MPI_CHAR, &big), MPI_SUCCESS);
    MPI_Type_size_c(big, &csize);
    MPI_Type_get_true_extent_c(big, &clb, &cext);
    expect("contiguous_c size", csize, n);
    expect("contiguous_c true extent", cext, n);
    MPI_Type_size(big, &size);
    expect("MPI_Type_size of it (MPI_UNDEFINED)", size, MPI_UNDEFINED);
    MPI_Type_free(&big);
    MPI_Count displs[4], blk = (3LL << 30) / 4 / sizeof(int);
    for (int i = 0; i < 4; i++)
        displs[i] = i * blk;
    expect("MPI_Type_create_indexed_block_c", MPI_Type_create_indexed_block_c(4, blk, displs, MPI_INT, &big), MPI_SUCCESS);
    MPI_Type_size_c(big, &csize);
    MPI_Type_get_extent_c(big, &clb, &cext);
    expect("indexed_block_c size", csize, 3LL << 30);
    expect("indexed_block_c extent", cext, 3LL << 30);
    MPI_Type_free(&big);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* { (LB,-3), 4 bytes at 0, (UB,6) } and three of it. */
    int bl[3] = {1, 4, 1};
    MPI_Aint disp[3] = {-3, 0, 6};
    MPI_Datatype ts[3] = {MPI_LB, MPI_BYTE, MPI_UB}, t, c;
    MPI_Aint a, lb, ext;
    int size;
    expect("MPI_Type_struct", MPI_Type_struct(3, bl, disp, ts, &t), MPI_SUCCESS);
    MPI_Type_size(t, &size);
    expect("size", size, 4);
    MPI_Type_extent(t, &a);
    expect("MPI_Type_extent", a, 9);
    MPI_Type_lb(t, &a);
    expect("MPI_Type_lb", a, -3);
    MPI_Type_ub(t, &a);
    expect("MPI_Type_ub", a, 6);
    MPI_Type_contiguous(3, t, &c);
    MPI_Type_commit(&c);
    MPI_Type_get_extent(c, &lb, &ext);
    expect("contiguous lb", lb, -3);
    expect("contiguous extent", ext, 27);
    MPI_Type_get_true_extent(c, &lb, &ext);
    expect("contiguous true lb", lb, 0);
    expect("contiguous true extent", ext, 22);

    /* The data travels where the markers put it: 3 x 4 bytes, 9 apart. */
    char src[40], dst[40];
    for (int i = 0; i < 40; i++) {
        src[i] = (char)i;
        dst[i] = -1;
    }
    MPI_Sendrecv(src, 1, c, 0, 1, dst, 12, MPI_BYTE, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    expect("received byte 4 (the second block's first)", dst[4], 9);
    expect("received byte 11", dst[11], 21);

    /* A marker only: { (LB,10) } has size 0 and extent -10. */
    MPI_Datatype lbonly, mk = MPI_LB, back[3];
    int one = 1;
    MPI_Aint ten = 10;
    MPI_Type_create_struct(1, &one, &ten, &mk, &lbonly);
    MPI_Type_size(lbonly, &size);
    MPI_Type_get_extent(lbonly, &lb, &ext);
    expect("{(LB,10)} size", size, 0);
    expect("{(LB,10)} extent", ext, -10);

    /* Named, not freeable, given back as themselves by get_contents. */
    char name[MPI_MAX_OBJECT_NAME];
    int len, ni, na, nt, comb;
    MPI_Type_get_name(MPI_UB, name, &len);
    expect("MPI_UB's name", strcmp(name, "MPI_UB"), 0);
    MPI_Datatype lbh = MPI_LB;
    expect("MPI_Type_free(MPI_LB) fails", MPI_Type_free(&lbh) != MPI_SUCCESS, 1);
    MPI_Type_get_envelope(t, &ni, &na, &nt, &comb);
    int ints[4];
    MPI_Aint aints[3];
    MPI_Type_get_contents(t, ni, na, nt, ints, aints, back);
    expect("contents' types are MPI_LB, MPI_BYTE, MPI_UB", back[0] == MPI_LB && back[1] == MPI_BYTE && back[2] == MPI_UB, 1);

    if (argc > 1 && strcmp(argv[1], "large") == 0)
        large_counts();

    MPI_Type_free(&t);
    MPI_Type_free(&c);
    MPI_Type_free(&lbonly);
    printf("result: %d errors\n", errs);
    MPI_Finalize();
    return 0;
}
