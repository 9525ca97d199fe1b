// Package checkpoint stores versioned per-rank checkpoints of an ftmpi
// program in a local directory, for global-restart recovery: Reinit (roll
// back to the last checkpoint inside the running job) and
// Checkpoint-on-Failure (ftmpirun --restart-on-failure relaunches the job,
// which restarts from the checkpoints the survivors wrote).
//
// A checkpoint is an opaque byte slice saved under a version number (an
// iteration, a step) by one rank. Each one is a file
// "ckpt-r<rank>-v<version>.dat" holding a small header (magic, format
// version, rank, checkpoint version, payload length, CRC-32C of the payload
// and of the header) followed by the payload. Save writes a temporary file,
// fsyncs it, renames it into place and fsyncs the directory, so a crash
// leaves either the old set of files or the new one, plus at most a
// temporary file that is never read. Load verifies everything it reads: a
// torn, truncated or corrupted file, or one written by another rank, is
// reported as an error wrapping ErrCorrupt and naming the file and the
// defect, and is never returned as data. Several ranks may share one
// directory (file names carry the rank); each rank opens its own Store.
//
// The collective methods (SaveCollective, LatestCommon, LoadCollective,
// RestoreLatest) take a communicator whose rank is the Store's rank.
// SaveCollective also keeps an in-memory copy of each rank's checkpoint on
// its buddy, rank (r+1) mod n, so that a process whose files are gone (a
// respawned process on another node, a wiped local disk) can still restore
// as long as its buddy survived; LatestCommon agrees on the newest version
// every rank can restore, so that all ranks restart from the same step;
// RestoreLatest does both steps of a restart:
//
//	s, err := checkpoint.Open(dir, c.Rank())
//	...
//	step, data, err := s.RestoreLatest(c) // errors.Is(err, checkpoint.ErrNotFound): start from scratch
//	...
//	err = s.SaveCollective(c, step, state) // every k steps
//
// Beside the file-per-rank format, a collective MPI-IO format (file.go):
// SaveFile writes the blocks of every rank of a communicator into one file
// per version by one collective write through a file view, with a CRC per
// block in the header; LoadFile reads them back collectively - after a
// failure and a Shrink, the survivors read their own blocks and whoever
// takes over a dead rank's work reads its block too (LatestFile finds the
// newest version). It needs a directory that every rank sees (one host,
// or a shared file system).
//
// What the package must not do: it is not a job-wide or remote store (files
// are local, buddy copies live in memory and die with their holder; two
// adjacent failures lose a checkpoint that is not on disk), it never
// returns unverified bytes, it never deletes files of other ranks, and it
// keeps no process-global state (several ranks of an in-process mpi.Run
// each use their own Store). It does not decide when to checkpoint or what
// to put in one; that is the application's business.
package checkpoint

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ErrNotFound is wrapped by the errors for a checkpoint that does not exist
// (errors.Is(err, checkpoint.ErrNotFound)).
var ErrNotFound = errors.New("checkpoint not found")

// ErrCorrupt is wrapped by the errors for a checkpoint file that exists but
// fails verification (bad magic, unknown format, wrong rank or version,
// truncated, checksum mismatch). Such a file is never loaded.
var ErrCorrupt = errors.New("checkpoint corrupt")

