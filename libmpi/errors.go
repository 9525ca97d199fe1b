package main

/*
#include <stdint.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ftmpi/ftmpi/mpi"
)

// abiClass are the standard ABI's error class values by MPI name; the
// fault-tolerance classes have the values mpi.h gives them (not in
// MPI-5.0).
var abiClass = map[string]int{
	"MPI_SUCCESS": 0, "MPI_ERR_BUFFER": 1, "MPI_ERR_COUNT": 2, "MPI_ERR_TYPE": 3,
	"MPI_ERR_TAG": 4, "MPI_ERR_COMM": 5, "MPI_ERR_RANK": 6, "MPI_ERR_REQUEST": 7,
	"MPI_ERR_ROOT": 8, "MPI_ERR_GROUP": 9, "MPI_ERR_OP": 10, "MPI_ERR_TOPOLOGY": 11,
	"MPI_ERR_DIMS": 12, "MPI_ERR_ARG": 13, "MPI_ERR_UNKNOWN": 14, "MPI_ERR_TRUNCATE": 15,
	"MPI_ERR_OTHER": 16, "MPI_ERR_INTERN": 17, "MPI_ERR_PENDING": 18, "MPI_ERR_IN_STATUS": 19,
	"MPI_ERR_ACCESS": 20, "MPI_ERR_AMODE": 21, "MPI_ERR_ASSERT": 22, "MPI_ERR_BAD_FILE": 23,
	"MPI_ERR_BASE": 24, "MPI_ERR_CONVERSION": 25, "MPI_ERR_DISP": 26, "MPI_ERR_DUP_DATAREP": 27,
	"MPI_ERR_FILE_EXISTS": 28, "MPI_ERR_FILE_IN_USE": 29, "MPI_ERR_FILE": 30, "MPI_ERR_INFO_KEY": 31,
	"MPI_ERR_INFO_NOKEY": 32, "MPI_ERR_INFO_VALUE": 33, "MPI_ERR_INFO": 34, "MPI_ERR_IO": 35,
	"MPI_ERR_KEYVAL": 36, "MPI_ERR_LOCKTYPE": 37, "MPI_ERR_NAME": 38, "MPI_ERR_NO_MEM": 39,
	"MPI_ERR_NOT_SAME": 40, "MPI_ERR_NO_SPACE": 41, "MPI_ERR_NO_SUCH_FILE": 42, "MPI_ERR_PORT": 43,
	"MPI_ERR_PROC_ABORTED": 44, "MPI_ERR_QUOTA": 45, "MPI_ERR_READ_ONLY": 46, "MPI_ERR_RMA_ATTACH": 47,
	"MPI_ERR_RMA_CONFLICT": 48, "MPI_ERR_RMA_RANGE": 49, "MPI_ERR_RMA_SHARED": 50, "MPI_ERR_RMA_SYNC": 51,
	"MPI_ERR_RMA_FLAVOR": 52, "MPI_ERR_SERVICE": 53, "MPI_ERR_SESSION": 54, "MPI_ERR_SIZE": 55,
	"MPI_ERR_SPAWN": 56, "MPI_ERR_UNSUPPORTED_DATAREP": 57, "MPI_ERR_UNSUPPORTED_OPERATION": 58,
	"MPI_ERR_VALUE_TOO_LARGE": 59, "MPI_ERR_WIN": 60, "MPI_ERR_ERRHANDLER": 61,
	"MPI_ERR_PROC_FAILED": 75, "MPI_ERR_PROC_FAILED_PENDING": 76, "MPI_ERR_REVOKED": 77,
}

const (
	cSuccess     = 0
	cErrBuffer   = 1
	cErrCount    = 2
	cErrType     = 3
	cErrTag      = 4
	cErrComm     = 5
	cErrRank     = 6
	cErrRequest  = 7
	cErrRoot     = 8
	cErrGroup    = 9
	cErrOp       = 10
	cErrArg      = 13
	cErrUnknown  = 14
	cErrOther    = 16
	cErrIntern   = 17
	cErrInStatus = 19
	cErrInfo     = 34
	cErrKeyval   = 36
	cErrWin      = 60
	cErrFile     = 30
	cErrUnsupp   = 58
	cErrLastcode = 0x3fff
)

// classOfCode are the Go classes by ABI value, for MPI_Comm_call_errhandler
// and the binding's own errors.
var classOfCode = func() map[int]*mpi.Class {
	m := map[int]*mpi.Class{}
	for _, c := range []*mpi.Class{mpi.ErrBuffer, mpi.ErrCount, mpi.ErrType, mpi.ErrTag, mpi.ErrComm,
		mpi.ErrRank, mpi.ErrRequest, mpi.ErrRoot, mpi.ErrGroup, mpi.ErrOp, mpi.ErrTopology, mpi.ErrDims,
		mpi.ErrArg, mpi.ErrUnknown, mpi.ErrTruncate, mpi.ErrOther, mpi.ErrIntern, mpi.ErrInStatus,
		mpi.ErrPending, mpi.ErrProcFailed, mpi.ErrRevoked, mpi.ErrKeyval, mpi.ErrName, mpi.ErrPort,
		mpi.ErrService, mpi.ErrSpawn, mpi.ErrAccess, mpi.ErrAmode, mpi.ErrBadFile, mpi.ErrFileExists,
		mpi.ErrFile, mpi.ErrIO, mpi.ErrNotSame, mpi.ErrNoSpace, mpi.ErrNoSuchFile, mpi.ErrQuota,
		mpi.ErrReadOnly, mpi.ErrUnsupportedOperation, mpi.ErrInfo, mpi.ErrInfoKey, mpi.ErrInfoValue,
		mpi.ErrInfoNokey, mpi.ErrWin, mpi.ErrLocktype, mpi.ErrRMASync, mpi.ErrRMARange, mpi.ErrAssert} {
		m[codeOfClass(c)] = c
	}
	return m
}()

// codeOfClass is the ABI value of a Go error class.
func codeOfClass(c *mpi.Class) int {
	if c == nil {
		return cSuccess
	}
	name, _, _ := strings.Cut(c.Error(), ":")
	if v, ok := abiClass[name]; ok {
		return v
	}
	return cErrOther
}

// lastMsg keeps the message of the latest error of each class, for
// MPI_Error_string: codes are the classes themselves (as in Open MPI, so
// that programs comparing a return code with MPI_ERR_PROC_FAILED work), and
// the string of a code is the full message of its latest occurrence.
var lastMsg sync.Map // int -> string

// userClasses and userStrings are the classes and codes added by
// MPI_Add_error_class/code and their strings (MPI_Add_error_string).
var (
	userMu      sync.Mutex
	userNext    = cErrLastcode + 1 // user classes and codes are above MPI_ERR_LASTCODE
	userStrings = map[int]string{}
	userClassOf = map[int]int{}
)

// code converts err into an MPI error code and records its message.
func code(err error) C.int {
	if err == nil {
		return cSuccess
	}
	if ue, ok := err.(*userCodeErr); ok {
		return C.int(ue.code)
	}
	v := codeOfClass(mpi.ErrorClass(err))
	if v == cErrPending && isWildPending(err) {
		v = cErrProcFailedPending
	}
	lastMsg.Store(v, err.Error())
	return C.int(v)
}

// ABI classes code() tells apart within one Go class.
const (
	cErrPending           = 18 // MPI_ERR_PENDING
	cErrProcFailedPending = 76 // MPI_ERR_PROC_FAILED_PENDING
)

// isWildPending reports whether err is ULFM's pending wildcard receive:
// package mpi raises it as ErrPending from MPI_ANY_SOURCE (a potential
// sender failed unacknowledged, the request stays pending), which ULFM
// names MPI_ERR_PROC_FAILED_PENDING (MPICH ft/anysource); MPI_ERR_PENDING
// stays the class of a request a multiple completion left pending.
func isWildPending(err error) bool {
	var me *mpi.Error
	return errors.As(err, &me) && me.Class == mpi.ErrPending && me.Peer == mpi.AnySource
}

// userCodeErr is an error carrying a user-defined code (MPI_Comm_call_errhandler
// with a code from MPI_Add_error_code).
type userCodeErr struct{ code int }

func (e *userCodeErr) Error() string { return errString(e.code) }

// errOf makes the error for ABI code v in op (MPI_Comm_call_errhandler).
func errOf(v int, op string) error {
	if c, ok := classOfCode[v]; ok {
		return &mpi.Error{Class: c, Op: op, Peer: mpi.NoPeer}
	}
	return &userCodeErr{v}
}

// bad makes an argument error of class c found by the binding in op.
func bad(c *mpi.Class, op, format string, args ...any) error {
	return &mpi.Error{Class: c, Op: op, Peer: mpi.NoPeer, Detail: fmt.Sprintf(format, args...)}
}

// errString is MPI_Error_string of code v.
func errString(v int) string {
	if s, ok := lastMsg.Load(v); ok {
		return s.(string)
	}
	userMu.Lock()
	s, ok := userStrings[v]
	_, user := userClassOf[v]
	userMu.Unlock()
	if ok {
		return s
	}
	if user {
		// MPI 9.5: the string of an added class or code that was given
		// none is empty.
		return ""
	}
	if v == cSuccess {
		return "MPI_SUCCESS: no errors"
	}
	if c, ok := classOfCode[v]; ok {
		return c.Error()
	}
	for name, x := range abiClass {
		if x == v {
			return name
		}
	}
	return fmt.Sprintf("unknown error code %d", v)
}

// classOf is MPI_Error_class of code v, or -1 if v is not a code.
func classOf(v int) int {
	if v >= 0 && v <= cErrLastcode {
		return v
	}
	userMu.Lock()
	defer userMu.Unlock()
	if c, ok := userClassOf[v]; ok {
		return c
	}
	return -1
}
