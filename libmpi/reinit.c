/* reinit.c: the C side of MPI_Reinit (seed 000) and MPIX_Reinit. C99.
 *
 * MPI_Reinit (Go, reinit.go) runs package mpi's Reinit, whose resilient
 * function calls ftmpi_run_resilient for each epoch: it sets a rollback
 * point with setjmp and calls the C resilient function. MPI_Test_failure
 * asks Go whether a failure ended the epoch (MPI_ERRORS_REINIT_SYNC) and,
 * if so, longjmps back to that point: only C frames lie between the two
 * (the Go call of MPI_Test_failure has returned), never a Go frame. The
 * Go side then rolls the epoch forward and calls ftmpi_run_resilient again. */
#include <pthread.h>
#include <setjmp.h>
#include "cside.h"
#include "_cgo_export.h"

/* The rollback point of the running resilient function; armed while it
 * runs (MPI_Reinit is called once, from one thread). */
static jmp_buf rollback_point;
static volatile int rollback_armed;
static pthread_t resilient_thread;

/* ftmpi_run_resilient calls fn(data) under a rollback point. It returns 0
 * when fn returned, 1 when MPI_Test_failure rolled back. */
int ftmpi_run_resilient(void *fn, void *data)
{
    if (setjmp(rollback_point) != 0) {
        rollback_armed = 0;
        return 1;
    }
    resilient_thread = pthread_self();
    rollback_armed = 1;
    ((MPI_Reinit_function *)fn)(data);
    rollback_armed = 0;
    return 0;
}


int PMPI_Reinit(MPI_Reinit_function *resilient_fn, void *data)
{
    return ftmpi_reinit_go((void *)resilient_fn, data);
}
int MPI_Reinit(MPI_Reinit_function *resilient_fn, void *data) __attribute__((weak, alias("PMPI_Reinit")));

/* MPI_Test_failure longjmps only in the thread that runs the resilient
 * function; in another thread it reports the failure (MPI_ERR_PROC_FAILED).
 * It must not be called from a callback MPI made (an error handler, a
 * reduction operation): Go frames lie between that and the rollback point. */
int PMPI_Test_failure(void)
{
    int rc = ftmpi_test_failure_go();
    if (rc >= 0)
        return rc;
    if (rollback_armed && pthread_equal(resilient_thread, pthread_self()))
        longjmp(rollback_point, 1);
    return MPI_ERR_PROC_FAILED;
}
int MPI_Test_failure(void) __attribute__((weak, alias("PMPI_Test_failure")));

/* MPIX_Reinit: LLNL's form, over MPI_Reinit. */
struct restart {
    int argc;
    char **argv;
    MPIX_Restart_point point;
    int rc;
};

static void restart_fn(void *data)
{
    struct restart *r = (struct restart *)data;
    int state = MPI_REINIT_NEW;
    PMPI_Reinit_state(&state);
    r->rc = r->point(r->argc, r->argv, state);
}

int PMPIX_Reinit(int argc, char **argv, MPIX_Restart_point point)
{
    struct restart r = {argc, argv, point, 0};
    if (point == NULL)
        return PMPI_Reinit(NULL, NULL); /* the error MPI_Reinit gives */
    int rc = PMPI_Reinit(restart_fn, &r);
    return rc != MPI_SUCCESS ? rc : r.rc;
}
int MPIX_Reinit(int argc, char **argv, MPIX_Restart_point point) __attribute__((weak, alias("PMPIX_Reinit")));
