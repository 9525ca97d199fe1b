/* One-sided accumulates on the pair types and on long double, at np 3:
 * MPI_Fetch_and_op with MPI_REPLACE and MPI_NO_OP on MPI_DOUBLE_INT,
 * MPI_FLOAT_INT, MPI_LONG_INT and MPI_SHORT_INT, MPI_Accumulate of
 * MPI_REPLACE and MPI_Get_accumulate of MPI_NO_OP on several pairs,
 * MPI_Fetch_and_op and MPI_Accumulate of MPI_SUM on MPI_LONG_DOUBLE (a
 * value no double holds exactly), MPI_PROD, and MPI_BAND on it refused
 * with MPI_ERR_OP, and MPI_MAXLOC on a vector of MPI_LONG_DOUBLE_INT. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, errors;
#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            errors++;                                                                    \
            printf("rank %d: FAIL line %d: ", rank, __LINE__);                           \
            printf(__VA_ARGS__);                                                         \
            printf("\n");                                                                \
        }                                                                                \
    } while (0)

#define PAIR_TEST(T, V, DT)                                                              \
    do {                                                                                 \
        struct { T v; int l; } *mem, x, old, many[3], got[3];                            \
        MPI_Win win;                                                                     \
        MPI_Win_allocate(4 * sizeof x, sizeof x, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win); \
        memset(mem, 0, 4 * sizeof x);                                                    \
        MPI_Barrier(MPI_COMM_WORLD);                                                     \
        int next = (rank + 1) % size;                                                    \
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);                                 \
        x.v = (V) + rank;                                                                \
        x.l = 10 * rank;                                                                 \
        MPI_Fetch_and_op(&x, &old, DT, next, 0, MPI_REPLACE, win);                       \
        CHECK(old.v == 0 && old.l == 0, #DT " first swap got (%g, %d)", (double)old.v, old.l); \
        MPI_Fetch_and_op(NULL, &old, DT, next, 0, MPI_NO_OP, win);                       \
        CHECK(old.v == (V) + rank && old.l == 10 * rank, #DT " fetched (%g, %d)", (double)old.v, old.l); \
        for (int i = 0; i < 3; i++) {                                                    \
            many[i].v = (V) * i;                                                         \
            many[i].l = 100 * rank + i;                                                  \
        }                                                                                \
        MPI_Accumulate(many, 3, DT, next, 1, 3, DT, MPI_REPLACE, win);                   \
        MPI_Get_accumulate(NULL, 0, DT, got, 3, DT, next, 1, 3, DT, MPI_NO_OP, win);     \
        for (int i = 0; i < 3; i++)                                                      \
            CHECK(got[i].v == (V) * i && got[i].l == 100 * rank + i, #DT " pair %d: (%g, %d)", i, \
                  (double)got[i].v, got[i].l);                                           \
        MPI_Win_unlock(next, win);                                                       \
        MPI_Win_free(&win);                                                              \
    } while (0)

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    PAIR_TEST(double, 1.25, MPI_DOUBLE_INT);
    PAIR_TEST(float, 2.5f, MPI_FLOAT_INT);
    PAIR_TEST(long, 1L << 40, MPI_LONG_INT);
    PAIR_TEST(short, 300, MPI_SHORT_INT);

    /* long double: tickets of 1 + 2^-60 at rank 0 (not a double). */
    long double *ld;
    MPI_Win win;
    MPI_Win_allocate(2 * sizeof(long double), sizeof(long double), MPI_INFO_NULL, MPI_COMM_WORLD, &ld,
                     &win);
    ld[0] = 0;
    ld[1] = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    long double step = 1.0L + 0x1p-60L, old = -1, two = 2;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Fetch_and_op(&step, &old, MPI_LONG_DOUBLE, 0, 0, MPI_SUM, win);
    MPI_Accumulate(&two, 1, MPI_LONG_DOUBLE, 0, 1, 1, MPI_LONG_DOUBLE, MPI_PROD, win);
    MPI_Win_unlock(0, win);
    long double k = old / step;
    CHECK(old >= 0 && k == (long double)(int)k && k < size, "ticket %Lg", old);
    MPI_Barrier(MPI_COMM_WORLD);
    long double now[2] = {-1, -1};
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Get_accumulate(NULL, 0, MPI_LONG_DOUBLE, now, 2, MPI_LONG_DOUBLE, 0, 0, 2, MPI_LONG_DOUBLE,
                       MPI_NO_OP, win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int cls = -1, rc = MPI_Fetch_and_op(&step, &old, MPI_LONG_DOUBLE, 0, 0, MPI_BAND, win);
    MPI_Error_class(rc, &cls);
    MPI_Win_unlock(0, win);
    CHECK(now[0] == size * step, "sum %.25Lg, want %.25Lg", now[0], size * step);
    CHECK(now[1] == (long double)(1 << size), "product %Lg", now[1]);
    CHECK(cls == MPI_ERR_OP, "MPI_BAND on MPI_LONG_DOUBLE: class %d, want MPI_ERR_OP", cls);
    MPI_Win_free(&win);

    /* MPI_MAXLOC on MPI_LONG_DOUBLE_INT through a vector of them (MPICH's
     * acc_pairtype): every rank offers (rank + 2^-60, rank) at pairs 0 and 2
     * of rank 0; the last rank wins; pair 1 is untouched. */
    typedef struct {
        long double a;
        int b;
    } ldi_t;
    ldi_t *ldi, offer[2];
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 2, MPI_LONG_DOUBLE_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Win_allocate(3 * sizeof(ldi_t), sizeof(ldi_t), MPI_INFO_NULL, MPI_COMM_WORLD, &ldi, &win);
    for (int i = 0; i < 3; i++) {
        ldi[i].a = -1;
        ldi[i].b = -1;
    }
    for (int i = 0; i < 2; i++) {
        offer[i].a = rank + 0x1p-60L;
        offer[i].b = rank;
    }
    MPI_Win_fence(0, win);
    MPI_Accumulate(offer, 2, MPI_LONG_DOUBLE_INT, 0, 0, 1, vec, MPI_MAXLOC, win);
    MPI_Win_fence(0, win);
    if (rank == 0) {
        CHECK(ldi[0].a == size - 1 + 0x1p-60L && ldi[0].b == size - 1 && ldi[2].a == ldi[0].a &&
                  ldi[2].b == size - 1 && ldi[1].a == -1 && ldi[1].b == -1,
              "maxloc pairs (%Lg, %d) (%Lg, %d) (%Lg, %d)", ldi[0].a, ldi[0].b, ldi[1].a, ldi[1].b,
              ldi[2].a, ldi[2].b);
    }
    MPI_Win_free(&win);
    MPI_Type_free(&vec);

    printf("rank %d: pairld errors %d\n", rank, errors);
    MPI_Finalize();
    return 0;
}
