package checkpoint

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ftmpi/ftmpi/mpi"
)

// Tags on the communicator used by the collective methods; an application
// must not have its own messages with these tags in flight on the same
// communicator while it calls them (or it passes a Dup of its communicator).
const (
	TagBuddyHeader = mpi.TagUB - 2 // version and length of a buddy copy
	TagBuddyData   = mpi.TagUB - 1 // the bytes of a buddy copy
	TagBuddyNeed   = mpi.TagUB     // whether a rank needs its copy back
)

// Buddy is the rank that holds rank's in-memory copy under SaveCollective
// on a communicator of size n: (rank+1) mod n.
func Buddy(rank, n int) int { return (rank + 1) % n }

func (s *Store) checkComm(op string, c *mpi.Comm) error {
	if c == nil {
		return fmt.Errorf("checkpoint: %s: nil communicator", op)
	}
	if c.IsInter() {
		return fmt.Errorf("checkpoint: %s: intercommunicators are not supported", op)
	}
	if c.Rank() != s.rank {
		return fmt.Errorf("checkpoint: %s: the store is rank %d's but the caller is rank %d of %s", op, s.rank, c.Rank(), c.Name())
	}
	return nil
}

// SaveCollective saves data as version (like Save) at every rank of c and
// gives each rank's buddy, rank (r+1) mod n, an in-memory copy of it,
// replacing the copy it held before. It is collective over c: every rank
// calls it with the same version. The local file is written first, so a
// communication error (a failed process, with mpi.ErrorsReturn on c)
// leaves the local checkpoint saved; the returned error then says which
// step failed. On a communicator of size 1 it is Save.
func (s *Store) SaveCollective(c *mpi.Comm, version int, data []byte) error {
	const op = "SaveCollective"
	if err := s.checkComm(op, c); err != nil {
		return err
	}
	saveErr := s.Save(version, data) // the exchange still happens: the others are waiting
	n := c.Size()
	if n == 1 {
		return saveErr
	}
	r := c.Rank()
	right, left := Buddy(r, n), (r-1+n)%n
	hdr := []int64{int64(version), int64(len(data))}
	got := make([]int64, 2)
	if _, err := mpi.Sendrecv(c, hdr, right, TagBuddyHeader, got, left, TagBuddyHeader); err != nil {
		return errors.Join(saveErr, fmt.Errorf("checkpoint: %s version %d: exchange with buddies %d and %d: %w", op, version, right, left, err))
	}
	if got[1] < 0 || got[1] > 1<<40 {
		return errors.Join(saveErr, fmt.Errorf("checkpoint: %s version %d: rank %d announced a copy of %d bytes", op, version, left, got[1]))
	}
	buf := make([]byte, got[1])
	if _, err := mpi.Sendrecv(c, data, right, TagBuddyData, buf, left, TagBuddyData); err != nil {
		return errors.Join(saveErr, fmt.Errorf("checkpoint: %s version %d: copy to buddy %d: %w", op, version, right, err))
	}
	s.mu.Lock()
	s.held = &buddyCopy{owner: left, version: int(got[0]), data: buf}
	s.mu.Unlock()
	return saveErr
}

// Held reports the in-memory copy this store keeps for its left neighbour
// (the rank whose buddy it is): the owner's rank and the version, ok=false
// if it holds none.
func (s *Store) Held() (owner, version int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		return -1, -1, false
	}
	return s.held.owner, s.held.version, true
}

// heldFor returns the copy held for owner, or nil.
func (s *Store) heldFor(owner int) *buddyCopy {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil || s.held.owner != owner {
		return nil
	}
	return s.held
}

// LatestCommon returns the newest version that every rank of c can
// restore, from its own valid file or from the copy its buddy holds in
// memory, so that all ranks restart from the same step. It is collective
// over c and every rank gets the same answer; if no version is common to
// all, the error wraps ErrNotFound (at every rank).
func (s *Store) LatestCommon(c *mpi.Comm) (int, error) {
	const op = "LatestCommon"
	if err := s.checkComm(op, c); err != nil {
		return -1, err
	}
	vs, err := s.Versions()
	if err != nil {
		// Take part with nothing, so the others do not wait forever.
		vs = nil
	}
	n, r := c.Size(), c.Rank()
	held := int64(-1)
	if h := s.heldFor((r - 1 + n) % n); h != nil && n > 1 {
		held = int64(h.version)
	}
	mine := make([]int64, 0, len(vs)+1)
	mine = append(mine, held)
	for _, v := range vs {
		mine = append(mine, int64(v))
	}
	counts64 := make([]int64, n)
	if cerr := mpi.Allgather(c, []int64{int64(len(mine))}, counts64); cerr != nil {
		return -1, fmt.Errorf("checkpoint: %s: %w", op, cerr)
	}
	counts := make([]int, n)
	total := 0
	for i, k := range counts64 {
		counts[i] = int(k)
		total += int(k)
	}
	all := make([]int64, total)
	if cerr := mpi.Allgatherv(c, mine, all, counts, nil); cerr != nil {
		return -1, fmt.Errorf("checkpoint: %s: %w", op, cerr)
	}
	// avail[i]: versions rank i can restore.
	lists := make([][]int64, n)
	off := 0
	for i := range n {
		lists[i] = all[off : off+counts[i]]
		off += counts[i]
	}
	var common []int64
	for i := range n {
		avail := slices.Clone(lists[i][1:])
		if n > 1 {
			if hv := lists[Buddy(i, n)][0]; hv >= 0 {
				avail = append(avail, hv)
			}
		}
		if i == 0 {
			common = avail
			continue
		}
		common = slices.DeleteFunc(common, func(v int64) bool { return !slices.Contains(avail, v) })
	}
	if len(common) == 0 {
		if err != nil {
			return -1, fmt.Errorf("checkpoint: %s: no version every rank of %s can restore (this rank: %v): %w", op, c.Name(), err, ErrNotFound)
		}
		return -1, fmt.Errorf("checkpoint: %s: no version every rank of %s can restore (this rank has %v): %w", op, c.Name(), vs, ErrNotFound)
	}
	return int(slices.Max(common)), nil
}

