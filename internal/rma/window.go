package rma

import (
	"fmt"
	"sync"
	"unsafe"
)

// Net is a window's transport as the engine sees it, in window ranks:
// requests travel on one ordered channel per (origin, target) pair to the
// target's server, replies on another; failures and the revocation are
// the communicator's. Package mpi implements it over the window's private
// communicator; a test implements it in memory. It has no MPI counterpart.
type Net interface {
	// Send sends request msg to target's server (op names the call in
	// errors). The requests of one origin reach a target in order.
	Send(op string, target int, msg []byte) error
	// Await receives target's reply to this origin's last request into
	// buf, returning its length; it returns an error (never blocks for
	// ever) when target fails, the window is revoked or the job ends.
	Await(op string, target int, buf []byte) (int, error)
	// Reply sends a server's reply to origin; a failed origin is ignored.
	Reply(origin int, msg []byte)
	// Next waits for the next request from any origin and receives it
	// into room(its length). It returns Signalled when sig fires first,
	// Closed when stop is closed, the window is revoked or the job ends,
	// Skip for a request that could not be received.
	Next(sig, stop <-chan struct{}, room func(n int) []byte) (origin int, msg []byte, ev Event)
	// Signal is closed when a failure becomes known (taken before
	// LostCount: a loss LostCount misses closes it).
	Signal() <-chan struct{}
	// LostCount counts the failures known so far.
	LostCount() int64
	// Lost reports whether rank r is known failed by the transport.
	Lost(r int) bool
	// Failed appends the ranks known failed by the fault-tolerance
	// record (which may lag Lost) to dst.
	Failed(dst []int) []int
	// Revoked reports whether the window is revoked; IsRevocation
	// whether an error of Send or Await is the revocation.
	Revoked() bool
	IsRevocation(err error) bool
	// Aborted is closed when the job ends under the window.
	Aborted() <-chan struct{}
	// Track records that op blocks (the hang report) and returns its
	// end, or nil.
	Track(op string) func()
}

// Event is what Net.Next returned. It has no MPI counterpart.
type Event uint8

// The events of Net.Next.
const (
	Request   Event = iota // a request was received
	Signalled              // the failure signal fired
	Skip                   // a request could not be received: go on
	Closed                 // the server must stop
)

// Op codes the engine applies itself; the others are Config.Reduce's.
const (
	OpReplace uint8 = 13 // MPI_REPLACE
	OpNoOp    uint8 = 14 // MPI_NO_OP
)

// Config describes a window to NewWindow. It has no MPI counterpart.
type Config struct {
	Net        Net
	Rank, Size int
	Mem        []byte // this member's window memory
	ESize      int    // the size of its element (1: a byte window)
	DT         uint8  // its element type code
	// Reduce combines in into inout with the predefined operation op on
	// elements of type dt (never OpReplace or OpNoOp). Called with the
	// memory locked.
	Reduce func(dt, op uint8, in, inout []byte)
	// Layout serves a layout request (AccLayout): h its header, desc the
	// target typemap (ParseLayout decodes it), data the packed data. It
	// locks mem (the memory lock) to touch the window and returns the
	// fetched data of a fetching mode and whether the elements were
	// inside the window.
	Layout func(h *Header, desc, data []byte, mem sync.Locker) (out []byte, ok bool)
}

// Window is one member's window engine (MPI_Win's runtime): the target
// server (Serve), the origin's epochs and outstanding operations, the
// waits of the synchronisations. Every method but Serve may be called
// from any goroutine; the origin's methods take turns. It has no MPI
// counterpart.
type Window struct {
	net        Net
	rank, size int
	mem        []byte
	esize      int
	dt         uint8
	reduce     func(dt, op uint8, in, inout []byte)
	layout     func(h *Header, desc, data []byte, mem sync.Locker) ([]byte, bool)

	mu sync.Mutex // window memory (and, at the server, lk)

	// Origin side, under omu.
	omu    sync.Mutex
	failed map[int]error // first failure per target since its last synchronisation
	locked map[int]LockType
	all    bool // LockAll epoch
	scr    []uint64
	sbuf   []uint64
	hdr    [HeaderLen]byte
	freed  bool
	epoch  uint64 // this member's fences so far
	// the window ranks of the current access (Start) and exposure (Post)
	// epochs; nil outside them
	startGrp, postGrp []int
	fenceOpen         bool // between fences (after a Fence without NoSucceed)
	fenceOps          int  // the operations issued in the fence epoch
	nocheck           map[int]bool
	sent              map[int]bool // targets of one-way operations not yet completed
	fbuf              []int

	// Markers received (fmu); fch is closed and replaced when one arrives.
	fmu sync.Mutex
	mk  Markers
	fch chan struct{}

	// Server side.
	rbuf   []byte
	lk     LockTable
	stop   chan struct{}
	served chan struct{}
}

// NewWindow returns the engine of a window; run its Serve in a goroutine
// of its own. It has no MPI counterpart.
func NewWindow(c Config) *Window {
	return &Window{net: c.Net, rank: c.Rank, size: c.Size, mem: c.Mem, esize: c.ESize, dt: c.DT, reduce: c.Reduce, layout: c.Layout,
		failed: map[int]error{}, locked: map[int]LockType{}, nocheck: map[int]bool{}, sent: map[int]bool{},
		mk: NewMarkers(c.Size), fch: make(chan struct{}), lk: NewLockTable(),
		stop: make(chan struct{}), served: make(chan struct{})}
}

// Mem is the lock of the window memory: the server applies requests
// under it, and a binding takes it to read or change what the server
// reads (MPI_Win_sync, a dynamic window's regions). It has no MPI
// counterpart.
func (e *Window) Mem() sync.Locker { return &e.mu }

// Freed reports whether Free began. It has no MPI counterpart.
func (e *Window) Freed() bool {
	e.omu.Lock()
	defer e.omu.Unlock()
	return e.freed
}

// NoPeer is an Error's Peer when it names no member.
const NoPeer = -1

// Code is the kind of an engine Error. It has no MPI counterpart.
type Code uint8

// The error codes.
const (
	CodeSync    Code = iota + 1 // wrong synchronisation (MPI_ERR_RMA_SYNC)
	CodeFailed                  // a process failed (MPI_ERR_PROC_FAILED)
	CodeRevoked                 // the window is revoked (MPI_ERR_REVOKED)
	CodeAborted                 // the job ended under the call
	CodeRange                   // target memory outside the window (MPI_ERR_RMA_RANGE)
	CodeRefused                 // the target refused a request (MPI_ERR_INTERN)
)

// Error is an error of the engine itself (the Net's errors are returned
// as they are). It has no MPI counterpart.
type Error struct {
	Code   Code
	Peer   int // window rank, or NoPeer
	Detail string
}

func (e *Error) Error() string { return e.Detail }

// EpochError is a failure an operation met, kept and raised by the
// synchronisation that completes the operation (seed 002 A.2.4). It has
// no MPI counterpart.
type EpochError struct{ Err error }

func (e *EpochError) Error() string { return "an operation of this epoch failed: " + e.Err.Error() }

func (e *EpochError) Unwrap() error { return e.Err }

func syncErr(peer int, format string, args ...any) error {
	return &Error{CodeSync, peer, fmt.Sprintf(format, args...)}
}

func bytesOf(b []uint64) []byte {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), 8*len(b))
}

// room returns n bytes of the 8-aligned scratch *s.
func room(s *[]uint64, n int) []byte {
	k := (n + 7) / 8
	if cap(*s) < k {
		*s = make([]uint64, k)
	}
	return bytesOf((*s)[:k])[:n]
}
