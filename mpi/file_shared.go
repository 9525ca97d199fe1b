package mpi

import "github.com/ftmpi/ftmpi/internal/mpiio"

// The shared file pointer (MPI-4.1 14.4.4); its protocol is
// internal/mpiio's Shared, this file holds the typed calls. It lives in a small side file
// next to the data file (".<name>.ftmpi-shfp-<token>", the token agreed at
// FileOpen, removed by Close), as ROMIO keeps it: 24 bytes - the pointer
// (in etypes of the view), the key of the last collective operation that
// set it, and the pointer before that operation - read and written under
// an exclusive flock(2). No process serves it, so a failed process can
// take nothing with it: the kernel releases the lock of a process that
// dies holding it, and the survivors keep using the pointer. (flock
// locks belong to an open file description, so the ranks of an in-process
// job, each with its own descriptor, exclude each other too.)
//
// Independent calls (ReadShared, WriteShared) reserve their range under
// the lock and then read or write outside it. Collective calls
// (ReadOrdered, WriteOrdered, SeekShared, SetView's reset) are applied
// once, by whichever process takes the lock first: each carries a key, one
// more than the largest key any process has seen (exchanged by the
// collective step that starts the call), and a process that finds the key
// already applied takes the pointer the first one found. Recognised
// failed processes (run-through) contribute nothing to an ordered call but
// keep their place in the rank order (seed 003 17.12.4). After a failure
// cut a collective call, the pointer is undefined (seed 002 A.2.5): a
// SeekShared (or SetView) among the survivors sets it again.

// sharedReserve moves the shared pointer past n etypes and returns where
// they start.
func (f *File) sharedReserve(op string, n int64) (int64, error) {
	at, err := f.sh.Reserve(n)
	return at, f.ioErr(op, err)
}

// sharedApply applies a collective operation with key k once: the first
// process to come sets the pointer to fn(old); every process gets old.
func (f *File) sharedApply(op string, k uint64, fn func(p int64) (int64, error)) (int64, error) {
	base, err := f.sh.Apply(k, fn)
	return base, f.ioErr(op, err)
}

// resetShared is SetView's reset of the shared pointer (key k). Where the
// side file cannot be made (a read-only directory), SetView still
// succeeds: the shared-pointer calls report the error.
func (f *File) resetShared(op string, k uint64) {
	f.sh.SetKey(k)
	f.sh.Apply(k, func(int64) (int64, error) { return 0, nil })
}

// WriteShared writes buf at the shared file pointer and moves it past buf
// (MPI_File_write_shared). It is independent: the writes of several
// processes go one after the other in some order.
func WriteShared[T Elem](f *File, buf []T) error {
	const op = "MPI_File_write_shared"
	b, v, err := ioBuf(f, op, buf, true)
	if err != nil {
		return err
	}
	at, err := f.sharedReserve(op, int64(len(b))/v.Esize)
	if err != nil {
		return f.handle(err)
	}
	return f.handle(f.pwrite(op, v, at*v.Esize, b))
}

// ReadShared reads len(buf) elements at the shared file pointer and moves
// it past them (MPI_File_read_shared); it returns the number of whole
// elements read (the pointer moves past len(buf) elements even at the end
// of the file).
func ReadShared[T Elem](f *File, buf []T) (int, error) {
	const op = "MPI_File_read_shared"
	b, v, err := ioBuf(f, op, buf, false)
	if err != nil {
		return 0, err
	}
	at, err := f.sharedReserve(op, int64(len(b))/v.Esize)
	if err != nil {
		return 0, f.handle(err)
	}
	n, err := f.pread(op, v, at*v.Esize, b)
	return n / esizeOf[T](), f.handle(err)
}

// ordered places the collective ordered access of n view bytes: every
// process's data follow those of the lower ranks, from the shared pointer
// on, which moves past them all. It returns this process's view offset in
// bytes.
func (f *File) ordered(op string, v *fileView, n int64) (int64, error) {
	rows, live, err := f.together(op, n/v.Esize, int64(f.sh.Key()))
	if err != nil {
		return 0, err
	}
	prefix, total := mpiio.Ordered(rows, live, f.c.rank)
	base, err := f.sharedApply(op, mpiio.AgreedKey(rows, live, 1), func(p int64) (int64, error) { return p + total, nil })
	if err != nil {
		return 0, err
	}
	return (base + prefix) * v.Esize, nil
}

// WriteOrdered is the collective WriteShared (MPI_File_write_ordered):
// the processes' buffers are written one after the other in rank order
// from the shared file pointer on, which moves past them all. Under
// run-through the handle must be collectively active; recognised failed
// processes write nothing but keep their place in the order (seed 003
// 17.12.4).
func WriteOrdered[T Elem](f *File, buf []T) error {
	const op = "MPI_File_write_ordered"
	b, v, err := ioBuf(f, op, buf, true)
	if err != nil {
		return err
	}
	return f.handle(f.inOrder(op, func() error {
		at, err := f.ordered(op, v, int64(len(b)))
		if err != nil {
			return err
		}
		return f.writeAll(op, v, at, b)
	}))
}

