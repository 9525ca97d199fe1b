package rma

import (
	"errors"
	"fmt"

	"github.com/ftmpi/ftmpi/internal/rma/segment"
)

// Shared windows (MPI_Win_allocate_shared and MPI_Win_shared_query,
// MPI-4.1 12.2.3): every member allocates its part of one memory segment
// that all of them map. The engine owns the window's segment: what the
// members exchange to set it up (each member's size and displacement
// unit, rank 0's choice of layout), its layout (parts contiguous in rank
// order, or each on a page if rank 0 asked for it), the set-up's errors
// in the engine's terms, the query of a member's part and the unmapping.
// The segment itself (its file, mapping and removal, the set-up's
// protocol) is package rma/segment's; the binding gives the allgather and
// checks the arguments.

// SharedConfig is what ShareWindow sets up one member's shared window
// segment from. It has no MPI counterpart.
type SharedConfig struct {
	// Rank and Size are this member's rank and the window's members.
	Rank, Size int
	// Allgather gathers every member's words (the same number at each),
	// in rank order; an error of it ends the set-up as it is.
	Allgather func(mine []int64) ([]int64, error)
	// Bytes and Unit are this member's part: its size in bytes and its
	// displacement unit.
	Bytes, Unit int
	// Noncontig asks that each part begin on a page; rank 0's value lays
	// the segment out.
	Noncontig bool
	// Refuse, if not nil, is this member's refusal of its own arguments:
	// ShareWindow returns it as it is at this member, and every other
	// member gets a CodeArgs Error naming the lowest refusing rank.
	Refuse error
}

// CodeSegment and CodeArgs are the codes of ShareWindow's errors.
const (
	CodeSegment Code = iota + 64 // the segment could not be created or mapped (MPI_ERR_OTHER)
	CodeArgs                     // another member refused its arguments, Peer (MPI_ERR_ARG)
)

// SharedMem is one member's mapping of a shared window's segment and every
// member's part of it. It has no MPI counterpart.
type SharedMem struct{ seg *segment.Segment }

// ShareWindow sets up a shared window's segment, collectively over the
// members (two allgathers): it returns this member's mapping of it, or,
// with nothing mapped and no file left, c.Refuse itself, an *Error of code
// CodeSegment (the segment could not be created at rank 0 or mapped at
// some member; Detail says which), an *Error of code CodeArgs (Peer: the
// lowest member that refused, or rank 0 that could not create it), or an
// error of c.Allgather. It has no MPI counterpart.
func ShareWindow(c SharedConfig) (*SharedMem, error) {
	m := segment.Members{Rank: c.Rank, Size: c.Size, Allgather: c.Allgather}
	noncontig := int64(0)
	if c.Noncontig {
		noncontig = 1
	}
	s, err := segment.Share(m, segment.KindWin, []int64{int64(c.Bytes), int64(c.Unit), noncontig}, c.Refuse, func(all [][]int64) (*segment.Segment, int) {
		sizes, units := make([]int, c.Size), make([]int, c.Size)
		for r := range c.Size {
			sizes[r], units[r] = int(all[r][0]), int(all[r][1])
		}
		return segment.New(sizes, units, all[0][2] != 0) // rank 0's noncontig
	})
	if err != nil {
		var ce *segment.CreateError
		var re *segment.RefusedError
		var me *segment.MapError
		switch {
		case c.Refuse != nil && err == c.Refuse:
		case errors.As(err, &ce):
			err = &Error{CodeSegment, NoPeer, fmt.Sprintf("cannot create the shared segment: %v", ce.Err)}
		case errors.As(err, &re):
			err = &Error{CodeArgs, re.Rank, fmt.Sprintf("rank %d's arguments were refused", re.Rank)}
		case errors.As(err, &me):
			err = &Error{CodeSegment, NoPeer, fmt.Sprintf("cannot map the shared segment of %d bytes: %v", me.Total, me.Err)}
		}
		return nil, err
	}
	return &SharedMem{s}, nil
}

// Part is member rank's part of the mapping (nil if empty). It has no
// MPI counterpart.
func (s *SharedMem) Part(rank int) []byte { return s.seg.Part(rank) }

// Units is every member's displacement unit, in rank order (a copy). It
// has no MPI counterpart.
func (s *SharedMem) Units() []int { return append([]int(nil), s.seg.Unit...) }

// Members is the number of the window's members. It has no MPI
// counterpart.
func (s *SharedMem) Members() int { return len(s.seg.Size) }

// Query is member rank's part (MPI_Win_shared_query): its size in bytes,
// its displacement unit and the memory, mapped here. A negative rank
// (MPI_PROC_NULL) asks for the lowest member whose part is not empty: if
// every part is empty, the answer is size 0, rank 0's unit and nil. ok is
// false for a rank beyond the members.
func (s *SharedMem) Query(rank int) (size, unit int, part []byte, ok bool) {
	g := s.seg
	if rank < 0 {
		for r, n := range g.Size {
			if n > 0 {
				return n, g.Unit[r], g.Part(r), true
			}
		}
		return 0, g.Unit[0], nil, true
	}
	if rank >= len(g.Size) {
		return 0, 0, nil, false
	}
	return g.Size[rank], g.Unit[rank], g.Part(rank), true
}

// Unmap removes this member's mapping (the window was freed, its server
// stopped). It has no MPI counterpart.
func (s *SharedMem) Unmap() { s.seg.Unmap() }