// CorruptError describes a damaged checkpoint file. It wraps ErrCorrupt.
type CorruptError struct {
	Path   string // the file
	Reason string // what is wrong with it
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint: %s is damaged: %s", e.Path, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

const (
	magic         = "FTMPICKP"
	formatVersion = 1
	headerLen     = 8 + 4 + 4 + 8 + 8 + 4 + 4 // magic, format, rank, version, length, payload crc, header crc
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Store is one rank's checkpoints in a directory. Its methods are safe for
// concurrent use, but versions should be saved by one goroutine in order.
type Store struct {
	dir  string
	rank int

	mu   sync.Mutex
	keep int          // prune to the newest keep versions after each Save; 0 keeps all
	held *buddyCopy   // this rank's copy of its left neighbour's latest checkpoint (SaveCollective)
	fs   fileSyncFunc // fsync hook (tests)
}

// buddyCopy is a checkpoint kept in memory.
type buddyCopy struct {
	owner   int // rank of the checkpoint's owner
	version int
	data    []byte
}

type fileSyncFunc func(*os.File) error

// Open returns the store of rank's checkpoints in dir, creating dir if
// needed. Temporary files left behind by an interrupted Save of this rank
// are removed.
func Open(dir string, rank int) (*Store, error) {
	if rank < 0 {
		return nil, fmt.Errorf("checkpoint: invalid rank %d", rank)
	}
	if dir == "" {
		return nil, errors.New("checkpoint: empty directory name")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	s := &Store{dir: dir, rank: rank, fs: (*os.File).Sync}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	prefix := s.prefix()
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, prefix) && strings.Contains(n, ".tmp-") {
			_ = os.Remove(filepath.Join(dir, n))
		}
	}
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Rank is the rank whose checkpoints the store holds.
func (s *Store) Rank() int { return s.rank }

// SetKeep makes every later Save prune this rank's checkpoints to the
// newest k versions (the one just saved included). k <= 0 keeps all, the
// default.
func (s *Store) SetKeep(k int) {
	s.mu.Lock()
	s.keep = max(k, 0)
	s.mu.Unlock()
}

func (s *Store) prefix() string { return "ckpt-r" + strconv.Itoa(s.rank) + "-v" }

// Path is the file of the given version.
func (s *Store) Path(version int) string {
	return filepath.Join(s.dir, s.prefix()+strconv.Itoa(version)+".dat")
}

func checkVersion(version int) error {
	if version < 0 {
		return fmt.Errorf("checkpoint: invalid version %d (versions are >= 0)", version)
	}
	return nil
}

// Save writes data as this rank's checkpoint version, atomically: after a
// crash at any point the version either is complete and valid or does not
// exist. Saving an existing version replaces it. With SetKeep, older
// versions beyond the newest k are then removed.
func (s *Store) Save(version int, data []byte) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	if err := s.write(version, data); err != nil {
		return err
	}
	s.mu.Lock()
	keep := s.keep
	s.mu.Unlock()
	if keep > 0 {
		return s.Prune(keep)
	}
	return nil
}

func (s *Store) write(version int, data []byte) error {
	path := s.Path(version)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("checkpoint: save version %d: %w", version, err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: save version %d to %s: %w", version, path, err)
	}
	if _, err := f.Write(encodeHeader(s.rank, version, data)); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := s.fs(f); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: save version %d to %s: %w", version, path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: save version %d to %s: %w", version, path, err)
	}
	// Make the rename durable.
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("checkpoint: save version %d: sync directory: %w", version, err)
	}
	err = s.fs(d)
	d.Close()
	if err != nil {
		return fmt.Errorf("checkpoint: save version %d: sync directory %s: %w", version, s.dir, err)
	}
	return nil
}

func encodeHeader(rank, version int, data []byte) []byte {
	h := make([]byte, headerLen)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[8:], formatVersion)
	binary.LittleEndian.PutUint32(h[12:], uint32(rank))
	binary.LittleEndian.PutUint64(h[16:], uint64(version))
	binary.LittleEndian.PutUint64(h[24:], uint64(len(data)))
	binary.LittleEndian.PutUint32(h[32:], crc32.Checksum(data, castagnoli))
	binary.LittleEndian.PutUint32(h[36:], crc32.Checksum(h[:36], castagnoli))
	return h
}

// Load returns this rank's checkpoint version after verifying it. A missing
// file gives an error wrapping ErrNotFound, a damaged one a *CorruptError.
func (s *Store) Load(version int) ([]byte, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	return s.readFile(s.Path(version), version)
}

func (s *Store) readFile(path string, version int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: rank %d has no version %d (%s): %w", s.rank, version, path, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: rank %d version %d: %w", s.rank, version, err)
	}
	return verify(path, b, s.rank, version)
}

