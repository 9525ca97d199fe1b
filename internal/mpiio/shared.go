package mpiio

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
)

// The shared file pointer (MPI-4.1 14.4.4). It lives in a small side file
// next to the data file, as ROMIO keeps it: 24 bytes - the pointer (in
// etypes of the view), the key of the last collective operation that set
// it, and the pointer before that operation - read and written under an
// exclusive flock(2). No process serves it, so a failed process can take
// nothing with it: the kernel releases the lock of a process that dies
// holding it, and the survivors keep using the pointer. (flock locks
// belong to an open file description, so the ranks of an in-process job,
// each with its own descriptor, exclude each other too.)
//
// Independent calls reserve their range under the lock (Reserve) and then
// read or write outside it. Collective calls are applied once (Apply), by
// whichever process takes the lock first: each carries a key, one more
// than the largest key any process has seen (AgreedKey over the keys
// exchanged by the collective step that starts the call), and a process
// that finds the key already applied takes the pointer the first one
// found.

const shLen = 24

// Shared is one process's handle on a file's shared pointer: the side
// file at a path every process of the file agreed on, opened on first use.
// Its methods may be called from several goroutines. It has no MPI
// counterpart (the shared file pointer of MPI_File_read_shared and its
// siblings).
type Shared struct {
	path string

	mu sync.Mutex // the fields below
	fd *os.File
	k  uint64 // the key of the last collective operation applied here
}

// NewShared returns the handle on the shared pointer kept in the side file
// path; nothing is opened yet. It has no MPI counterpart.
func NewShared(path string) *Shared { return &Shared{path: path} }

// Path is the side file's path. It has no MPI counterpart.
func (s *Shared) Path() string { return s.path }

// Key is the key of the last collective operation applied here (for the
// next call's exchange). It has no MPI counterpart.
func (s *Shared) Key() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k
}

func (s *Shared) open() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd != nil {
		return s.fd, nil
	}
	fd, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, &IOError{Err: err, What: "the shared file pointer: "}
	}
	s.fd = fd
	return fd, nil
}

// Do runs fn on the pointer state (pointer p, key k, pointer before the
// last collective operation b) under the exclusive lock and stores what it
// returns; an error of fn is returned as it is, and nothing is stored.
// It has no MPI counterpart.
func (s *Shared) Do(fn func(p, k, b int64) (int64, int64, int64, error)) error {
	fd, err := s.open()
	if err != nil {
		return err
	}
	h := int(fd.Fd())
	for {
		if err := syscall.Flock(h, syscall.LOCK_EX); err != syscall.EINTR {
			if err != nil {
				return ioErr(err)
			}
			break
		}
	}
	defer syscall.Flock(h, syscall.LOCK_UN)
	var buf [shLen]byte
	if _, err := fd.ReadAt(buf[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return ioErr(err)
	}
	p, k, b := getI64(buf[0:]), getI64(buf[8:]), getI64(buf[16:])
	np, nk, nb, err := fn(p, k, b)
	if err != nil {
		return err
	}
	if np == p && nk == k && nb == b {
		return nil
	}
	binary.LittleEndian.PutUint64(buf[0:], uint64(np))
	binary.LittleEndian.PutUint64(buf[8:], uint64(nk))
	binary.LittleEndian.PutUint64(buf[16:], uint64(nb))
	if _, err := fd.WriteAt(buf[:], 0); err != nil {
		return ioErr(err)
	}
	return nil
}

// Get returns the pointer. It has no MPI counterpart (the engine of
// MPI_File_get_position_shared).
func (s *Shared) Get() (int64, error) {
	var at int64
	err := s.Do(func(p, k, b int64) (int64, int64, int64, error) {
		at = p
		return p, k, b, nil
	})
	return at, err
}

// Reserve moves the pointer past n etypes and returns where they start.
// It has no MPI counterpart (the engine of MPI_File_write_shared's
// reservation).
func (s *Shared) Reserve(n int64) (int64, error) {
	var at int64
	err := s.Do(func(p, k, b int64) (int64, int64, int64, error) {
		at = p
		return p + n, k, b, nil
	})
	return at, err
}

// AgreedKey is the key of a collective shared-pointer operation: one more
// than the largest key any live rank has seen (column col of rows). It has
// no MPI counterpart.
func AgreedKey(rows [][]int64, live []bool, col int) uint64 {
	k := int64(0)
	for r, row := range rows {
		if live[r] {
			k = max(k, row[col])
		}
	}
	return uint64(k) + 1
}

// SetKey records k as the key of the last collective operation applied
// here without touching the pointer (the key a process saw even where the
// side file cannot be used). It has no MPI counterpart.
func (s *Shared) SetKey(k uint64) {
	s.mu.Lock()
	s.k = k
	s.mu.Unlock()
}

// Apply applies a collective operation with key k once: the first process
// to come sets the pointer to fn(old); every process gets old. It has no
// MPI counterpart (the engine of MPI_File_seek_shared and the ordered
// accesses).
func (s *Shared) Apply(k uint64, fn func(p int64) (int64, error)) (int64, error) {
	var base int64
	err := s.Do(func(p, kk, b int64) (int64, int64, int64, error) {
		if uint64(kk) >= k {
			base = b
			return p, kk, b, nil
		}
		np, err := fn(p)
		if err != nil {
			return 0, 0, 0, err
		}
		base = p
		return np, int64(k), p, nil
	})
	if err == nil {
		s.SetKey(k)
	}
	return base, err
}

// Close closes the side file here and removes it (every process does:
// whoever is last; a missing one is fine). It has no MPI counterpart
// (part of MPI_File_close).
func (s *Shared) Close() {
	s.mu.Lock()
	fd := s.fd // kept: a use after Close fails on the closed descriptor
	s.mu.Unlock()
	if fd != nil {
		fd.Close()
	}
	os.Remove(s.path)
}
