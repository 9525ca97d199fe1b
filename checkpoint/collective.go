package checkpoint

import (
	"errors"
	"fmt"
	"slices"
	"time"

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
//
// A failure never leaves a live rank waiting: every rank performs every
// exchange of the protocol whatever happened before (see exchange), so it
// only ever waits for messages that live ranks always send.
func (s *Store) SaveCollective(c *mpi.Comm, version int, data []byte) error {
	const op = "SaveCollective"
	if err := s.checkComm(op, c); err != nil {
		return err
	}
	defer traced(c, "checkpoint write", time.Now(), version, len(data))
	saveErr := s.Save(version, data) // the exchange still happens: the others are waiting
	n := c.Size()
	if n == 1 {
		return saveErr
	}
	r := c.Rank()
	right, left := Buddy(r, n), (r-1+n)%n
	got := make([]int64, 2)
	hr, hs := exchange(c, []int64{int64(version), int64(len(data))}, right, got, left, TagBuddyHeader)
	if hr != nil || got[1] < 0 || got[1] > 1<<40 {
		got = []int64{-1, 0}
	}
	buf := make([]byte, got[1])
	dr, ds := exchange(c, data, right, buf, left, TagBuddyData)
	if err := errors.Join(hr, hs, dr, ds); err != nil {
		return errors.Join(saveErr, fmt.Errorf("checkpoint: %s version %d: buddy exchange: %w", op, version, err))
	}
	s.mu.Lock()
	s.held = &buddyCopy{owner: left, version: int(got[0]), data: buf}
	s.mu.Unlock()
	return saveErr
}

// traced records a checkpoint write or read of version (bytes: its size
// when known, else -1) from start to now in the timeline of c's process
// (mpi.World.TraceSpan, ftmpirun --trace); nothing when tracing is off.
func traced(c *mpi.Comm, name string, start time.Time, version, bytes int) {
	if w := c.World(); w.Tracing() {
		a := map[string]any{"version": version, "comm": c.Name()}
		if bytes >= 0 {
			a["bytes"] = bytes
		}
		w.TraceSpan("checkpoint", name, start, a)
	}
}

// exchange sends send to dest and receives recv from source with tag, as
// a receive and a send posted together and both waited for whatever
// happens to the other (unlike a Sendrecv, which abandons its receive when
// its send fails): a live source's message is always consumed, so no
// sender is left waiting and no stale message is matched later.
// It returns the receive's error and the send's error separately.
func exchange[T mpi.Numeric](c *mpi.Comm, send []T, dest int, recv []T, source, tag int) (rerr, serr error) {
	rr, rerr := mpi.Irecv(c, recv, source, tag)
	sr, serr := mpi.Isend(c, send, dest, tag)
	if rerr == nil {
		_, rerr = rr.Wait()
	}
	if serr == nil {
		_, serr = sr.Wait()
	}
	if rerr != nil {
		rerr = fmt.Errorf("from rank %d: %w", source, rerr)
	}
	if serr != nil {
		serr = fmt.Errorf("to rank %d: %w", dest, serr)
	}
	return rerr, serr
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

// maxCommon is how many of its newest versions each rank offers to
// LatestCommon.
const maxCommon = 64

// LatestCommon returns the newest version that every rank of c can
// restore, from its own valid file or from the copy its buddy holds in
// memory, so that all ranks restart from the same step. It is collective
// over c (one Allgather) and every rank gets the same answer; each rank
// offers its 64 newest valid versions. If no version is common to all, the
// error wraps ErrNotFound (at every rank).
func (s *Store) LatestCommon(c *mpi.Comm) (int, error) {
	const op = "LatestCommon"
	if err := s.checkComm(op, c); err != nil {
		return -1, err
	}
	vs, err := s.Versions()
	if err != nil {
		vs = nil // take part with nothing, so that the others do not wait
	}
	vs = vs[max(0, len(vs)-maxCommon):]
	n, r := c.Size(), c.Rank()
	// [held version for my left neighbour or -1, count, versions..., padding]
	const width = 2 + maxCommon
	mine := make([]int64, width)
	mine[0] = -1
	if h := s.heldFor((r - 1 + n) % n); h != nil && n > 1 {
		mine[0] = int64(h.version)
	}
	mine[1] = int64(len(vs))
	for i, v := range vs {
		mine[2+i] = int64(v)
	}
	all := make([]int64, width*n)
	if cerr := mpi.Allgather(c, mine, all); cerr != nil {
		return -1, fmt.Errorf("checkpoint: %s: %w", op, cerr)
	}
	var common []int64
	for i := range n {
		row := all[i*width : (i+1)*width]
		k := min(max(int(row[1]), 0), maxCommon)
		avail := slices.Clone(row[2 : 2+k])
		if n > 1 {
			if hv := all[Buddy(i, n)*width]; hv >= 0 {
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
// the local file did). If the exchange with the buddies fails (a failed
// process), the error says so, and a rank whose own file was valid still
// gets its data along with the error. Copies a restarted rank used to hold
// for its left neighbour are not rebuilt: the next SaveCollective does
// that. Like SaveCollective, it never leaves a live rank waiting.
func (s *Store) LoadCollective(c *mpi.Comm, version int) ([]byte, error) {
	const op = "LoadCollective"
	if err := s.checkComm(op, c); err != nil {
		return nil, err
	}
	defer traced(c, "checkpoint read", time.Now(), version, -1)
	data, lerr := s.Load(version)
	n := c.Size()
	if n == 1 {
		return data, lerr
	}
	r := c.Rank()
	right, left := Buddy(r, n), (r-1+n)%n
	// Every rank performs the three exchanges whatever happened before
	// (see exchange), so that a failure leaves no live rank waiting.
	// 1: tell my buddy whether I need my copy; learn whether my left
	// neighbour needs the copy I hold.
	need := []int64{0}
	if lerr != nil {
		need[0] = 1
	}
	leftNeed := make([]int64, 1)
	nr, ns := exchange(c, need, right, leftNeed, left, TagBuddyNeed)
	if nr != nil {
		leftNeed[0] = 0
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
	hr, hs := exchange(c, hdr, left, got, right, TagBuddyHeader)
	if hr != nil || got[1] < 0 || got[1] > 1<<40 {
		got = []int64{-1, 0}
	}
	buf := make([]byte, got[1])
	// 3: the copies themselves (empty unless asked for).
	dr, ds := exchange(c, give, left, buf, right, TagBuddyData)
	if cerr := errors.Join(nr, ns, hr, hs, dr, ds); cerr != nil {
		if lerr == nil {
			// This rank has its data; the exchange failed for others.
			return data, fmt.Errorf("checkpoint: %s version %d: buddy exchange: %w", op, version, cerr)
		}
		return nil, s.loadErr(op, version, lerr, cerr)
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
