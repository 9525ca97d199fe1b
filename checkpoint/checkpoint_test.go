package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func mustOpen(t *testing.T, dir string, rank int) *Store {
	t.Helper()
	s, err := Open(dir, rank)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func payload(rank, version int) []byte {
	return []byte(fmt.Sprintf("rank %d version %d %s", rank, version, strings.Repeat("x", 100*version)))
}

func TestSaveLoadLatestVersions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "dir") // created by Open
	s := mustOpen(t, dir, 3)
	if _, err := s.Latest(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Latest of an empty store: %v, want ErrNotFound", err)
	}
	for _, v := range []int{1, 5, 3, 10} {
		if err := s.Save(v, payload(3, v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(0, nil); err != nil { // empty checkpoints are fine
		t.Fatal(err)
	}
	vs, err := s.Versions()
	if err != nil || !slices.Equal(vs, []int{0, 1, 3, 5, 10}) {
		t.Fatalf("Versions = %v, %v", vs, err)
	}
	if v, err := s.Latest(); v != 10 || err != nil {
		t.Fatalf("Latest = %d, %v", v, err)
	}
	for _, v := range vs {
		got, err := s.Load(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := payload(3, v); v != 0 && !bytes.Equal(got, want) || v == 0 && len(got) != 0 {
			t.Fatalf("Load(%d) = %q", v, got)
		}
	}
	// Replacing a version.
	if err := s.Save(5, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load(5); string(got) != "new" {
		t.Fatalf("Load(5) after replacing = %q", got)
	}
	_, err = s.Load(7)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), s.Path(7)) {
		t.Fatalf("Load of a missing version: %v (want ErrNotFound naming %s)", err, s.Path(7))
	}
	if err := s.Save(-1, nil); err == nil {
		t.Fatal("Save(-1) succeeded")
	}
	if _, err := Open(dir, -1); err == nil {
		t.Fatal("Open with rank -1 succeeded")
	}
}

func TestRanksSharingADirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := mustOpen(t, dir, 0), mustOpen(t, dir, 1)
	if err := a.Save(1, []byte("a1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(2, []byte("b2")); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.Latest(); v != 1 {
		t.Fatalf("rank 0 Latest = %d, want 1 (rank 1's files are not its own)", v)
	}
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Latest(); v != 2 || err != nil {
		t.Fatalf("rank 1 lost its checkpoint when rank 0 removed its own: %d, %v", v, err)
	}
	if _, err := a.Latest(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rank 0 after Remove: %v", err)
	}
}

// Every kind of damage is detected, named, never loaded, and skipped by
// Latest and Versions.
func TestCorruptionDetected(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, s *Store, path string)
		reason string
	}{
		{"flipped payload byte", func(t *testing.T, s *Store, p string) { flip(t, p, -1) }, "payload checksum mismatch"},
		{"flipped version byte in header", func(t *testing.T, s *Store, p string) { flip(t, p, 16) }, "header checksum mismatch"},
		{"flipped magic", func(t *testing.T, s *Store, p string) { flip(t, p, 0) }, "bad magic"},
		{"truncated payload", func(t *testing.T, s *Store, p string) { truncate(t, p, -7) }, "truncated: payload"},
		{"truncated header", func(t *testing.T, s *Store, p string) { truncate(t, p, 10) }, "truncated header"},
		{"empty file", func(t *testing.T, s *Store, p string) { truncate(t, p, 0) }, "truncated header: 0"},
		{"trailing garbage", func(t *testing.T, s *Store, p string) { appendTo(t, p, "junk") }, "trailing garbage"},
		{"another rank's file", func(t *testing.T, s *Store, p string) {
			other := mustOpen(t, s.Dir(), s.Rank()+1)
			if err := other.Save(2, payload(1, 2)); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other.Path(2), p); err != nil {
				t.Fatal(err)
			}
		}, "written by rank 1, not rank 0"},
		{"another version's file", func(t *testing.T, s *Store, p string) {
			b, err := os.ReadFile(s.Path(1))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "holds version 1, not 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, t.TempDir(), 0)
			for v := 0; v <= 2; v++ {
				if err := s.Save(v, payload(0, v)); err != nil {
					t.Fatal(err)
				}
			}
			tc.damage(t, s, s.Path(2))
			data, err := s.Load(2)
			var ce *CorruptError
			if data != nil || !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
				t.Fatalf("Load of a damaged file = %q, %v; want a *CorruptError", data, err)
			}
			if ce.Path != s.Path(2) || !strings.Contains(ce.Reason, tc.reason) || !strings.Contains(err.Error(), s.Path(2)) {
				t.Fatalf("error %q (reason %q), want the file %s and %q", err, ce.Reason, s.Path(2), tc.reason)
			}
			if v, err := s.Latest(); v != 1 || err != nil {
				t.Fatalf("Latest = %d, %v; want 1 (the damaged version 2 skipped)", v, err)
			}
			if vs, _ := s.Versions(); !slices.Equal(vs, []int{0, 1}) {
				t.Fatalf("Versions = %v, want [0 1]", vs)
			}
		})
	}
}

