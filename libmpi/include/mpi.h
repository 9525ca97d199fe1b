/*
 * mpi.h: ftmpi's C interface, on the MPI-5.0 standard ABI.
 *
 * Handles are pointers to incomplete structs; the predefined handles have
 * the standard ABI's fixed small integer values, so a program compiled
 * against any standard-ABI mpi.h runs on libmpi_abi.so.1 of ftmpi, and the
 * _toint/_fromint conversions are casts. MPI_Status is the standard's
 * layout (source, tag, error, 5 ints for the library).
 *
 * The functions are declared by area in ftmpi/<area>.h; every one also has
 * its PMPI_ name (ftmpi/pmpi.h, generated). ULFM's MPIX_ names are in
 * mpi-ext.h. C99.
 */
#ifndef FTMPI_MPI_H
#define FTMPI_MPI_H

#include <stdint.h>
#include <stddef.h>

#if defined(__cplusplus)
extern "C" {
#endif

#define MPI_VERSION    5
#define MPI_SUBVERSION 0
#define MPI_ABI_VERSION    1
#define MPI_ABI_SUBVERSION 0

/* ftmpi identifies itself, as Open MPI and MPICH do. */
#define FTMPI 1

typedef intptr_t MPI_Aint;
typedef int64_t  MPI_Offset;
typedef int64_t  MPI_Count;
typedef int      MPI_Fint;

typedef struct {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    int MPI_internal[5]; /* ftmpi: [0..1] bytes received, [2] cancelled */
} MPI_Status;

typedef struct MPI_ABI_Op *MPI_Op;
#define MPI_OP_NULL     ((MPI_Op)0x020)
#define MPI_SUM         ((MPI_Op)0x021)
#define MPI_MIN         ((MPI_Op)0x022)
#define MPI_MAX         ((MPI_Op)0x023)
#define MPI_PROD        ((MPI_Op)0x024)
#define MPI_BAND        ((MPI_Op)0x028)
#define MPI_BOR         ((MPI_Op)0x029)
#define MPI_BXOR        ((MPI_Op)0x02a)
#define MPI_LAND        ((MPI_Op)0x030)
#define MPI_LOR         ((MPI_Op)0x031)
#define MPI_LXOR        ((MPI_Op)0x032)
#define MPI_MINLOC      ((MPI_Op)0x038)
#define MPI_MAXLOC      ((MPI_Op)0x039)
#define MPI_REPLACE     ((MPI_Op)0x03c)
#define MPI_NO_OP       ((MPI_Op)0x03d)

typedef struct MPI_ABI_Comm *MPI_Comm;
#define MPI_COMM_NULL   ((MPI_Comm)0x100)
#define MPI_COMM_WORLD  ((MPI_Comm)0x101)
#define MPI_COMM_SELF   ((MPI_Comm)0x102)

typedef struct MPI_ABI_Group *MPI_Group;
#define MPI_GROUP_NULL  ((MPI_Group)0x108)
#define MPI_GROUP_EMPTY ((MPI_Group)0x109)

typedef struct MPI_ABI_Win *MPI_Win;
#define MPI_WIN_NULL    ((MPI_Win)0x110)

typedef struct MPI_ABI_File *MPI_File;
#define MPI_FILE_NULL   ((MPI_File)0x118)

typedef struct MPI_ABI_Session *MPI_Session;
#define MPI_SESSION_NULL ((MPI_Session)0x120)

typedef struct MPI_ABI_Message *MPI_Message;
#define MPI_MESSAGE_NULL    ((MPI_Message)0x128)
#define MPI_MESSAGE_NO_PROC ((MPI_Message)0x129)

typedef struct MPI_ABI_Info *MPI_Info;
#define MPI_INFO_NULL   ((MPI_Info)0x130)
#define MPI_INFO_ENV    ((MPI_Info)0x131)

typedef struct MPI_ABI_Errhandler *MPI_Errhandler;
#define MPI_ERRHANDLER_NULL  ((MPI_Errhandler)0x140)
#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)0x141)
#define MPI_ERRORS_RETURN    ((MPI_Errhandler)0x142)
#define MPI_ERRORS_ABORT     ((MPI_Errhandler)0x143)

typedef struct MPI_ABI_Request *MPI_Request;
#define MPI_REQUEST_NULL ((MPI_Request)0x180)

typedef struct MPI_ABI_Datatype *MPI_Datatype;
#define MPI_DATATYPE_NULL           ((MPI_Datatype)0x200)
#define MPI_AINT                    ((MPI_Datatype)0x201)
#define MPI_COUNT                   ((MPI_Datatype)0x202)
#define MPI_OFFSET                  ((MPI_Datatype)0x203)
#define MPI_PACKED                  ((MPI_Datatype)0x207)
#define MPI_SHORT                   ((MPI_Datatype)0x208)
#define MPI_INT                     ((MPI_Datatype)0x209)
#define MPI_LONG                    ((MPI_Datatype)0x20a)
#define MPI_LONG_LONG               ((MPI_Datatype)0x20b)
#define MPI_LONG_LONG_INT           MPI_LONG_LONG
#define MPI_UNSIGNED_SHORT          ((MPI_Datatype)0x20c)
#define MPI_UNSIGNED                ((MPI_Datatype)0x20d)
#define MPI_UNSIGNED_LONG           ((MPI_Datatype)0x20e)
#define MPI_UNSIGNED_LONG_LONG      ((MPI_Datatype)0x20f)
#define MPI_FLOAT                   ((MPI_Datatype)0x210)
#define MPI_C_FLOAT_COMPLEX         ((MPI_Datatype)0x212)
#define MPI_C_COMPLEX               MPI_C_FLOAT_COMPLEX
#define MPI_CXX_FLOAT_COMPLEX       ((MPI_Datatype)0x213)
#define MPI_DOUBLE                  ((MPI_Datatype)0x214)
#define MPI_C_DOUBLE_COMPLEX        ((MPI_Datatype)0x216)
#define MPI_CXX_DOUBLE_COMPLEX      ((MPI_Datatype)0x217)
#define MPI_INTEGER                 ((MPI_Datatype)0x218)
#define MPI_LOGICAL                 ((MPI_Datatype)0x219)
#define MPI_REAL                    ((MPI_Datatype)0x21a)
#define MPI_COMPLEX                 ((MPI_Datatype)0x21b)
#define MPI_DOUBLE_PRECISION        ((MPI_Datatype)0x21c)
#define MPI_DOUBLE_COMPLEX          ((MPI_Datatype)0x21d)
#define MPI_LONG_DOUBLE             ((MPI_Datatype)0x220)
#define MPI_C_LONG_DOUBLE_COMPLEX   ((MPI_Datatype)0x224)
#define MPI_CXX_LONG_DOUBLE_COMPLEX ((MPI_Datatype)0x225)
#define MPI_FLOAT_INT               ((MPI_Datatype)0x228)
#define MPI_DOUBLE_INT              ((MPI_Datatype)0x229)
#define MPI_LONG_INT                ((MPI_Datatype)0x22a)
#define MPI_2INT                    ((MPI_Datatype)0x22b)
#define MPI_SHORT_INT               ((MPI_Datatype)0x22c)
#define MPI_LONG_DOUBLE_INT         ((MPI_Datatype)0x22d)
#define MPI_2REAL                   ((MPI_Datatype)0x230)
#define MPI_2DOUBLE_PRECISION       ((MPI_Datatype)0x231)
#define MPI_2INTEGER                ((MPI_Datatype)0x232)
#define MPI_C_BOOL                  ((MPI_Datatype)0x238)
#define MPI_CXX_BOOL                ((MPI_Datatype)0x239)
#define MPI_WCHAR                   ((MPI_Datatype)0x23c)
#define MPI_INT8_T                  ((MPI_Datatype)0x240)
#define MPI_UINT8_T                 ((MPI_Datatype)0x241)
#define MPI_CHAR                    ((MPI_Datatype)0x243)
#define MPI_SIGNED_CHAR             ((MPI_Datatype)0x244)
#define MPI_UNSIGNED_CHAR           ((MPI_Datatype)0x245)
#define MPI_BYTE                    ((MPI_Datatype)0x247)
#define MPI_INT16_T                 ((MPI_Datatype)0x248)
#define MPI_UINT16_T                ((MPI_Datatype)0x249)
#define MPI_INT32_T                 ((MPI_Datatype)0x250)
#define MPI_UINT32_T                ((MPI_Datatype)0x251)
#define MPI_INT64_T                 ((MPI_Datatype)0x258)
#define MPI_UINT64_T                ((MPI_Datatype)0x259)
#define MPI_INTEGER1                ((MPI_Datatype)0x2c0)
#define MPI_CHARACTER               ((MPI_Datatype)0x2c3)
#define MPI_INTEGER2                ((MPI_Datatype)0x2c8)
#define MPI_INTEGER4                ((MPI_Datatype)0x2d0)
#define MPI_REAL4                   ((MPI_Datatype)0x2d2)
#define MPI_INTEGER8                ((MPI_Datatype)0x2d8)
#define MPI_REAL8                   ((MPI_Datatype)0x2da)
#define MPI_COMPLEX8                ((MPI_Datatype)0x2db)
#define MPI_INTEGER16               ((MPI_Datatype)0x2e0)
#define MPI_REAL16                  ((MPI_Datatype)0x2e2)
#define MPI_COMPLEX16               ((MPI_Datatype)0x2e3)
#define MPI_COMPLEX32               ((MPI_Datatype)0x2eb)

/* MPI_LB and MPI_UB: MPI-1's bound marker types (MPI-4.1 5.1.7), removed
 * in MPI-3.0 and absent from the standard ABI; an ftmpi extension for
 * MPI-1 programs (with MPI_Type_struct, MPI_Type_lb, ...), as MPICH and
 * Open MPI keep them. Their handles lie above the ABI's reserved range of
 * predefined handles and below ftmpi's user handles. A program that wants
 * the strict ABI's names only defines FTMPI_STRICT_ABI. */
#ifndef FTMPI_STRICT_ABI
#define MPI_LB                      ((MPI_Datatype)0x10001)
#define MPI_UB                      ((MPI_Datatype)0x10002)
#endif

/* Fortran status indices. */
#define MPI_F_SOURCE      0
#define MPI_F_TAG         1
#define MPI_F_ERROR       2
#define MPI_F_STATUS_SIZE 8

/* Error classes (the standard ABI's values). */
#define MPI_SUCCESS                   0
#define MPI_ERR_BUFFER                1
#define MPI_ERR_COUNT                 2
#define MPI_ERR_TYPE                  3
#define MPI_ERR_TAG                   4
#define MPI_ERR_COMM                  5
#define MPI_ERR_RANK                  6
#define MPI_ERR_REQUEST               7
#define MPI_ERR_ROOT                  8
#define MPI_ERR_GROUP                 9
#define MPI_ERR_OP                    10
#define MPI_ERR_TOPOLOGY              11
#define MPI_ERR_DIMS                  12
#define MPI_ERR_ARG                   13
#define MPI_ERR_UNKNOWN               14
#define MPI_ERR_TRUNCATE              15
#define MPI_ERR_OTHER                 16
#define MPI_ERR_INTERN                17
#define MPI_ERR_PENDING               18
#define MPI_ERR_IN_STATUS             19
#define MPI_ERR_ACCESS                20
#define MPI_ERR_AMODE                 21
#define MPI_ERR_ASSERT                22
#define MPI_ERR_BAD_FILE              23
#define MPI_ERR_BASE                  24
#define MPI_ERR_CONVERSION            25
#define MPI_ERR_DISP                  26
#define MPI_ERR_DUP_DATAREP           27
#define MPI_ERR_FILE_EXISTS           28
#define MPI_ERR_FILE_IN_USE           29
#define MPI_ERR_FILE                  30
#define MPI_ERR_INFO_KEY              31
#define MPI_ERR_INFO_NOKEY            32
#define MPI_ERR_INFO_VALUE            33
#define MPI_ERR_INFO                  34
#define MPI_ERR_IO                    35
#define MPI_ERR_KEYVAL                36
#define MPI_ERR_LOCKTYPE              37
#define MPI_ERR_NAME                  38
#define MPI_ERR_NO_MEM                39
#define MPI_ERR_NOT_SAME              40
#define MPI_ERR_NO_SPACE              41
#define MPI_ERR_NO_SUCH_FILE          42
#define MPI_ERR_PORT                  43
#define MPI_ERR_PROC_ABORTED          44
#define MPI_ERR_QUOTA                 45
#define MPI_ERR_READ_ONLY             46
#define MPI_ERR_RMA_ATTACH            47
#define MPI_ERR_RMA_CONFLICT          48
#define MPI_ERR_RMA_RANGE             49
#define MPI_ERR_RMA_SHARED            50
#define MPI_ERR_RMA_SYNC              51
#define MPI_ERR_RMA_FLAVOR            52
#define MPI_ERR_SERVICE               53
#define MPI_ERR_SESSION               54
#define MPI_ERR_SIZE                  55
#define MPI_ERR_SPAWN                 56
#define MPI_ERR_UNSUPPORTED_DATAREP   57
#define MPI_ERR_UNSUPPORTED_OPERATION 58
#define MPI_ERR_VALUE_TOO_LARGE       59
#define MPI_ERR_WIN                   60
#define MPI_ERR_ERRHANDLER            61
/* Fault tolerance (not in MPI-5.0; the names ULFM has for MPI-6, and seed
 * 003's run-through class, which is the same class). */
#define MPI_ERR_PROC_FAILED           75
#define MPI_ERR_PROC_FAILED_PENDING   76
#define MPI_ERR_REVOKED               77
#define MPI_ERR_RANK_FAIL_STOP        MPI_ERR_PROC_FAILED
#define MPI_ERR_LASTCODE              0x3fff

/* Buffer addresses and ignored arguments. */
#define MPI_BOTTOM           ((void *)0)
#define MPI_IN_PLACE         ((void *)1)
#define MPI_BUFFER_AUTOMATIC ((void *)2)
#define MPI_ARGV_NULL        ((char **)0)
#define MPI_ARGVS_NULL       ((char ***)0)
#define MPI_ERRCODES_IGNORE  ((int *)0)
#define MPI_STATUS_IGNORE    ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE  ((MPI_Status *)0)
#define MPI_UNWEIGHTED       ((int *)4)
#define MPI_WEIGHTS_EMPTY    ((int *)5)

#define MPI_BSEND_OVERHEAD             512
#define MPI_MAX_DATAREP_STRING         128
#define MPI_MAX_ERROR_STRING           512
#define MPI_MAX_INFO_KEY               256
#define MPI_MAX_INFO_VAL               1024
#define MPI_MAX_LIBRARY_VERSION_STRING 8192
#define MPI_MAX_OBJECT_NAME            128
#define MPI_MAX_PORT_NAME              1024
#define MPI_MAX_PROCESSOR_NAME         256
#define MPI_MAX_STRINGTAG_LEN          1024
#define MPI_MAX_PSET_NAME_LEN          512

/* File and window modes. */
#define MPI_MODE_APPEND          1
#define MPI_MODE_CREATE          2
#define MPI_MODE_DELETE_ON_CLOSE 4
#define MPI_MODE_EXCL            8
#define MPI_MODE_RDONLY          16
#define MPI_MODE_RDWR            32
#define MPI_MODE_SEQUENTIAL      64
#define MPI_MODE_UNIQUE_OPEN     128
#define MPI_MODE_WRONLY          256
#define MPI_MODE_NOCHECK         1024
#define MPI_MODE_NOPRECEDE       2048
#define MPI_MODE_NOPUT           4096
#define MPI_MODE_NOSTORE         8192
#define MPI_MODE_NOSUCCEED       16384

/* Ranks, tags and other sentinels. */
#define MPI_ANY_SOURCE           (-1)
#define MPI_PROC_NULL            (-2)
#define MPI_ROOT                 (-3)
#define MPI_ANY_TAG              (-31)
#define MPI_KEYVAL_INVALID       (-127)
#define MPI_DISPLACEMENT_CURRENT (-255)
#define MPI_UNDEFINED            (-32766)

#define MPI_THREAD_SINGLE     0
#define MPI_THREAD_FUNNELED   1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE   7

#define MPI_ORDER_C              12
#define MPI_ORDER_FORTRAN        15
#define MPI_DISTRIBUTE_NONE      16
#define MPI_DISTRIBUTE_BLOCK     17
#define MPI_DISTRIBUTE_CYCLIC    18
#define MPI_DISTRIBUTE_DFLT_DARG 19

#define MPI_LOCK_SHARED    21
#define MPI_LOCK_EXCLUSIVE 22

#define MPI_WIN_UNIFIED  31
#define MPI_WIN_SEPARATE 32
#define MPI_WIN_FLAVOR_ALLOCATE 41
#define MPI_WIN_FLAVOR_CREATE   42
#define MPI_WIN_FLAVOR_DYNAMIC  43
#define MPI_WIN_FLAVOR_SHARED   44

#define MPI_IDENT     101
#define MPI_CONGRUENT 102
#define MPI_SIMILAR   103
#define MPI_UNEQUAL   104

#define MPI_GRAPH      201
#define MPI_DIST_GRAPH 202
#define MPI_CART       203

#define MPI_COMBINER_NAMED          301
#define MPI_COMBINER_DUP            302
#define MPI_COMBINER_CONTIGUOUS     303
#define MPI_COMBINER_VECTOR         304
#define MPI_COMBINER_HVECTOR        305
#define MPI_COMBINER_INDEXED        306
#define MPI_COMBINER_HINDEXED       307
#define MPI_COMBINER_INDEXED_BLOCK  308
#define MPI_COMBINER_HINDEXED_BLOCK 309
#define MPI_COMBINER_STRUCT         310
#define MPI_COMBINER_SUBARRAY       311
#define MPI_COMBINER_DARRAY         312
#define MPI_COMBINER_F90_REAL       313
#define MPI_COMBINER_F90_COMPLEX    314
#define MPI_COMBINER_F90_INTEGER    315
#define MPI_COMBINER_RESIZED        316
#define MPI_COMBINER_VALUE_INDEX    317

#define MPI_TYPECLASS_INTEGER 401
#define MPI_TYPECLASS_REAL    402
#define MPI_TYPECLASS_COMPLEX 403

#define MPI_SEEK_CUR 601
#define MPI_SEEK_END 602
#define MPI_SEEK_SET 603

#define MPI_COMM_TYPE_SHARED          1001
#define MPI_COMM_TYPE_HW_UNGUIDED     1002
#define MPI_COMM_TYPE_HW_GUIDED       1003
#define MPI_COMM_TYPE_RESOURCE_GUIDED 1004

/* Predefined attribute keys. */
#define MPI_TAG_UB            10001
#define MPI_IO                10002
#define MPI_HOST              10003
#define MPI_WTIME_IS_GLOBAL   10004
#define MPI_APPNUM            10005
#define MPI_LASTUSEDCODE      10006
#define MPI_UNIVERSE_SIZE     10007
#define MPI_WIN_BASE          20001
#define MPI_WIN_DISP_UNIT     20002
#define MPI_WIN_SIZE          20003
#define MPI_WIN_CREATE_FLAVOR 20004
#define MPI_WIN_MODEL         20005

/* Callback types. */
typedef int (MPI_Copy_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int (MPI_Delete_function)(MPI_Comm, int, void *, void *);
typedef void (MPI_User_function)(void *, void *, int *, MPI_Datatype *);
typedef void (MPI_User_function_c)(void *, void *, MPI_Count *, MPI_Datatype *);
typedef int (MPI_Grequest_cancel_function)(void *, int);
typedef int (MPI_Grequest_free_function)(void *);
typedef int (MPI_Grequest_query_function)(void *, MPI_Status *);
typedef int (MPI_Datarep_conversion_function)(void *, MPI_Datatype, int, void *, MPI_Offset, void *);
typedef int (MPI_Datarep_extent_function)(MPI_Datatype, MPI_Aint *, void *);
typedef int (MPI_Comm_copy_attr_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int (MPI_Comm_delete_attr_function)(MPI_Comm, int, void *, void *);
typedef int (MPI_Type_copy_attr_function)(MPI_Datatype, int, void *, void *, void *, int *);
typedef int (MPI_Type_delete_attr_function)(MPI_Datatype, int, void *, void *);
typedef int (MPI_Win_copy_attr_function)(MPI_Win, int, void *, void *, void *, int *);
typedef int (MPI_Win_delete_attr_function)(MPI_Win, int, void *, void *);
typedef void (MPI_Comm_errhandler_function)(MPI_Comm *, int *, ...);
typedef void (MPI_File_errhandler_function)(MPI_File *, int *, ...);
typedef void (MPI_Win_errhandler_function)(MPI_Win *, int *, ...);
typedef void (MPI_Session_errhandler_function)(MPI_Session *, int *, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef MPI_File_errhandler_function MPI_File_errhandler_fn;
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;

#define MPI_NULL_COPY_FN        ((MPI_Copy_function *)0x0)
#define MPI_DUP_FN              ((MPI_Copy_function *)0x1)
#define MPI_NULL_DELETE_FN      ((MPI_Delete_function *)0x0)
#define MPI_COMM_NULL_COPY_FN   ((MPI_Comm_copy_attr_function *)0x0)
#define MPI_COMM_DUP_FN         ((MPI_Comm_copy_attr_function *)0x1)
#define MPI_COMM_NULL_DELETE_FN ((MPI_Comm_delete_attr_function *)0x0)
#define MPI_TYPE_NULL_COPY_FN   ((MPI_Type_copy_attr_function *)0x0)
#define MPI_TYPE_DUP_FN         ((MPI_Type_copy_attr_function *)0x1)
#define MPI_TYPE_NULL_DELETE_FN ((MPI_Type_delete_attr_function *)0x0)
#define MPI_WIN_NULL_COPY_FN    ((MPI_Win_copy_attr_function *)0x0)
#define MPI_WIN_DUP_FN          ((MPI_Win_copy_attr_function *)0x1)
#define MPI_WIN_NULL_DELETE_FN  ((MPI_Win_delete_attr_function *)0x0)
#define MPI_CONVERSION_FN_NULL  ((MPI_Datarep_conversion_function *)0x0)

extern MPI_Fint *MPI_F_STATUS_IGNORE;
extern MPI_Fint *MPI_F_STATUSES_IGNORE;

/* Handle conversions: the standard ABI's handles are their integer values. */
#define MPI_Comm_toint(h)       ((int)(intptr_t)(h))
#define MPI_Comm_fromint(i)     ((MPI_Comm)(intptr_t)(i))
#define MPI_Errhandler_toint(h) ((int)(intptr_t)(h))
#define MPI_Errhandler_fromint(i) ((MPI_Errhandler)(intptr_t)(i))
#define MPI_File_toint(h)       ((int)(intptr_t)(h))
#define MPI_File_fromint(i)     ((MPI_File)(intptr_t)(i))
#define MPI_Group_toint(h)      ((int)(intptr_t)(h))
#define MPI_Group_fromint(i)    ((MPI_Group)(intptr_t)(i))
#define MPI_Info_toint(h)       ((int)(intptr_t)(h))
#define MPI_Info_fromint(i)     ((MPI_Info)(intptr_t)(i))
#define MPI_Message_toint(h)    ((int)(intptr_t)(h))
#define MPI_Message_fromint(i)  ((MPI_Message)(intptr_t)(i))
#define MPI_Op_toint(h)         ((int)(intptr_t)(h))
#define MPI_Op_fromint(i)       ((MPI_Op)(intptr_t)(i))
#define MPI_Request_toint(h)    ((int)(intptr_t)(h))
#define MPI_Request_fromint(i)  ((MPI_Request)(intptr_t)(i))
#define MPI_Session_toint(h)    ((int)(intptr_t)(h))
#define MPI_Session_fromint(i)  ((MPI_Session)(intptr_t)(i))
#define MPI_Type_toint(h)       ((int)(intptr_t)(h))
#define MPI_Type_fromint(i)     ((MPI_Datatype)(intptr_t)(i))
#define MPI_Win_toint(h)        ((int)(intptr_t)(h))
#define MPI_Win_fromint(i)      ((MPI_Win)(intptr_t)(i))
/* The MPI-3 Fortran conversions: handles are ints in Fortran as in the ABI. */
#define MPI_Comm_c2f(h)   MPI_Comm_toint(h)
#define MPI_Comm_f2c(i)   MPI_Comm_fromint(i)
#define MPI_Type_c2f(h)   MPI_Type_toint(h)
#define MPI_Type_f2c(i)   MPI_Type_fromint(i)
#define MPI_Group_c2f(h)  MPI_Group_toint(h)
#define MPI_Group_f2c(i)  MPI_Group_fromint(i)
#define MPI_Op_c2f(h)     MPI_Op_toint(h)
#define MPI_Op_f2c(i)     MPI_Op_fromint(i)
#define MPI_Request_c2f(h) MPI_Request_toint(h)
#define MPI_Request_f2c(i) MPI_Request_fromint(i)
#define MPI_Info_c2f(h)   MPI_Info_toint(h)
#define MPI_Info_f2c(i)   MPI_Info_fromint(i)
#define MPI_Win_c2f(h)    MPI_Win_toint(h)
#define MPI_Win_f2c(i)    MPI_Win_fromint(i)
#define MPI_File_c2f(h)   MPI_File_toint(h)
#define MPI_File_f2c(i)   MPI_File_fromint(i)
#define MPI_Errhandler_c2f(h) MPI_Errhandler_toint(h)
#define MPI_Errhandler_f2c(i) MPI_Errhandler_fromint(i)
#define MPI_Message_c2f(h) MPI_Message_toint(h)
#define MPI_Message_f2c(i) MPI_Message_fromint(i)
#define MPI_Session_c2f(h) MPI_Session_toint(h)
#define MPI_Session_f2c(i) MPI_Session_fromint(i)
/* Their profiling names (the conversions are casts: nothing to intercept). */
#define PMPI_Comm_c2f(h) MPI_Comm_c2f(h)
#define PMPI_Comm_f2c(i) MPI_Comm_f2c(i)
#define PMPI_Type_c2f(h) MPI_Type_c2f(h)
#define PMPI_Type_f2c(i) MPI_Type_f2c(i)
#define PMPI_Group_c2f(h) MPI_Group_c2f(h)
#define PMPI_Group_f2c(i) MPI_Group_f2c(i)
#define PMPI_Op_c2f(h) MPI_Op_c2f(h)
#define PMPI_Op_f2c(i) MPI_Op_f2c(i)
#define PMPI_Request_c2f(h) MPI_Request_c2f(h)
#define PMPI_Request_f2c(i) MPI_Request_f2c(i)
#define PMPI_Info_c2f(h) MPI_Info_c2f(h)
#define PMPI_Info_f2c(i) MPI_Info_f2c(i)
#define PMPI_Win_c2f(h) MPI_Win_c2f(h)
#define PMPI_Win_f2c(i) MPI_Win_f2c(i)
#define PMPI_File_c2f(h) MPI_File_c2f(h)
#define PMPI_File_f2c(i) MPI_File_f2c(i)
#define PMPI_Errhandler_c2f(h) MPI_Errhandler_c2f(h)
#define PMPI_Errhandler_f2c(i) MPI_Errhandler_f2c(i)
#define PMPI_Message_c2f(h) MPI_Message_c2f(h)
#define PMPI_Message_f2c(i) MPI_Message_f2c(i)
#define PMPI_Session_c2f(h) MPI_Session_c2f(h)
#define PMPI_Session_f2c(i) MPI_Session_f2c(i)

#include "ftmpi/core.h"
#include "ftmpi/p2p.h"
#include "ftmpi/coll.h"
#include "ftmpi/comm.h"
#include "ftmpi/dtype.h"
#include "ftmpi/ft.h"
#include "ftmpi/rma.h"
#include "ftmpi/io.h"
#include "ftmpi/dpm.h"
#include "ftmpi/pmpi.h"

#if defined(__cplusplus)
}
#endif

#endif /* FTMPI_MPI_H */
