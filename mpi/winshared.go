package mpi

// Shared-memory windows (MPI_Win_allocate_shared and MPI_Win_shared_query,
// MPI-4.1 12.2.3): every process of the communicator allocates its part of
// one memory segment that all of them map, so each can load and store the
// others' parts directly, besides the one-sided operations.
//
// Design. One segment per window (the window engine's, internal/rma's
// ShareWindow over internal/rma/segment: its file, mapping and removal), created by the communicator's rank 0, mapped by every
// process and unlinked once all have mapped it. Every rank maps it itself,
// also ranks that are goroutines of one process (Run): then each has its
// own mapping of the same pages. The parts are contiguous in rank order
// (rank r+1's part begins where rank r's ends) unless the info key
// "alloc_shared_noncontig" is "true" at rank 0: then each part begins on a
// page boundary. The window is otherwise a byte window of the engine
// (WinCreateBytes) over the caller's part: Put, Get, the accumulates,
// fences, locks and flushes work as on any window. The mapping is removed
// by Free, after the window's server stopped.
//
// The processes must share memory: they must be on one host, as the
// launcher reported the hosts (the test of SplitType with CommTypeShared);
// a communicator spanning hosts is an ErrComm error at every process.
//
// Nothing here runs per operation; this file must not change the data
// path of windows.

import (
	"errors"
	"sync"

	"github.com/ftmpi/ftmpi/internal/rma"
)

// ErrRMAFlavor is the class of a call on a window of the wrong flavor
// (SharedQuery on a window not made by WinAllocateShared); code as in
// Open MPI's mpi.h.
var ErrRMAFlavor = &Class{"MPI_ERR_RMA_FLAVOR: wrong flavor of window", 70} // MPI_ERR_RMA_FLAVOR

// WinFlavorShared is the MPI_WIN_CREATE_FLAVOR of a window made by
// WinAllocateShared (MPI_WIN_FLAVOR_SHARED; Open MPI's value).
const WinFlavorShared = 4

// InfoAllocSharedNoncontig is the info key asking WinAllocateShared for
// parts that need not be contiguous ("true": each begins on a page), the
// MPI_Win_allocate_shared hint of that name.
const InfoAllocSharedNoncontig = "alloc_shared_noncontig"

var shmWins sync.Map // *Win -> *rma.SharedMem, a shared window's segment

func shmOf(w *Win) *rma.SharedMem {
	if s, ok := shmWins.Load(w); ok {
		return s.(*rma.SharedMem)
	}
	return nil
}

// WinAllocateShared makes a window over size new zeroed bytes at this
// process that every process of c can also load and store directly
// (MPI_Win_allocate_shared), and returns it with them. It is collective
// over c, whose processes must share memory (be on one host: the members
// of a communicator made by SplitType(CommTypeShared, ...)); dispUnit is
// the displacement unit of this process's part. info may be nil; its key
// InfoAllocSharedNoncontig is read at rank 0. The returned slice has
// length size (nil if size is 0); in contiguous mode its capacity reaches
// the end of the segment (the parts of the higher ranks follow it). SharedQuery gives
// the other processes' parts. The memory stays valid until Free.
func (c *Comm) WinAllocateShared(size, dispUnit int, info *Info) (*Win, []byte, error) {
	const op = "MPI_Win_allocate_shared"
	if err := checkComm(c, op); err != nil {
		return nil, nil, err
	}
	if c.IsInter() {
		return nil, nil, c.handle(newErr(ErrComm, op, c, NoPeer, "windows are made on intracommunicators"))
	}
	// The same verdict at every process: every process knows every host.
	h0 := c.w.rt.Hosts.Name(c.worldRank(0))
	for r := 1; r < c.size; r++ {
		if h := c.w.rt.Hosts.Name(c.worldRank(r)); h != h0 {
			return nil, nil, c.handle(newErr(ErrComm, op, c, NoPeer,
				"the processes of the communicator do not share memory: rank 0 runs on host %q, rank %d on %q (use a communicator of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED))", h0, r, h))
		}
	}
	var bad error
	switch {
	case size < 0:
		bad = newErr(ErrArg, op, c, NoPeer, "negative size %d", size)
	case dispUnit <= 0:
		bad = newErr(ErrArg, op, c, NoPeer, "displacement unit %d is not positive", dispUnit)
	}
	noncontig := false
	if v, ok := info.Get(InfoAllocSharedNoncontig); ok && v == "true" {
		noncontig = true
	}
	// The set-up (rank 0 creates the segment, every process maps it, all
	// agree that all did) and its layout are the window engine's.
	s, err := rma.ShareWindow(rma.SharedConfig{Rank: c.rank, Size: c.size, Bytes: size, Unit: dispUnit, Noncontig: noncontig, Refuse: bad,
		Allgather: func(mine []int64) ([]int64, error) { return allgatherInts(c, op, mine...) }})
	if err != nil {
		var re *rma.Error
		switch {
		case bad != nil && err == bad:
		case errors.As(err, &re) && re.Code == rma.CodeArgs:
			err = newErr(ErrArg, op, c, re.Peer, "%s", re.Detail)
		case errors.As(err, &re) && re.Code == rma.CodeSegment:
			err = newErr(ErrOther, op, c, NoPeer, "%s", re.Detail)
		}
		return nil, nil, c.handle(err)
	}
	mem := s.Part(c.rank) // nil for an empty part
	w, err := winCreate(c, op, mem)
	if err != nil {
		s.Unmap()
		return nil, nil, err
	}
	w.units = s.Units()
	w.flavor = WinFlavorShared
	_ = w.SetInfo(info) // its window hints (win_extra.go); nil: the defaults
	shmWins.Store(w, s)
	return w, mem, nil
}

// SharedQuery returns the part of rank's process in the shared window w
// (MPI_Win_shared_query): its size in bytes, its displacement unit and
// the memory itself, mapped at this process (length size; in contiguous
// mode the capacity reaches the end of the segment; nil for an empty
// part, as MPICH answers NULL). rank ProcNull
// answers the part of the lowest rank whose size is not 0 (size 0 and a
// nil slice if all are empty). A window not made by WinAllocateShared is
// an ErrRMAFlavor error, a rank outside the window an ErrRank error.
func (w *Win) SharedQuery(rank int) (size, dispUnit int, base []byte, err error) {
	const op = "MPI_Win_shared_query"
	if err := w.checkFreed(op); err != nil {
		return 0, 0, nil, err
	}
	s := shmOf(w)
	if s == nil {
		return 0, 0, nil, w.handle(w.err(ErrRMAFlavor, op, NoPeer, "not a shared memory window (MPI_Win_allocate_shared)"))
	}
	q := rank
	if rank == ProcNull {
		q = -1 // the lowest rank whose part is not empty
	}
	size, dispUnit, base, ok := s.Query(q)
	if !ok || rank != ProcNull && rank < 0 {
		return 0, 0, nil, w.handle(w.err(ErrRank, op, NoPeer, "rank %d is not in the window's group of %d", rank, s.Members()))
	}
	return size, dispUnit, base, nil
}

// freeShared removes the mapping of a shared window once it is freed
// (Free, after the window's server stopped).
func (w *Win) freeShared() {
	if s := shmOf(w); s != nil {
		shmWins.Delete(w)
		s.Unmap()
	}
}
