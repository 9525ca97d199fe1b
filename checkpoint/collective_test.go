package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// runJob is mpi.Run with a deadline: a rank left waiting fails the test
// instead of hanging it.
func runJob(t *testing.T, n int, fn func(w *mpi.World) error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- mpi.Run(n, fn) }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("the %d-rank job did not end within 60s", n)
		return nil
	}
}

func rankDir(base string, r int) string { return filepath.Join(base, fmt.Sprintf("node%d", r)) }

// A rank whose directory is gone and whose memory is fresh (a respawned
// process on another node) restores from its buddy's copy; the common
// version is still the newest one, and its file is written back.
func TestBuddyRestoreAfterDirectoryDeleted(t *testing.T) {
	base := t.TempDir()
	const n, lost = 4, 2
	err := runJob(t, n, func(w *mpi.World) error {
		c := w.CommWorld()
		r := c.Rank()
		s, err := Open(rankDir(base, r), r)
		if err != nil {
			return err
		}
		for v := 1; v <= 3; v++ {
			if err := s.SaveCollective(c, v, payload(r, v)); err != nil {
				return err
			}
		}
		if owner, v, ok := s.Held(); !ok || owner != (r+n-1)%n || v != 3 {
			return fmt.Errorf("Held = %d, %d, %v; want %d, 3", owner, v, ok, (r+n-1)%n)
		}
		if r == lost {
			if err := os.RemoveAll(rankDir(base, r)); err != nil {
				return err
			}
			if s, err = Open(rankDir(base, r), r); err != nil { // a new process: nothing in memory
				return err
			}
			if _, err := s.Latest(); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("Latest after the directory was deleted: %v", err)
			}
		}
		v, data, err := s.RestoreLatest(c)
		if err != nil || v != 3 {
			return fmt.Errorf("RestoreLatest = %d, %v; want 3", v, err)
		}
		if !bytes.Equal(data, payload(r, 3)) {
			return fmt.Errorf("LoadCollective = %q", data)
		}
		if r == lost {
			// Protected on its own again.
			if got, err := s.Load(3); err != nil || !bytes.Equal(got, data) {
				return fmt.Errorf("file not written back: %v", err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A damaged newest file is replaced by the buddy's copy.
func TestBuddyRestoreOfCorruptFile(t *testing.T) {
	base := t.TempDir()
	err := runJob(t, 3, func(w *mpi.World) error {
		c := w.CommWorld()
		r := c.Rank()
		s, err := Open(base, r) // one shared directory
		if err != nil {
			return err
		}
		if err := s.SaveCollective(c, 7, payload(r, 7)); err != nil {
			return err
		}
		if r == 0 {
			flip(t, s.Path(7), -3)
		}
		v, err := s.LatestCommon(c)
		if err != nil || v != 7 {
			return fmt.Errorf("LatestCommon = %d, %v; want 7 (rank 0 through its buddy)", v, err)
		}
		data, err := s.LoadCollective(c, 7)
		if err != nil || !bytes.Equal(data, payload(r, 7)) {
			return fmt.Errorf("LoadCollective = %q, %v", data, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Ranks with different sets of valid versions agree on the newest version
// every one has; with none in common every rank gets ErrNotFound.
func TestLatestCommonOfDifferentSets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sets    [][]int
		corrupt map[int]int // rank -> version to damage
		want    int         // -1: none
	}{
		{"newest shared", [][]int{{1, 2, 3}, {1, 2}, {1, 2, 3}, {2, 3}}, nil, 2},
		{"damaged files do not count", [][]int{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 3}}, map[int]int{1: 3}, 1},
		{"nothing shared", [][]int{{1, 2}, {2}, {1}, {1, 2}}, nil, -1},
		{"one rank has none", [][]int{{1}, {1}, {}, {1}}, nil, -1},
		{"all equal", [][]int{{4, 9}, {4, 9}, {4, 9}, {4, 9}}, nil, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			err := runJob(t, len(tc.sets), func(w *mpi.World) error {
				c := w.CommWorld()
				r := c.Rank()
				s, err := Open(base, r)
				if err != nil {
					return err
				}
				for _, v := range tc.sets[r] {
					if err := s.Save(v, payload(r, v)); err != nil { // local only: no buddy copies
						return err
					}
				}
				if v, ok := tc.corrupt[r]; ok {
					truncate(t, s.Path(v), -1)
				}
				v, err := s.LatestCommon(c)
				if tc.want < 0 {
					if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no version every rank") {
						return fmt.Errorf("LatestCommon = %d, %v; want ErrNotFound", v, err)
					}
					return nil
				}
				if err != nil || v != tc.want {
					return fmt.Errorf("LatestCommon = %d, %v; want %d", v, err, tc.want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// When both the rank's files and its buddy's copy are gone, LoadCollective
// says so at that rank (and only there), and LatestCommon finds nothing.
func TestLoadCollectiveWhenBuddyLostToo(t *testing.T) {
	base := t.TempDir()
	const n, lost = 4, 1
	err := runJob(t, n, func(w *mpi.World) error {
		c := w.CommWorld()
		r := c.Rank()
		s, err := Open(rankDir(base, r), r)
		if err != nil {
			return err
		}
		if err := s.SaveCollective(c, 1, payload(r, 1)); err != nil {
			return err
		}
		if err := s.SaveCollective(c, 2, payload(r, 2)); err != nil {
			return err
		}
		switch r {
		case lost:
			if err := s.Remove(); err != nil {
				return err
			}
		case lost + 1: // the buddy restarted too: it holds nothing
			if s, err = Open(rankDir(base, r), r); err != nil {
				return err
			}
		}
		if v, _, err := s.RestoreLatest(c); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("RestoreLatest = %d, %v; want ErrNotFound", v, err)
		}
		data, err := s.LoadCollective(c, 2)
		if r != lost {
			if err != nil || !bytes.Equal(data, payload(r, 2)) {
				return fmt.Errorf("LoadCollective = %q, %v", data, err)
			}
			return nil
		}
		if data != nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "buddy 2 holds no copy") {
			return fmt.Errorf("LoadCollective at the lost rank = %q, %v", data, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A buddy that holds an older version than the one asked for says so.
func TestLoadCollectiveBuddyHoldsOtherVersion(t *testing.T) {
	base := t.TempDir()
	err := runJob(t, 2, func(w *mpi.World) error {
		c := w.CommWorld()
		r := c.Rank()
		s, err := Open(base, r)
		if err != nil {
			return err
		}
		if err := s.SaveCollective(c, 1, payload(r, 1)); err != nil {
			return err
		}
		if err := s.Save(2, payload(r, 2)); err != nil { // local only
			return err
		}
		if r == 0 {
			if err := os.Remove(s.Path(2)); err != nil {
				return err
			}
		}
		_, err = s.LoadCollective(c, 2)
		if r == 0 && (err == nil || !strings.Contains(err.Error(), "buddy 1 holds version 1 only")) {
			return fmt.Errorf("LoadCollective = %v", err)
		}
		if r == 1 && err != nil {
			return err
		}
		// Version 1 is restorable everywhere.
		if v, err := s.LatestCommon(c); v != 1 || err != nil {
			return fmt.Errorf("LatestCommon = %d, %v; want 1", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCollectiveOnOneRankAndWrongRank(t *testing.T) {
	base := t.TempDir()
	err := runJob(t, 1, func(w *mpi.World) error {
		c := w.CommWorld()
		s, err := Open(base, 0)
		if err != nil {
			return err
		}
		if err := s.SaveCollective(c, 5, []byte("solo")); err != nil {
			return err
		}
		if _, _, ok := s.Held(); ok {
			return errors.New("a single rank holds a buddy copy of itself")
		}
		if v, err := s.LatestCommon(c); v != 5 || err != nil {
			return fmt.Errorf("LatestCommon = %d, %v", v, err)
		}
		if d, err := s.LoadCollective(c, 5); string(d) != "solo" || err != nil {
			return fmt.Errorf("LoadCollective = %q, %v", d, err)
		}
		other, err := Open(base, 3)
		if err != nil {
			return err
		}
		if err := other.SaveCollective(c, 1, nil); err == nil || !strings.Contains(err.Error(), "the store is rank 3's but the caller is rank 0") {
			return fmt.Errorf("SaveCollective with another rank's store: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A process failure during SaveCollective is returned (with ErrorsReturn),
// and the local checkpoint is saved all the same.
func TestSaveCollectiveWithFailedBuddy(t *testing.T) {
	base := t.TempDir()
	err := runJob(t, 3, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn)
		r := c.Rank()
		s, err := Open(base, r)
		if err != nil {
			return err
		}
		if r == 2 {
			w.Kill()
		}
		err = s.SaveCollective(c, 1, payload(r, 1))
		// Rank 0 receives its copy from rank 2: that must fail. Rank 1
		// only sends to rank 2, which may have been buffered before the
		// death was known.
		if r == 0 && !errors.Is(err, mpi.ErrProcFailed) || err != nil && !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("SaveCollective with rank 2 dead: %v, want ErrProcFailed", err)
		}
		if d, err := s.Load(1); err != nil || !bytes.Equal(d, payload(r, 1)) {
			return fmt.Errorf("local checkpoint not saved: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A rank that dies at any point of the collective protocols never leaves a
// live rank waiting: every survivor returns from every call, with no error
// or ErrProcFailed, within the deadline. The victim dies at different
// steps; the scheduler varies where the others are at that moment.
func TestFailureDuringCollectivesNeverHangs(t *testing.T) {
	for round := range 60 {
		n := 3 + round%3
		victim := round % n
		dieAfter := round / 3 % 4 // calls the victim makes before dying
		base := t.TempDir()
		done := make(chan error, 1)
		go func() {
			done <- mpi.Run(n, func(w *mpi.World) error {
				c := w.CommWorld()
				c.SetErrhandler(mpi.ErrorsReturn)
				r := c.Rank()
				s, err := Open(base, r)
				if err != nil {
					return err
				}
				calls := []func() error{
					func() error { return s.SaveCollective(c, 1, payload(r, 1)) },
					func() error { return s.SaveCollective(c, 2, payload(r, 2)) },
					func() error { _, err := s.LatestCommon(c); return err },
					func() error { _, err := s.LoadCollective(c, 2); return err },
					func() error { _, _, err := s.RestoreLatest(c); return err },
				}
				for i, call := range calls {
					if r == victim && i == dieAfter {
						w.Kill()
					}
					if err := call(); err != nil && !errors.Is(err, mpi.ErrProcFailed) && !errors.Is(err, ErrNotFound) {
						return fmt.Errorf("call %d: %v", i, err)
					}
				}
				return nil
			})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d (n %d, rank %d dies after %d calls): %v", round, n, victim, dieAfter, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d (n %d, rank %d dies after %d calls): a survivor is still waiting after 30s", round, n, victim, dieAfter)
		}
	}
}
