/* Shared-memory windows from C (processes on one host): MPI_Win_allocate_shared
 * over the communicator of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), every
 * part found by MPI_Win_shared_query (contiguous parts, MPI_PROC_NULL), loads
 * and stores through another process's part checked after a barrier, Put,
 * Accumulate and Fetch_and_op on the window read back through the pointers,
 * the window attributes, alloc_shared_noncontig (parts on pages), the _c
 * forms, and MPI_ERR_RMA_FLAVOR for a query on an MPI_Win_create window. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define N 4

static int errors;
#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            errors++;                                                                    \
            printf("rank %d: FAIL line %d: ", rank, __LINE__);                           \
            printf(__VA_ARGS__);                                                         \
            printf("\n");                                                                \
        }                                                                                \
    } while (0)

int main(int argc, char **argv)
{
    int rank, size, srank, ssize;
    MPI_Comm shm;
    MPI_Win win;
    int *mine, *part[16];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
    MPI_Comm_rank(shm, &srank);
    MPI_Comm_size(shm, &ssize);
    CHECK(ssize == size, "shared communicator of %d, want %d", ssize, size);

    CHECK(MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, shm, &mine, &win) ==
              MPI_SUCCESS, "MPI_Win_allocate_shared failed");
    for (int r = 0; r < ssize; r++) {
        MPI_Aint sz;
        int unit;
        MPI_Win_shared_query(win, r, &sz, &unit, &part[r]);
        CHECK(sz == N * sizeof(int) && unit == sizeof(int), "query %d: size %ld unit %d", r, (long)sz, unit);
        if (r > 0)
            CHECK(part[r] == part[r - 1] + N, "part %d does not follow part %d", r, r - 1);
    }
    CHECK(part[srank] == mine, "my part %p, baseptr %p", (void *)part[srank], (void *)mine);
    {
        MPI_Aint sz;
        int unit, *p;
        MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &unit, &p);
        CHECK(p == part[0] && sz == N * sizeof(int), "MPI_PROC_NULL query");
    }
    {
        void *base;
        MPI_Aint *wsize;
        int *flavor, flag;
        MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
        CHECK(flag && base == mine, "MPI_WIN_BASE");
        MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
        CHECK(flag && *wsize == N * sizeof(int), "MPI_WIN_SIZE");
        MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
        CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED, "flavor %d", *flavor);
    }

    /* Stores into the next process's part, loads of mine after a barrier. */
    int next = (srank + 1) % ssize, prev = (srank + ssize - 1) % ssize;
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    for (int i = 0; i < N; i++)
        part[next][i] = 100 * srank + i;
    MPI_Win_sync(win);
    MPI_Barrier(shm);
    MPI_Win_sync(win);
    int stored = 1;
    for (int i = 0; i < N; i++)
        stored &= mine[i] == 100 * prev + i;
    CHECK(stored, "my part %d %d %d %d, want %d...", mine[0], mine[1], mine[2], mine[3], 100 * prev);
    MPI_Win_unlock_all(win);

    /* Put into next's element 0, Accumulate into rank 0's element 3. */
    MPI_Win_fence(0, win);
    int v = 1000 + srank, one = srank + 1;
    MPI_Put(&v, 1, MPI_INT, next, 0, 1, MPI_INT, win);
    MPI_Accumulate(&one, 1, MPI_INT, 0, 3, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    CHECK(part[next][0] == 1000 + srank, "put read directly: %d", part[next][0]);
    CHECK(part[0][3] == 100 * (ssize - 1) + 3 + ssize * (ssize + 1) / 2, "accumulate read directly: %d",
          part[0][3]);
    MPI_Win_fence(0, win);

    /* Fetch_and_op tickets on rank 1's element 1 (zeroed by rank 1's store). */
    if (srank == 1)
        mine[1] = 0;
    MPI_Barrier(shm);
    MPI_Win_lock_all(0, win);
    int ticket = -1, inc = 1;
    MPI_Fetch_and_op(&inc, &ticket, MPI_INT, 1 % ssize, 1, MPI_SUM, win);
    MPI_Win_unlock_all(win);
    CHECK(ticket >= 0 && ticket < ssize, "ticket %d", ticket);
    MPI_Barrier(shm);
    MPI_Win_sync(win);
    CHECK(part[1 % ssize][1] == ssize, "counter read directly: %d", part[1 % ssize][1]);
    MPI_Win_free(&win);

    /* alloc_shared_noncontig, the _c forms, a zero-size part at rank 1. */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    double *d;
    MPI_Aint n = srank == 1 ? 0 : 3 * sizeof(double);
    CHECK(MPI_Win_allocate_shared_c(n, sizeof(double), info, shm, &d, &win) == MPI_SUCCESS,
          "MPI_Win_allocate_shared_c failed");
    MPI_Info_free(&info);
    long page = sysconf(_SC_PAGESIZE);
    for (int r = 0; r < ssize; r++) {
        MPI_Aint sz, unit;
        double *p;
        MPI_Win_shared_query_c(win, r, &sz, &unit, &p);
        CHECK(sz == (r == 1 ? 0 : 3 * (MPI_Aint)sizeof(double)) && unit == sizeof(double),
              "noncontig query %d: %ld %ld", r, (long)sz, (long)unit);
        if (sz > 0)
            CHECK((uintptr_t)p % page == 0, "noncontig part %d at %p", r, (void *)p);
        else
            CHECK(p == NULL, "empty part %d at %p, want NULL", r, (void *)p);
    }
    MPI_Win_fence(0, win);
    double x = 0.5 + srank;
    if (ssize > 2 && srank < 3)
        MPI_Put(&x, 1, MPI_DOUBLE, 2, srank, 1, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    if (ssize > 2) {
        MPI_Aint sz, unit;
        double *p;
        MPI_Win_shared_query_c(win, 2, &sz, &unit, &p);
        CHECK(p[0] == 0.5 && p[1] == 1.5 && p[2] == 2.5, "rank 2's doubles %g %g %g", p[0], p[1], p[2]);
    }
    MPI_Win_free(&win);

    /* A query on a window of another flavor. */
    int buf[2];
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, shm, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Aint sz;
    int unit, cls = -1, *p;
    int rc = MPI_Win_shared_query(win, 0, &sz, &unit, &p);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_FLAVOR, "query on MPI_Win_create's window: class %d, want %d", cls,
          MPI_ERR_RMA_FLAVOR);
    MPI_Win_free(&win);

    printf("rank %d: shared errors %d\n", rank, errors);
    MPI_Comm_free(&shm);
    MPI_Finalize();
    return 0;
}
