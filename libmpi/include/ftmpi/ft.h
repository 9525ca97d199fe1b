/* ftmpi/ft.h: process fault tolerance (included by mpi.h).
 *
 *   - ULFM (seed 002, appendix A; MPI-6's names and Open MPI's MPIX_ names,
 *     same signatures): revoke, shrink, agree, failure acknowledgement.
 *   - Run-through stabilization (seed 003, chapter 17): validate, the failed
 *     groups, re-enabling MPI_ANY_SOURCE, MPI_ERR_RANK_FAIL_STOP (mpi.h).
 *   - Reinit (seed 000): MPI_Reinit, MPI_Test_failure, the Reinit error
 *     handlers; the state of the current run of the resilient function.
 *
 * The error classes MPI_ERR_PROC_FAILED (75), MPI_ERR_PROC_FAILED_PENDING
 * (76) and MPI_ERR_REVOKED (77) are in mpi.h; their MPIX_ names here and
 * in mpi-ext.h. C99. */
#ifndef FTMPI_FT_H
#define FTMPI_FT_H

/* ULFM's error classes under their MPIX_ names, which programs written
 * for MPICH use with mpi.h alone (mpi-ext.h has them too). */
#ifndef MPIX_ERR_PROC_FAILED
#define MPIX_ERR_PROC_FAILED         MPI_ERR_PROC_FAILED
#define MPIX_ERR_PROC_FAILED_PENDING MPI_ERR_PROC_FAILED_PENDING
#define MPIX_ERR_REVOKED             MPI_ERR_REVOKED
#endif

/* ULFM (seed 002 A.2-3), MPI-6 names. */
int MPI_Comm_revoke(MPI_Comm comm);
int MPI_Comm_is_revoked(MPI_Comm comm, int *flag);
int MPI_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm);
int MPI_Comm_ishrink(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
int MPI_Comm_agree(MPI_Comm comm, int *flag);
int MPI_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request);
int MPI_Comm_failure_ack(MPI_Comm comm);
int MPI_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failedgrp);
int MPI_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int *num_acked);
int MPI_Comm_get_failed(MPI_Comm comm, MPI_Group *failedgrp);
int MPI_Win_revoke(MPI_Win win);
int MPI_Win_get_failed(MPI_Win win, MPI_Group *failedgrp);
int MPI_File_revoke(MPI_File fh);

/* ULFM, Open MPI's MPIX_ names (forwarded to the MPI-6 ones). */
int MPIX_Comm_revoke(MPI_Comm comm);
int MPIX_Comm_is_revoked(MPI_Comm comm, int *flag);
int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm);
int MPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
int MPIX_Comm_agree(MPI_Comm comm, int *flag);
int MPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request);
int MPIX_Comm_failure_ack(MPI_Comm comm);
int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failedgrp);
int MPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int *num_acked);
int MPIX_Comm_get_failed(MPI_Comm comm, MPI_Group *failedgrp);

/* Run-through stabilization (seed 003). MPI_Comm_ivalidate is
 * MPI_Icomm_validate under the name later drafts gave it. */
int MPI_Comm_validate(MPI_Comm comm, MPI_Group *failed);
int MPI_Icomm_validate(MPI_Comm comm, MPI_Group *failed, MPI_Request *req);
int MPI_Comm_ivalidate(MPI_Comm comm, MPI_Group *failed, MPI_Request *req);
int MPI_Comm_group_failed(MPI_Comm comm, MPI_Group *failed);
int MPI_Comm_remote_group_failed(MPI_Comm comm, MPI_Group *failed);
int MPI_Comm_reenable_any_source(MPI_Comm comm, MPI_Group *failed);
int MPI_Comm_collectives_enabled(MPI_Comm comm, int *active);
int MPI_Win_validate(MPI_Win win, MPI_Group *failed);
int MPI_Iwin_validate(MPI_Win win, MPI_Group *failed, MPI_Request *req);
int MPI_Win_get_group_failed(MPI_Win win, MPI_Group *failed);
int MPI_File_validate(MPI_File fh, MPI_Group *failed);
int MPI_Ifile_validate(MPI_File fh, MPI_Group *failed, MPI_Request *req);
int MPI_File_get_group_failed(MPI_File fh, MPI_Group *failed);
int MPI_File_collectives_enabled(MPI_File fh, int *active);

/* Reinit (seed 000). MPI_Reinit sets resilient_fn as the rollback location
 * and calls it with data; after a failure every process runs it again (a
 * respawned one too) in a new epoch, where only MPI_COMM_WORLD and
 * MPI_COMM_SELF are valid. MPI_Reinit_state tells the running resilient
 * function why it runs. */
typedef void (MPI_Reinit_function)(void *data);
#define MPI_ERRORS_REINIT_SYNC  ((MPI_Errhandler)0x150)
#define MPI_ERRORS_REINIT_ASYNC ((MPI_Errhandler)0x151)
#define MPI_REINIT_NEW       0
#define MPI_REINIT_REINITED  1
#define MPI_REINIT_RESTARTED 2
int MPI_Reinit(MPI_Reinit_function *resilient_fn, void *data);
int MPI_Test_failure(void);
int MPI_Reinit_state(int *state);

/* The form of LLNL's Reinit prototype: the restart point gets argc, argv
 * and the state (MPI_REINIT_NEW, _REINITED, _RESTARTED); MPIX_Reinit
 * returns what it returned in the epoch no failure ended (or an MPI error
 * of MPIX_Reinit itself). */
typedef int (*MPIX_Restart_point)(int argc, char **argv, int state);
int MPIX_Reinit(int argc, char **argv, MPIX_Restart_point point);

#endif
