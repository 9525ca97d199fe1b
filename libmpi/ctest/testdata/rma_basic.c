/* rma_basic.c: one-sided communication from C at np 4: a fence ring of
 * Put and Get with a displacement unit, an accumulate counter under
 * exclusive locks, a fetch-and-op ticket counter, a compare-and-swap,
 * generalized active target (post/start/complete/wait), the window
 * attributes, MPI_Win_allocate (displacement unit 1) with Rput and
 * Get_accumulate, a strided target datatype, MPI_PROC_NULL targets, a
 * window error handler written in C, a dynamic window, and
 * MPI_ERR_RMA_RANGE for a Put outside the window under MPI_ERRORS_RETURN. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

static int errh_calls = 0, errh_last = -1;
static MPI_Win errh_win = MPI_WIN_NULL;
static int del_calls = 0;

static int del_attr(MPI_Win w, int key, void *val, void *extra)
{
    (void)w;
    (void)key;
    del_calls += (int)(intptr_t)val == 42 && (int)(intptr_t)extra == 5;
    return MPI_SUCCESS;
}

static void win_errh(MPI_Win *w, int *code, ...)
{
    errh_calls++;
    errh_last = *code;
    errh_win = *w;
}

int main(int argc, char **argv)
{
    int rank, size, buf[8], i, got = -1, cls = -1;
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (i = 0; i < 8; i++)
        buf[i] = 0;
    buf[0] = 100 * rank;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    /* Fence ring: Put 10*rank+1 into next's slot 1, Get prev's slot 0. */
    int v = 10 * rank + 1;
    MPI_Win_fence(0, win);
    MPI_Put(&v, 1, MPI_INT, next, 1, 1, MPI_INT, win);
    MPI_Get_c(&got, 1, MPI_INT, prev, 0, 1, MPI_INT, win); /* the large-count form */
    MPI_Win_fence(0, win);
    printf("rank %d: ring put %d get %d\n", rank, buf[1], got);

    /* Accumulate counter at rank 0 slot 2 under exclusive locks. */
    int add = rank + 1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Accumulate(&add, 1, MPI_INT, 0, 2, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_unlock(0, win);

    /* Ticket counter at rank 0 slot 3 (shared locks, fetch-and-op). */
    int one = 1, ticket = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Fetch_and_op(&one, &ticket, MPI_INT, 0, 3, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    printf("rank %d: ticket-ok %d\n", rank, ticket >= 0 && ticket < size);

    /* Compare-and-swap at rank 0 slot 4: exactly one rank wins. */
    int zero = 0, mine = rank + 1, old = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Compare_and_swap(&mine, &zero, &old, MPI_INT, 0, 4, win);
    MPI_Win_unlock(0, win);
    int won = old == 0, winner = 0;
    MPI_Win_fence(0, win);
    if (rank == 0) {
        MPI_Win_sync(win);
        printf("result: counter %d tickets %d cas-slot-set %d\n", buf[2], buf[3], buf[4] >= 1 && buf[4] <= size);
    }
    /* Count CAS winners at rank 0 slot 5. */
    MPI_Accumulate(&won, 1, MPI_INT, 0, 5, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    if (rank == 0) {
        winner = buf[5];
        printf("result: cas winners %d\n", winner);
    }

    /* PSCW: even ranks expose to rank+1, odd ranks Put 7*rank into slot 6. */
    MPI_Group world, peer;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int partner = rank ^ 1;
    MPI_Group_incl(world, 1, &partner, &peer);
    if (rank % 2 == 0) {
        int flag = 0;
        MPI_Win_post(peer, 0, win);
        if (rank == 0)
            while (!flag)
                MPI_Win_test(win, &flag);
        else
            MPI_Win_wait(win);
        printf("rank %d: pscw got %d\n", rank, buf[6]);
    } else {
        int x = 7 * rank;
        MPI_Win_start(peer, 0, win);
        MPI_Put(&x, 1, MPI_INT, partner, 6, 1, MPI_INT, win);
        MPI_Win_complete(win);
    }
    MPI_Group_free(&peer);

    /* Attributes. */
    void *base = 0;
    MPI_Aint *wsize = 0;
    int *unit = 0, *flavor = 0, *model = 0, flag = 0, ok = 1;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    ok &= flag && base == (void *)buf;
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
    ok &= flag && *wsize == (MPI_Aint)sizeof buf;
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
    ok &= flag && *unit == (int)sizeof(int);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    ok &= flag && *flavor == MPI_WIN_FLAVOR_CREATE;
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    ok &= flag && *model == MPI_WIN_UNIFIED;
    MPI_Group wg;
    int gsize = 0, same = 0;
    MPI_Win_get_group(win, &wg);
    MPI_Group_size(wg, &gsize);
    MPI_Group_compare(wg, world, &same);
    MPI_Group_free(&wg);
    MPI_Group_free(&world);
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    MPI_Win_set_name(win, "ringwin");
    MPI_Win_get_name(win, name, &len);
    if (rank == 0)
        printf("result: attrs %d group %d ident %d name %s %d\n", ok, gsize, same == MPI_IDENT, name, len);

    /* A Put past the end: MPI_ERR_RMA_RANGE, returned. */
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_get_errhandler(win, &eh);
    int two[2] = {1, 2};
    MPI_Win_fence(0, win);
    int rc = MPI_Put(two, 2, MPI_INT, next, 7, 2, MPI_INT, win);
    MPI_Error_class(rc, &cls);
    int rc2 = MPI_Win_unlock(next, win);
    int cls2 = -1;
    MPI_Error_class(rc2, &cls2);
    MPI_Win_fence(0, win);
    printf("rank %d: range class %d want %d sync class %d want %d errh-return %d\n", rank, cls, MPI_ERR_RMA_RANGE, cls2,
           MPI_ERR_RMA_SYNC, eh == MPI_ERRORS_RETURN);
    MPI_Win_free(&win);

    /* MPI_Win_allocate, disp unit 1: Rput then a strided Get_accumulate. */
    double *mem = 0;
    MPI_Win_allocate(6 * sizeof(double), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (i = 0; i < 6; i++)
        mem[i] = 0;
    MPI_Win_fence(0, win);
    double d3[3] = {rank + 0.5, rank + 1.5, rank + 2.5}, r3[3] = {-1, -1, -1};
    MPI_Request req;
    MPI_Rput(d3, 3, MPI_DOUBLE, next, 0, 3, MPI_DOUBLE, win, &req); /* slots 0, 1, 2 */
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Win_fence(0, win);
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    double ten[3] = {10, 10, 10};
    /* byte displacement 8: slots 1, 2, 3 */
    MPI_Get_accumulate(ten, 3, MPI_DOUBLE, r3, 3, MPI_DOUBLE, next, sizeof(double), 3, MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_unlock(next, win);
    MPI_Win_fence(0, win);
    printf("rank %d: alloc fetched %.1f %.1f %.1f now %.1f %.1f %.1f %.1f\n", rank, r3[0], r3[1], r3[2], mem[0], mem[1], mem[2],
           mem[3]);
    MPI_Win_free(&win);
    printf("rank %d: freed %d\n", rank, win == MPI_WIN_NULL);

    /* A strided target datatype; a C error handler on the window. */
    int grid[10];
    for (i = 0; i < 10; i++)
        grid[i] = -1;
    MPI_Win_create(grid, sizeof grid, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Errhandler weh;
    MPI_Win_create_errhandler(win_errh, &weh);
    MPI_Win_set_errhandler(win, weh);
    MPI_Datatype vec;
    MPI_Type_vector(3, 1, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int three[3] = {rank, rank + 10, rank + 20};
    MPI_Win_fence(0, win);
    MPI_Put(three, 3, MPI_INT, next, 1, 1, vec, win);                /* slots 1, 4, 7 */
    MPI_Put(three, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win);   /* nothing */
    int bad = MPI_Put(three, 3, MPI_INT, next, 5, 1, vec, win);      /* slots 5, 8, 11: outside */
    MPI_Win_fence(0, win);
    MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    printf("rank %d: strided %d %d %d %d %d %d errh calls %d last %d same-win %d bad %d\n", rank, grid[0], grid[1], grid[4],
           grid[7], grid[5], grid[8], errh_calls, errh_last, errh_win == win, bad);
    /* Window attributes of a C keyval: the delete callback runs on
     * MPI_Win_delete_attr and on MPI_Win_free. */
    int key = MPI_KEYVAL_INVALID, aflag = 0;
    void *aval = 0;
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, del_attr, &key, (void *)(intptr_t)5);
    MPI_Win_set_attr(win, key, (void *)(intptr_t)42);
    MPI_Win_get_attr(win, key, &aval, &aflag);
    int got42 = aflag && (intptr_t)aval == 42;
    MPI_Win_delete_attr(win, key);
    MPI_Win_get_attr(win, key, &aval, &aflag);
    int gone = !aflag;
    MPI_Win_set_attr(win, key, (void *)(intptr_t)42);
    MPI_Type_free(&vec);
    MPI_Errhandler_free(&weh);
    MPI_Win_free(&win);
    MPI_Win_free_keyval(&key);
    printf("rank %d: keyval got %d gone %d deletes %d invalid %d\n", rank, got42, gone, del_calls, key == MPI_KEYVAL_INVALID);

    /* A dynamic window: displacements are addresses of attached memory. */
    int dyn[4] = {0, 0, 0, 0};
    MPI_Aint mine_addr, next_addr = 0;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_attach(win, dyn, sizeof dyn);
    MPI_Get_address(dyn, &mine_addr);
    MPI_Sendrecv(&mine_addr, 1, MPI_AINT, prev, 8, &next_addr, 1, MPI_AINT, next, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int dv = 3 * rank, *dflavor = 0;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &dflavor, &flag);
    MPI_Win_fence(0, win);
    MPI_Put(&dv, 1, MPI_INT, next, MPI_Aint_add(next_addr, sizeof(int)), 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    printf("rank %d: dynamic got %d flavor %d\n", rank, dyn[1], *dflavor == MPI_WIN_FLAVOR_DYNAMIC);
    MPI_Win_detach(win, dyn);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
