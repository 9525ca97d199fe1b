package mpi

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Special ranks and tags, as in MPI.
const (
	AnySource = -1     // MPI_ANY_SOURCE
	AnyTag    = -1     // MPI_ANY_TAG
	ProcNull  = -2     // MPI_PROC_NULL
	Undefined = -32766 // MPI_UNDEFINED
	// TagUB is the largest valid tag (MPI_TAG_UB).
	TagUB = math.MaxInt32
)

// Context ids of the predefined communicators. Every communicator owns two
// consecutive ids: ctx for point-to-point and ctx+1 for its collectives,
// so collective traffic never matches user receives.
const (
	ctxWorld uint32 = 0
	ctxSelf  uint32 = 2
)

// Comm is a communicator (MPI_Comm): a group of processes and a
// communication context. Its methods are safe for concurrent use.
type Comm struct {
	w       *World
	name    string
	ctx     uint32
	rank    int
	size    int
	members []int // world rank of each member; nil means identity (CommWorld)
	remote  []int // intercommunicators: world rank of each remote member; nil for intracommunicators
	errh    atomic.Pointer[Errhandler]
}

// IsInter reports whether c is an intercommunicator (MPI_Comm_test_inter).
func (c *Comm) IsInter() bool { return c.remote != nil }

// RemoteSize is the size of the remote group of an intercommunicator, 0 for
// an intracommunicator (MPI_Comm_remote_size).
func (c *Comm) RemoteSize() int { return len(c.remote) }

// Rank is the calling process's rank in c (MPI_Comm_rank).
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes in c (MPI_Comm_size).
func (c *Comm) Size() int { return c.size }

// Name returns the communicator's name (MPI_Comm_get_name).
func (c *Comm) Name() string { return c.name }

// World returns the World c belongs to.
func (c *Comm) World() *World { return c.w }

// SetErrhandler sets the error handler of c (MPI_Comm_set_errhandler).
func (c *Comm) SetErrhandler(h *Errhandler) error {
	if c == nil {
		return newErr(ErrComm, "MPI_Comm_set_errhandler", nil, NoPeer, "nil communicator")
	}
	if h == nil {
		return newErr(ErrArg, "MPI_Comm_set_errhandler", c, NoPeer, "nil error handler")
	}
	c.errh.Store(h)
	return nil
}

// Errhandler returns the error handler of c (MPI_Comm_get_errhandler).
func (c *Comm) Errhandler() *Errhandler { return c.errh.Load() }

// worldRank maps a rank of c to a world rank.
func (c *Comm) worldRank(r int) int {
	if c.members == nil {
		return r
	}
	return c.members[r]
}

// Numeric is the set of element types a message buffer may have.
type Numeric interface {
	byte | int8 | int16 | int32 | int64 | uint16 | uint32 | uint64 | int | uint | uintptr |
		float32 | float64 | complex64 | complex128
}

func dtypeOf[T Numeric]() uint8 {
	var z T
	switch any(z).(type) {
	case byte:
		return p2p.DTByte
	case int8:
		return p2p.DTInt8
	case int16:
		return p2p.DTInt16
	case int32:
		return p2p.DTInt32
	case int64:
		return p2p.DTInt64
	case uint16:
		return p2p.DTUint16
	case uint32:
		return p2p.DTUint32
	case uint64:
		return p2p.DTUint64
	case int:
		return p2p.DTInt
	case uint:
		return p2p.DTUint
	case uintptr:
		return p2p.DTUintptr
	case float32:
		return p2p.DTFloat32
	case float64:
		return p2p.DTFloat64
	case complex64:
		return p2p.DTComplex64
	case complex128:
		return p2p.DTComplex128
	}
	return 0
}

var dtypeSizes = [...]int{
	p2p.DTByte: 1, p2p.DTInt8: 1, p2p.DTInt16: 2, p2p.DTInt32: 4, p2p.DTInt64: 8,
	p2p.DTUint8: 1, p2p.DTUint16: 2, p2p.DTUint32: 4, p2p.DTUint64: 8,
	p2p.DTInt: int(unsafe.Sizeof(int(0))), p2p.DTUint: int(unsafe.Sizeof(uint(0))), p2p.DTUintptr: int(unsafe.Sizeof(uintptr(0))),
	p2p.DTFloat32: 4, p2p.DTFloat64: 8, p2p.DTComplex64: 8, p2p.DTComplex128: 16,
}

func dtypeSize(d uint8) int {
	if int(d) < len(dtypeSizes) && dtypeSizes[d] > 0 {
		return dtypeSizes[d]
	}
	return 1
}

// asBytes views a typed slice as bytes without copying.
func asBytes[T Numeric](buf []T) []byte {
	if len(buf) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)*int(unsafe.Sizeof(z)))
}

// Status describes a completed receive or probe (MPI_Status).
type Status struct {
	Source    int   // rank of the sender in the communicator (MPI_SOURCE)
	Tag       int   // tag of the message (MPI_TAG)
	Count     int   // number of elements received (MPI_Get_count)
	Cancelled bool  // the request was cancelled (MPI_Test_cancelled)
	Err       error // per-request error, set by Waitall and friends (MPI_ERROR)
}

func emptyStatus() Status { return Status{Source: AnySource, Tag: AnyTag} }

func procNullStatus() Status { return Status{Source: ProcNull, Tag: AnyTag} }