func TestLatestNamesDamagedFiles(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 4)
	if err := s.Save(3, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	flip(t, s.Path(3), -1)
	_, err := s.Latest()
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), s.Path(3)) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Latest with only a damaged file: %v", err)
	}
}

// A temporary file left by a crash during Save (before the rename) is never
// taken for a checkpoint, and Open removes it.
func TestLeftoverTempFileIgnored(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, 0)
	if err := s.Save(1, []byte("one")); err != nil {
		t.Fatal(err)
	}
	// A complete, valid-looking body under a temporary name for version 2,
	// and a torn one for version 3.
	body := append(encodeHeader(0, 2, []byte("two")), "two"...)
	tmp2 := s.Path(2) + ".tmp-abcdef"
	tmp3 := s.Path(3) + ".tmp-012345"
	if err := os.WriteFile(tmp2, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp3, body[:5], 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Latest(); v != 1 || err != nil {
		t.Fatalf("Latest = %d, %v; want 1", v, err)
	}
	if _, err := s.Load(2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load(2) = %v; want ErrNotFound", err)
	}
	// Another rank's leftovers are not this rank's to remove.
	other := filepath.Join(dir, "ckpt-r1-v9.dat.tmp-aaaaaa")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, 0)
	for _, p := range []string{tmp2, tmp3} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open left %s behind: %v", p, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("Open of rank 0 removed rank 1's file: %v", err)
	}
}

// A Save that fails before the rename (here: fsync) leaves no file and no
// temporary behind, and the previous version intact.
func TestFailedSaveLeavesPreviousVersion(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, 0)
	if err := s.Save(1, []byte("one")); err != nil {
		t.Fatal(err)
	}
	s.fs = func(*os.File) error { return errors.New("disk on fire") }
	if err := s.Save(2, []byte("two")); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Save with a failing fsync: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != filepath.Base(s.Path(1)) {
		t.Fatalf("directory after a failed save: %v", ents)
	}
	if v, err := s.Latest(); v != 1 || err != nil {
		t.Fatalf("Latest = %d, %v", v, err)
	}
}

func TestPrune(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 2)
	for v := 1; v <= 6; v++ {
		if err := s.Save(v, payload(2, v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Prune(0); err == nil {
		t.Fatal("Prune(0) succeeded")
	}
	if err := s.Prune(4); err != nil {
		t.Fatal(err)
	}
	if vs, _ := s.Versions(); !slices.Equal(vs, []int{3, 4, 5, 6}) {
		t.Fatalf("after Prune(4): %v", vs)
	}
	s.SetKeep(2)
	if err := s.Save(7, payload(2, 7)); err != nil {
		t.Fatal(err)
	}
	if vs, _ := s.Versions(); !slices.Equal(vs, []int{6, 7}) {
		t.Fatalf("after Save with SetKeep(2): %v", vs)
	}
	// Damaged files age out too.
	flip(t, s.Path(6), -1)
	s.SetKeep(1)
	if err := s.Save(8, nil); err != nil {
		t.Fatal(err)
	}
	names, _ := s.names()
	if !slices.Equal(names, []int{8}) {
		t.Fatalf("files after SetKeep(1): %v", names)
	}
}

func flip(t *testing.T, path string, at int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at += len(b)
	}
	b[at] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, n int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if n < 0 {
		n += int(fi.Size())
	}
	if err := os.Truncate(path, int64(n)); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