// LoadCollective returns this rank's checkpoint version: from its own file
// if that is valid, else from the copy its buddy holds in memory (then it
// also writes the file back, so the rank is protected again on its own).
// It is collective over c: every rank calls it with the same version,
// normally the one LatestCommon returned. The error, if any, says why
// neither source had the version (it wraps ErrNotFound or ErrCorrupt as
// the local file did). Copies a restarted rank used to hold for its left
// neighbour are not rebuilt: the next SaveCollective does that.
func (s *Store) LoadCollective(c *mpi.Comm, version int) ([]byte, error) {
	const op = "LoadCollective"
	if err := s.checkComm(op, c); err != nil {
		return nil, err
	}
	data, lerr := s.Load(version)
	n := c.Size()
	if n == 1 {
		return data, lerr
	}
	r := c.Rank()
	right, left := Buddy(r, n), (r-1+n)%n
	// 1: tell my buddy whether I need my copy; learn whether my left
	// neighbour needs the copy I hold.
	need := []int64{0}
	if lerr != nil {
		need[0] = 1
	}
	leftNeed := make([]int64, 1)
	if _, err := mpi.Sendrecv(c, need, right, TagBuddyNeed, leftNeed, left, TagBuddyNeed); err != nil {
		return nil, s.loadErr(op, version, lerr, fmt.Errorf("asking buddy %d: %w", right, err))
	}
	// 2: headers: the version I hold for my left neighbour (-1: none) and
	// its length if it asked for it.
	var give []byte
	hdr := []int64{-1, 0}
	if leftNeed[0] == 1 {
		if h := s.heldFor(left); h != nil && h.version == version {
			give = h.data
			hdr = []int64{int64(h.version), int64(len(h.data))}
		} else if h != nil {
			hdr[0] = -2 - int64(h.version) // holds another version
		}
	}
	got := make([]int64, 2)
	if _, err := mpi.Sendrecv(c, hdr, left, TagBuddyHeader, got, right, TagBuddyHeader); err != nil {
		return nil, s.loadErr(op, version, lerr, fmt.Errorf("from buddy %d: %w", right, err))
	}
	if got[1] < 0 || got[1] > 1<<40 {
		return nil, s.loadErr(op, version, lerr, fmt.Errorf("buddy %d announced a copy of %d bytes", right, got[1]))
	}
	buf := make([]byte, got[1])
	// 3: the copies themselves (empty unless asked for).
	if _, err := mpi.Sendrecv(c, give, left, TagBuddyData, buf, right, TagBuddyData); err != nil {
		return nil, s.loadErr(op, version, lerr, fmt.Errorf("from buddy %d: %w", right, err))
	}
	if lerr == nil {
		return data, nil
	}
	switch {
	case got[0] == int64(version):
		// Protect the rank on its own again; the data is good even if
		// this fails (the next save will try again).
		_ = s.write(version, buf)
		return buf, nil
	case got[0] <= -2:
		return nil, s.loadErr(op, version, lerr, fmt.Errorf("buddy %d holds version %d only", right, -2-got[0]))
	default:
		return nil, s.loadErr(op, version, lerr, fmt.Errorf("buddy %d holds no copy", right))
	}
}

func (s *Store) loadErr(op string, version int, local, buddy error) error {
	return fmt.Errorf("checkpoint: %s: rank %d cannot restore version %d: local: %w; buddy: %v", op, s.rank, version, local, buddy)
}

// RestoreLatest is LatestCommon followed by LoadCollective: every rank of c
// gets the newest version all of them can restore, and its data. With no
// common version the error wraps ErrNotFound at every rank (start from
// scratch then).
func (s *Store) RestoreLatest(c *mpi.Comm) (version int, data []byte, err error) {
	v, err := s.LatestCommon(c)
	if err != nil {
		return -1, nil, err
	}
	data, err = s.LoadCollective(c, v)
	if err != nil {
		return -1, nil, err
	}
	return v, data, nil
}