// ReadOrdered is the collective ReadShared (MPI_File_read_ordered): each
// process reads len(buf) elements in rank order from the shared file
// pointer on; it returns the number of whole elements read.
func ReadOrdered[T Elem](f *File, buf []T) (int, error) {
	const op = "MPI_File_read_ordered"
	b, v, err := ioBuf(f, op, buf, false)
	if err != nil {
		return 0, err
	}
	var n int
	err = f.inOrder(op, func() error {
		at, err := f.ordered(op, v, int64(len(b)))
		if err != nil {
			return err
		}
		n, err = f.readAll(op, v, at, b)
		return err
	})
	return n / esizeOf[T](), f.handle(err)
}

// SeekShared moves the shared file pointer (MPI_File_seek_shared), like
// Seek. It is collective: every process passes the same offset and whence
// (else ErrNotSame); under run-through the handle must be collectively
// active (seed 003 17.12.4).
func (f *File) SeekShared(offset int64, whence int) error {
	const op = "MPI_File_seek_shared"
	if err := f.check(op); err != nil {
		return err
	}
	return f.handle(f.inOrder(op, func() error {
		f.mu.Lock()
		v := f.view
		f.mu.Unlock()
		rows, live, err := f.together(op, offset, int64(whence), int64(f.sh.Key()))
		if err != nil {
			return err
		}
		if err := f.sameEverywhere(op, "offset", rows, live, 0, offset); err != nil {
			return err
		}
		if err := f.sameEverywhere(op, "whence", rows, live, 1, int64(whence)); err != nil {
			return err
		}
		_, err = f.sharedApply(op, mpiio.AgreedKey(rows, live, 2), func(p int64) (int64, error) {
			return f.seekTo(op, v, p, offset, whence)
		})
		return err
	}))
}

// GetPositionShared returns the shared file pointer, in etypes of the view
// (MPI_File_get_position_shared).
func (f *File) GetPositionShared() (int64, error) {
	const op = "MPI_File_get_position_shared"
	if err := f.check(op); err != nil {
		return 0, err
	}
	at, err := f.sh.Get()
	return at, f.handle(f.ioErr(op, err))
}

// IwriteShared starts a WriteShared (MPI_File_iwrite_shared): the shared
// file pointer moves past buf at once; buf must not change until the
// request completes.
func IwriteShared[T Elem](f *File, buf []T) (*Request, error) {
	const op = "MPI_File_iwrite_shared"
	b, v, err := ioBuf(f, op, buf, true)
	if err != nil {
		return nil, err
	}
	at, err := f.sharedReserve(op, int64(len(b))/v.Esize)
	if err != nil {
		return nil, f.handle(err)
	}
	return f.c.startColl(op, func() error { return f.pwrite(op, v, at*v.Esize, b) }), nil
}

// IreadShared starts a ReadShared (MPI_File_iread_shared): the shared
// file pointer moves past len(buf) elements at once; the request's Wait
// returns the number of whole elements read.
func IreadShared[T Elem](f *File, buf []T) (*RequestOf[int], error) {
	const op = "MPI_File_iread_shared"
	b, v, err := ioBuf(f, op, buf, false)
	if err != nil {
		return nil, err
	}
	at, err := f.sharedReserve(op, int64(len(b))/v.Esize)
	if err != nil {
		return nil, f.handle(err)
	}
	return startCollOf(f.c, op, func() (int, error) {
		n, err := f.pread(op, v, at*v.Esize, b)
		return n / esizeOf[T](), err
	}), nil
}

// WriteOrderedBegin begins a split collective WriteOrdered
// (MPI_File_write_ordered_begin); WriteOrderedEnd completes it. buf must
// not change in between.
func WriteOrderedBegin[T Elem](f *File, buf []T) error {
	const op = "MPI_File_write_ordered_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) {
		b, v, err := ioBuf(f, op, buf, true)
		if err != nil {
			return nil, err
		}
		return &RequestOf[int]{Request: f.startOrdered(op, func() error {
			at, err := f.ordered(op, v, int64(len(b)))
			if err != nil {
				return err
			}
			return f.writeAll(op, v, at, b)
		})}, nil
	})
}

// WriteOrderedEnd completes the split collective begun by
// WriteOrderedBegin (MPI_File_write_ordered_end).
func (f *File) WriteOrderedEnd() error {
	_, err := f.splitEnd("MPI_File_write_ordered_end", "MPI_File_write_ordered_begin")
	return err
}

// ReadOrderedBegin begins a split collective ReadOrdered
// (MPI_File_read_ordered_begin); ReadOrderedEnd completes it and returns
// the number of whole elements read.
func ReadOrderedBegin[T Elem](f *File, buf []T) error {
	const op = "MPI_File_read_ordered_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) {
		b, v, err := ioBuf(f, op, buf, false)
		if err != nil {
			return nil, err
		}
		r := &RequestOf[int]{}
		r.Request = f.startOrdered(op, func() error {
			at, err := f.ordered(op, v, int64(len(b)))
			if err != nil {
				return err
			}
			n, err := f.readAll(op, v, at, b)
			r.val = n / esizeOf[T]()
			return err
		})
		return r, nil
	})
}

// ReadOrderedEnd completes the split collective begun by ReadOrderedBegin
// (MPI_File_read_ordered_end).
func (f *File) ReadOrderedEnd() (int, error) {
	return f.splitEnd("MPI_File_read_ordered_end", "MPI_File_read_ordered_begin")
}
