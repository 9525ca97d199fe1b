package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// block is rank r's checkpoint data of version v: lengths differ, rank 1's
// is empty.
func block(r, v int) []byte {
	if r == 1 {
		return []byte{}
	}
	return bytes.Repeat([]byte(fmt.Sprintf("r%dv%d;", r, v)), 3+50*r)
}

// SaveFile writes one file per version; LoadFile reads a rank's own block
// and any other rank's; LatestFile finds the newest version.
func TestSaveFileLoadFile(t *testing.T) {
	dir := t.TempDir()
	const n = 4
	err := runJob(t, n, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn)
		r := c.Rank()
		for v := 1; v <= 2; v++ {
			if err := SaveFile(c, dir, v, block(r, v)); err != nil {
				return err
			}
		}
		got, err := LoadFile(c, dir, 2)
		if err != nil {
			return err
		}
		if !bytes.Equal(got[0], block(r, 2)) {
			return fmt.Errorf("rank %d own block: %q", r, got[0])
		}
		// Every rank reads the blocks of the next two ranks of version 1.
		a, b := (r+1)%n, (r+2)%n
		got, err = LoadFile(c, dir, 1, a, b)
		if err != nil {
			return err
		}
		if !bytes.Equal(got[0], block(a, 1)) || !bytes.Equal(got[1], block(b, 1)) {
			return fmt.Errorf("rank %d: blocks of %d and %d differ", r, a, b)
		}
		if _, err := LoadFile(c, dir, 1, n); err == nil || !strings.Contains(err.Error(), "no block") {
			return fmt.Errorf("LoadFile of rank %d's block: %v", n, err)
		}
		if _, err := LoadFile(c, dir, 7); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("LoadFile of a missing version: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := LatestFile(dir); err != nil || v != 2 {
		t.Fatalf("LatestFile = %d, %v", v, err)
	}
	if _, err := LatestFile(t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LatestFile of an empty directory: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("files left in the directory: %v", entries)
	}
}

// A damaged collective file is reported as a *CorruptError naming the
// defect at every rank, never returned as data.
func TestLoadFileCorruption(t *testing.T) {
	dir := t.TempDir()
	const n = 3
	save := func() {
		if err := runJob(t, n, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			return SaveFile(c, dir, 5, block(c.Rank(), 5))
		}); err != nil {
			t.Fatal(err)
		}
	}
	load := func() []error {
		var mu sync.Mutex
		errs := make([]error, n)
		if err := runJob(t, n, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			_, err := LoadFile(c, dir, 5, 0, 2)
			mu.Lock()
			errs[c.Rank()] = err
			mu.Unlock()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return errs
	}
	path := FilePath(dir, 5)
	headLen := fileHeadLen(n)
	for _, tc := range []struct {
		name   string
		damage func()
		reason string
	}{
		{"block byte flipped", func() { flip(t, path, headLen+8) }, "block of rank 0: checksum mismatch"},
		{"header byte flipped", func() { flip(t, path, 20) }, "header checksum mismatch"},
		{"magic", func() { flip(t, path, 0) }, "bad magic"},
		{"truncated in a block", func() {
			st, _ := os.Stat(path)
			truncate(t, path, int(st.Size())-3)
		}, "outside the file"},
		{"truncated header", func() { truncate(t, path, 10) }, "truncated header"},
		{"another version", func() {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[16] = 9 // version 9, with a valid header checksum
			fixHeaderCRC(b, n)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "holds version 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			save()
			tc.damage()
			for r, err := range load() {
				var ce *CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.reason) || ce.Path != path {
					t.Fatalf("rank %d: %v, want a CorruptError of %s saying %q", r, err, path, tc.reason)
				}
			}
		})
	}
}

func fixHeaderCRC(b []byte, n int) {
	hc := fileHeadLen(n) - 8
	c := crc32.Checksum(b[:hc], castagnoli)
	b[hc], b[hc+1], b[hc+2], b[hc+3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
}

// A rank killed during a SaveFile: the survivors get an error (never a
// hang), the version is not saved, no temporary file is ever read; after a
// Shrink the survivors read the last saved version back, each its own
// block and rank 0 also the dead rank's.
func TestSaveFileKilledThenTakeover(t *testing.T) {
	dir := t.TempDir()
	const n, victim = 4, 2
	var saved sync.WaitGroup
	saved.Add(n)
	savedCh := make(chan struct{})
	go func() { saved.Wait(); close(savedCh) }()
	err := runJob(t, n, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn)
		r := c.Rank()
		if err := SaveFile(c, dir, 1, block(r, 1)); err != nil {
			return err
		}
		saved.Done()
		if r == victim {
			select {
			case <-savedCh:
			case <-time.After(20 * time.Second):
				return errors.New("the others did not save version 1")
			}
			w.Kill()
		}
		// ErrRevoked where another survivor revoked c first.
		if err := SaveFile(c, dir, 2, block(r, 2)); !errors.Is(err, mpi.ErrProcFailed) && !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("rank %d: SaveFile with a killed rank: %v", r, err)
		}
		c.Revoke()
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		v, err := LatestFile(dir)
		if err != nil || v != 1 {
			return fmt.Errorf("LatestFile after the failed save = %d, %v", v, err)
		}
		ranks := []int{r}
		if s.Rank() == 0 {
			ranks = append(ranks, victim)
		}
		got, err := LoadFile(s, dir, v, ranks...)
		if err != nil {
			return err
		}
		for i, rr := range ranks {
			if !bytes.Equal(got[i], block(rr, 1)) {
				return fmt.Errorf("rank %d: block of rank %d differs", r, rr)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
