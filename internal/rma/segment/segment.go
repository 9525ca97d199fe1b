// Package segment is a memory segment shared by the processes of one
// host: a shared window's (MPI_Win_allocate_shared, MPI-4.1 12.2.3) and a
// one-host communicator's collectives' (internal/coll/shmcoll). It is a
// file created by one process in the job's private temporary directory
// (FTMPI_TMPDIR, which only the job's user can enter and the launcher
// removes when the job ends; else the system's temporary directory, the
// file then being 0600), sized to the total of the parts, mapped
// (MAP_SHARED) by every process of the group and unlinked once all have
// mapped it: no name outlives the creation. The parts are contiguous in
// rank order unless asked to begin each on a page.
//
// It owns the file's name, creation, mapping and removal, the parts'
// layout and the set-up's protocol (Share: rank 0 creates, every process
// maps, all agree that all did, rank 0 unlinks), run over an allgather the
// caller gives; its users (the window engine's ShareWindow in internal/rma,
// the collectives' shared path in internal/coll) give that allgather and
// decide the parts. It must not import package mpi or talk to other processes by
// itself.
package segment

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Segment is a shared window's segment at one process: the mapping of the
// whole segment (nil: nothing mapped) and every rank's part. It has no
// MPI counterpart.
type Segment struct {
	Mapping []byte
	Off     []int // every rank's part: offset in the segment
	Size    []int //   and size in bytes
	Unit    []int //   and displacement unit
}

// New lays out the parts of the given sizes and displacement units: in
// rank order, each on a page boundary if noncontig. It returns the segment
// (not mapped) and its total size in bytes. It has no MPI counterpart.
func New(sizes, units []int, noncontig bool) (*Segment, int) {
	s := &Segment{Off: make([]int, len(sizes)), Size: append([]int(nil), sizes...), Unit: append([]int(nil), units...)}
	page := os.Getpagesize()
	total := 0
	for r := range sizes {
		if noncontig {
			total = (total + page - 1) / page * page
		}
		s.Off[r] = total
		total += sizes[r]
	}
	return s, total
}

// Part is rank's part of the mapping (nil if empty). It has no MPI
// counterpart.
func (s *Segment) Part(rank int) []byte {
	if s.Size[rank] == 0 {
		return nil
	}
	return s.Mapping[s.Off[rank] : s.Off[rank]+s.Size[rank]]
}

// Map maps the segment of total bytes (rounded up to a page): f if this
// process created it, else the file at path. It has no MPI counterpart.
func (s *Segment) Map(f *os.File, path string, total int) error {
	if total == 0 {
		return nil
	}
	page := os.Getpagesize()
	m, err := mapFile(f, path, (total+page-1)/page*page)
	s.Mapping = m
	return err
}

// Unmap removes the mapping (nothing if none). It has no MPI counterpart.
func (s *Segment) Unmap() {
	if s.Mapping != nil {
		unix.Munmap(s.Mapping)
		s.Mapping = nil
	}
}

// Dir is the directory of the segments' files: the job's private one if
// the launcher made one, else the system's temporary directory. It has no
// MPI counterpart.
func Dir() string {
	if d := os.Getenv("FTMPI_TMPDIR"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return os.TempDir()
}

// The kinds of segment: the prefix of their files' names.
const (
	KindWin  = "winshm"  // a shared window (MPI_Win_allocate_shared)
	KindColl = "collshm" // a one-host communicator's collectives (no MPI counterpart)
)

// path is the file of the segment of kind named by token (the same at
// every process of one host: same directory, same kind and token).
func path(kind string, token int64) string {
	return filepath.Join(Dir(), "ftmpi-"+kind+"-"+strconv.FormatUint(uint64(token), 36))
}

// create creates a new segment file of kind, readable by its owner only,
// and returns it with its path and token (never 0).
func create(kind string) (*os.File, string, int64, error) {
	for range 8 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", 0, err
		}
		token := int64(binary.LittleEndian.Uint64(b[:])>>1 | 1)
		p := path(kind, token)
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", 0, err
		}
		return f, p, token, nil
	}
	return nil, "", 0, errors.New("no unused file name after 8 tries")
}

// drop closes and removes a segment file created for a creation that
// failed (nothing if f is nil).
func drop(f *os.File, path string) {
	if f != nil {
		f.Close()
		os.Remove(path)
	}
}

// mapFile maps n bytes of the segment (f if this process created it,
// else the file at path), growing the file to n first (every process
// does: the same size, so the order does not matter).
func mapFile(f *os.File, path string, n int) ([]byte, error) {
	if f == nil {
		var err error
		if f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.Size() < int64(n) {
		if err := f.Truncate(int64(n)); err != nil {
			return nil, err
		}
	}
	return unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}
