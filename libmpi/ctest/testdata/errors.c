/* errors.c: bad arguments give the MPI class and a message naming what was
 * wrong, under MPI_ERRORS_RETURN and through an error handler written in C;
 * an unimplemented function answers MPI_ERR_UNSUPPORTED_OPERATION. Run with
 * one rank (MPI_Send to rank 1 is out of range). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int calls = 0, last_code = -1;
static MPI_Comm last_comm = MPI_COMM_NULL;

static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_code = *code;
    last_comm = *comm;
}

static void check(const char *what, int rc, int want_class)
{
    int cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    printf("%s: class %d want %d %s | %s\n", what, cls, want_class, cls == want_class ? "ok" : "WRONG", msg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int v = 1;
    check("rank", MPI_Send(&v, 1, MPI_INT, 5, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    check("count", MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    check("buffer", MPI_Send(NULL, 3, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    check("type", MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    check("comm", MPI_Send(&v, 1, MPI_INT, 0, 0, (MPI_Comm)(intptr_t)0x7001), MPI_ERR_COMM);
    check("tag", MPI_Send(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    MPI_Request r = MPI_REQUEST_NULL;
    check("request", MPI_Request_free(&r), MPI_ERR_REQUEST);
    MPI_Message m;
    { MPI_Info hw; check("unsupported", MPI_Get_hw_resource_info(&hw), MPI_ERR_UNSUPPORTED_OPERATION); }
    (void)m;

    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    int rc = MPI_Send(&v, 1, MPI_INT, 7, 0, MPI_COMM_WORLD);
    MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
    printf("handler: calls %d last %d rc %d world %d\n", calls, last_code, rc, last_comm == MPI_COMM_WORLD);
    MPI_Errhandler got;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    printf("get_errhandler: same %d\n", got == eh);
    MPI_Errhandler_free(&eh);
    printf("freed: null %d\n", eh == MPI_ERRHANDLER_NULL);

    int cls, code;
    MPI_Add_error_class(&cls);
    MPI_Add_error_code(cls, &code);
    MPI_Add_error_string(code, "my own error");
    char msg[MPI_MAX_ERROR_STRING];
    int len, back;
    MPI_Error_string(code, msg, &len);
    MPI_Error_class(code, &back);
    printf("user: class-ok %d string %s\n", back == cls && cls > MPI_ERR_LASTCODE, msg);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    printf("fatal next\n");
    fflush(stdout);
    MPI_Send(&v, 1, MPI_INT, 9, 0, MPI_COMM_WORLD);
    printf("not reached\n");
    MPI_Finalize();
    return 0;
}
