/* cside.c: the C side of libmpi (see cside.h). C99. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include "cside.h"
#include "_cgo_export.h"

MPI_Fint *MPI_F_STATUS_IGNORE = 0;
MPI_Fint *MPI_F_STATUSES_IGNORE = 0;

static pthread_t main_thread;

void ftmpi_cside_init(void) { main_thread = pthread_self(); }

int ftmpi_is_main_thread(void) { return pthread_equal(main_thread, pthread_self()); }

int ftmpi_unsupported(const char *name) { return ftmpi_unsupported_go((char *)name); }

void ftmpi_call_comm_errhandler(void *fn, MPI_Comm *comm, int *code)
{
    ((MPI_Comm_errhandler_function *)fn)(comm, code);
}

void ftmpi_call_win_errhandler(void *fn, MPI_Win *win, int *code)
{
    ((MPI_Win_errhandler_function *)fn)(win, code);
}

void ftmpi_call_file_errhandler(void *fn, MPI_File *file, int *code)
{
    ((MPI_File_errhandler_function *)fn)(file, code);
}

void ftmpi_call_user_op(void *fn, void *in, void *inout, int *len, MPI_Datatype *dt)
{
    ((MPI_User_function *)fn)(in, inout, len, dt);
}

void ftmpi_call_user_op_c(void *fn, void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    ((MPI_User_function_c *)fn)(in, inout, len, dt);
}

int ftmpi_call_copy_attr(void *fn, uintptr_t obj, int keyval, void *extra, void *in, void *out, int *flag)
{
    return ((MPI_Comm_copy_attr_function *)fn)((MPI_Comm)obj, keyval, extra, in, out, flag);
}

int ftmpi_call_delete_attr(void *fn, uintptr_t obj, int keyval, void *val, void *extra)
{
    return ((MPI_Comm_delete_attr_function *)fn)((MPI_Comm)obj, keyval, val, extra);
}

int ftmpi_call_grequest_query(void *fn, void *extra, MPI_Status *status)
{
    return ((MPI_Grequest_query_function *)fn)(extra, status);
}

int ftmpi_call_grequest_free(void *fn, void *extra)
{
    return ((MPI_Grequest_free_function *)fn)(extra);
}

int ftmpi_call_grequest_cancel(void *fn, void *extra, int complete)
{
    return ((MPI_Grequest_cancel_function *)fn)(extra, complete);
}

/* MPI_Wtime and MPI_Wtick stay in C: no call into Go on this path. */
double PMPI_Wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
double MPI_Wtime(void) __attribute__((weak, alias("PMPI_Wtime")));

double PMPI_Wtick(void)
{
    struct timespec ts;
    clock_getres(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
double MPI_Wtick(void) __attribute__((weak, alias("PMPI_Wtick")));

int PMPI_Abi_get_info(MPI_Info *info)
{
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}
int MPI_Abi_get_info(MPI_Info *info) __attribute__((weak, alias("PMPI_Abi_get_info")));

int PMPI_Pcontrol(const int level, ...)
{
    (void)level;
    return MPI_SUCCESS;
}
int MPI_Pcontrol(const int level, ...) __attribute__((weak, alias("PMPI_Pcontrol")));

MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp) __attribute__((weak, alias("PMPI_Aint_add")));

MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }
MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) __attribute__((weak, alias("PMPI_Aint_diff")));

int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    *address = (MPI_Aint)location;
    return MPI_SUCCESS;
}
int MPI_Get_address(const void *location, MPI_Aint *address) __attribute__((weak, alias("PMPI_Get_address")));

int PMPI_Address(void *location, MPI_Aint *address)
{
    *address = (MPI_Aint)location;
    return MPI_SUCCESS;
}
int MPI_Address(void *location, MPI_Aint *address) __attribute__((weak, alias("PMPI_Address")));
