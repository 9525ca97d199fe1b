/* cside.h: the C side of libmpi that Go calls: trampolines for C callbacks
 * and the process facts kept in C. Declarations only (cgo preambles of
 * files with exports may not define anything). */
#ifndef FTMPI_CSIDE_H
#define FTMPI_CSIDE_H

#include "include/mpi.h"

int ftmpi_is_main_thread(void);
void ftmpi_cside_init(void);
void ftmpi_fast_init(int rank, int size);
int ftmpi_unsupported(const char *name);

/* Trampolines: call a C function pointer with its arguments. */
void ftmpi_call_comm_errhandler(void *fn, MPI_Comm *comm, int *code);
void ftmpi_call_win_errhandler(void *fn, MPI_Win *win, int *code);
void ftmpi_call_file_errhandler(void *fn, MPI_File *file, int *code);
void ftmpi_call_user_op(void *fn, void *in, void *inout, int *len, MPI_Datatype *dt);
void ftmpi_call_user_op_c(void *fn, void *in, void *inout, MPI_Count *len, MPI_Datatype *dt);
int ftmpi_call_copy_attr(void *fn, uintptr_t obj, int keyval, void *extra, void *in, void *out, int *flag);
int ftmpi_call_delete_attr(void *fn, uintptr_t obj, int keyval, void *val, void *extra);
int ftmpi_call_grequest_query(void *fn, void *extra, MPI_Status *status);
int ftmpi_call_grequest_free(void *fn, void *extra);
int ftmpi_call_grequest_cancel(void *fn, void *extra, int complete);

#endif