// verify checks a whole file's bytes and returns its payload.
func verify(path string, b []byte, rank, version int) ([]byte, error) {
	bad := func(format string, args ...any) ([]byte, error) {
		return nil, &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) < headerLen {
		return bad("truncated header: %d of %d bytes", len(b), headerLen)
	}
	if string(b[:8]) != magic {
		return bad("bad magic %q, not a checkpoint file", b[:8])
	}
	if got, want := binary.LittleEndian.Uint32(b[36:]), crc32.Checksum(b[:36], castagnoli); got != want {
		return bad("header checksum mismatch (stored %08x, computed %08x)", got, want)
	}
	if f := binary.LittleEndian.Uint32(b[8:]); f != formatVersion {
		return bad("unknown format version %d (this package reads %d)", f, formatVersion)
	}
	if r := int(binary.LittleEndian.Uint32(b[12:])); r != rank {
		return bad("written by rank %d, not rank %d", r, rank)
	}
	if v := binary.LittleEndian.Uint64(b[16:]); v != uint64(version) {
		return bad("holds version %d, not %d", v, version)
	}
	n := binary.LittleEndian.Uint64(b[24:])
	if body := uint64(len(b) - headerLen); body != n {
		if body < n {
			return bad("truncated: payload %d of %d bytes", body, n)
		}
		return bad("%d bytes of trailing garbage after the %d-byte payload", body-n, n)
	}
	data := b[headerLen:]
	if got, want := binary.LittleEndian.Uint32(b[32:]), crc32.Checksum(data, castagnoli); got != want {
		return bad("payload checksum mismatch (stored %08x, computed %08x)", got, want)
	}
	return data, nil
}

// names lists the versions that have a file of this rank, ascending,
// without verifying them. Temporary files are ignored.
func (s *Store) names() ([]int, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list %s: %w", s.dir, err)
	}
	prefix := s.prefix()
	var vs []int
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, ".dat") {
			continue
		}
		num := n[len(prefix) : len(n)-len(".dat")]
		v, err := strconv.Atoi(num)
		if err != nil || v < 0 || strconv.Itoa(v) != num {
			continue
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs, nil
}

// Versions lists this rank's valid checkpoint versions, ascending. Every
// file is verified (read in full); damaged files are left out. A missing
// directory gives an empty list.
func (s *Store) Versions() ([]int, error) {
	vs, err := s.names()
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	valid := vs[:0]
	for _, v := range vs {
		if _, err := s.Load(v); err == nil {
			valid = append(valid, v)
		}
	}
	return valid, nil
}

// Latest is this rank's newest valid checkpoint version. Damaged files are
// skipped; with no valid checkpoint the error wraps ErrNotFound and names
// the damaged files, if any.
func (s *Store) Latest() (int, error) {
	vs, err := s.names()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return -1, err
	}
	var damaged []string
	for i := len(vs) - 1; i >= 0; i-- {
		_, err := s.Load(vs[i])
		if err == nil {
			return vs[i], nil
		}
		damaged = append(damaged, err.Error())
	}
	if len(damaged) > 0 {
		return -1, fmt.Errorf("checkpoint: rank %d has no valid checkpoint in %s (%s): %w", s.rank, s.dir, strings.Join(damaged, "; "), ErrNotFound)
	}
	return -1, fmt.Errorf("checkpoint: rank %d has no checkpoint in %s: %w", s.rank, s.dir, ErrNotFound)
}

// Prune removes this rank's checkpoint files except the newest keep
// versions (keep >= 1). Damaged files count as versions too, so they age out
// like the others.
func (s *Store) Prune(keep int) error {
	if keep < 1 {
		return fmt.Errorf("checkpoint: Prune(%d): must keep at least one version", keep)
	}
	vs, err := s.names()
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vs[:max(0, len(vs)-keep)] {
		if err := os.Remove(s.Path(v)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("checkpoint: prune: %w", errors.Join(errs...))
	}
	return nil
}

// Remove deletes every checkpoint file of this rank (not the directory, nor
// other ranks' files, nor the buddy copy this Store holds in memory), for
// example once a run has completed and its checkpoints are no longer needed.
func (s *Store) Remove() error {
	vs, err := s.names()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vs {
		if err := os.Remove(s.Path(v)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
