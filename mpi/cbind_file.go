package mpi

// File data access for the C binding (libmpi): the reads and writes of
// MPI-4.1 14.4 taking MPI's (buffer, count, datatype) triple, as C has
// them. Go programs use ReadAt, WriteAll, ... over typed slices instead.
//
// The memory datatype lays the elements out in buf (buf[0] is their
// origin); they are packed before a write and unpacked after a read, and
// the data access itself is the same as the generic calls'. The memory
// datatype must match the view's etype as the generic calls check it: a
// datatype of one basic type must be of the etype's basic type, except
// bytes (MPI_BYTE), which go with any etype; its size must be a whole
// number of etypes. The reads return the number of bytes read (a status's
// count: fewer at the end of the file), not of elements.

import "github.com/ftmpi/ftmpi/internal/p2p"

// ioTyped is one typed data access: the packed data (or the room a read
// fills), and what unpacking and releasing it needs.
type ioTyped struct {
	buf  []byte
	d    *Datatype
	data []byte
	p    *[]byte
	v    *fileView
}

// typedBuf checks a typed data access (as ioBuf does) and packs a write's
// data. seq: it uses a file pointer or an explicit offset (refused on a
// ModeSequential file); at: the explicit offset to check (if seq).
func typedBuf(f *File, op string, buf []byte, count int, d *Datatype, write, seq bool, offset int64) (*ioTyped, error) {
	if err := f.check(op); err != nil {
		return nil, err
	}
	switch {
	case d == nil:
		return nil, f.handle(f.err(ErrType, op, "nil datatype"))
	case !d.committed.Load():
		return nil, f.handle(f.err(ErrType, op, "datatype %s is not committed", d.name))
	case count < 0:
		return nil, f.handle(f.err(ErrCount, op, "negative count %d", count))
	case count > 0 && d.size > 0 && len(buf) == 0:
		return nil, f.handle(f.err(ErrBuffer, op, "no buffer for %d elements of %s", count, d.name))
	case write && f.amode&ModeRdonly != 0:
		return nil, f.handle(f.err(ErrReadOnly, op, "file opened MPI_MODE_RDONLY"))
	case !write && f.amode&ModeWronly != 0:
		return nil, f.handle(f.err(ErrAccess, op, "file opened MPI_MODE_WRONLY"))
	}
	if seq {
		if err := f.noSequential(op); err != nil {
			return nil, err
		}
		if err := f.checkOffset(op, offset); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	v := f.view
	f.mu.Unlock()
	if d.size > 0 && v.etype != Byte && d.sig != nil && d.sig.runs == nil && d.sig.dt != p2p.DTByte &&
		v.etype.sig.runs == nil && v.etype.sig.dt != d.sig.dt {
		return nil, f.handle(f.err(ErrType, op, "buffer of %s, view etype %s", d.name, v.etype.name))
	}
	if n := int64(count) * int64(d.size); n%v.Esize != 0 {
		return nil, f.handle(f.err(ErrType, op, "%d elements of %s (%d bytes) are not a whole number of etypes %s (%d bytes)",
			count, d.name, n, v.etype.name, v.Esize))
	}
	t := &ioTyped{buf: buf, d: d, v: v.converting(d)}
	if write {
		t.data, t.p = d.packed(buf, count)
	} else {
		t.data, t.p = d.room(buf, count)
	}
	return t, nil
}

// done unpacks the n bytes a read got and releases the scratch buffer; it
// returns n.
func (t *ioTyped) done(n int, read bool) int {
	if t.p != nil {
		if read {
			t.d.unpack(t.buf, t.data[:n])
		}
		p2p.PutBuf(t.p)
		t.p = nil
	}
	return n
}

func (t *ioTyped) size() int64 { return int64(len(t.data)) }

// ReadAtTyped is ReadAt of count elements of d over buf
// (MPI_File_read_at); it returns the number of bytes read.
func ReadAtTyped(f *File, offset int64, buf []byte, count int, d *Datatype) (int, error) {
	const op = "MPI_File_read_at"
	t, err := typedBuf(f, op, buf, count, d, false, true, offset)
	if err != nil {
		return 0, err
	}
	n, err := f.pread(op, t.v, offset*t.v.Esize, t.data)
	return t.done(n, true), f.handle(err)
}

// WriteAtTyped is WriteAt of count elements of d over buf
// (MPI_File_write_at).
func WriteAtTyped(f *File, offset int64, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write_at"
	t, err := typedBuf(f, op, buf, count, d, true, true, offset)
	if err != nil {
		return err
	}
	err = f.pwrite(op, t.v, offset*t.v.Esize, t.data)
	t.done(0, false)
	return f.handle(err)
}

// ReadTyped is Read of count elements of d over buf (MPI_File_read); it
// returns the number of bytes read.
func ReadTyped(f *File, buf []byte, count int, d *Datatype) (int, error) {
	const op = "MPI_File_read"
	t, err := typedBuf(f, op, buf, count, d, false, true, 0)
	if err != nil {
		return 0, err
	}
	at := f.take(t.v, t.size())
	n, err := f.pread(op, t.v, at, t.data)
	f.giveBack(t.v, t.size()-int64(n))
	return t.done(n, true), f.handle(err)
}

// WriteTyped is Write of count elements of d over buf (MPI_File_write).
func WriteTyped(f *File, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write"
	t, err := typedBuf(f, op, buf, count, d, true, true, 0)
	if err != nil {
		return err
	}
	err = f.pwrite(op, t.v, f.take(t.v, t.size()), t.data)
	t.done(0, false)
	return f.handle(err)
}

// ReadAtAllTyped is ReadAtAll of count elements of d over buf
// (MPI_File_read_at_all); it returns the number of bytes read.
func ReadAtAllTyped(f *File, offset int64, buf []byte, count int, d *Datatype) (int, error) {
	const op = "MPI_File_read_at_all"
	t, err := typedBuf(f, op, buf, count, d, false, true, offset)
	if err != nil {
		return 0, err
	}
	var n int
	err = f.inOrder(op, func() error {
		var err error
		n, err = f.readAll(op, t.v, offset*t.v.Esize, t.data)
		return err
	})
	return t.done(n, true), f.handle(err)
}

// WriteAtAllTyped is WriteAtAll of count elements of d over buf
// (MPI_File_write_at_all).
func WriteAtAllTyped(f *File, offset int64, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write_at_all"
	t, err := typedBuf(f, op, buf, count, d, true, true, offset)
	if err != nil {
		return err
	}
	err = f.inOrder(op, func() error { return f.writeAll(op, t.v, offset*t.v.Esize, t.data) })
	t.done(0, false)
	return f.handle(err)
}

// ReadAllTyped is ReadAll of count elements of d over buf
// (MPI_File_read_all); it returns the number of bytes read.
func ReadAllTyped(f *File, buf []byte, count int, d *Datatype) (int, error) {
	const op = "MPI_File_read_all"
	t, err := typedBuf(f, op, buf, count, d, false, true, 0)
	if err != nil {
		return 0, err
	}
	var n int
	err = f.inOrder(op, func() error {
		var err error
		n, err = f.readAll(op, t.v, f.take(t.v, t.size()), t.data)
		if err == nil {
			f.giveBack(t.v, t.size()-int64(n))
		}
		return err
	})
	return t.done(n, true), f.handle(err)
}

// WriteAllTyped is WriteAll of count elements of d over buf
// (MPI_File_write_all).
func WriteAllTyped(f *File, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write_all"
	t, err := typedBuf(f, op, buf, count, d, true, true, 0)
	if err != nil {
		return err
	}
	err = f.inOrder(op, func() error { return f.writeAll(op, t.v, f.take(t.v, t.size()), t.data) })
	t.done(0, false)
	return f.handle(err)
}

// ReadSharedTyped is ReadShared of count elements of d over buf
// (MPI_File_read_shared); it returns the number of bytes read.
func ReadSharedTyped(f *File, buf []byte, count int, d *Datatype) (int, error) {
	const op = "MPI_File_read_shared"
	t, err := typedBuf(f, op, buf, count, d, false, false, 0)
	if err != nil {
		return 0, err
	}
	at, err := f.sharedReserve(op, t.size()/t.v.Esize)
	if err != nil {
		t.done(0, false)
		return 0, f.handle(err)
	}
	n, err := f.pread(op, t.v, at*t.v.Esize, t.data)
	return t.done(n, true), f.handle(err)
}

// WriteSharedTyped is WriteShared of count elements of d over buf
// (MPI_File_write_shared).
func WriteSharedTyped(f *File, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write_shared"
	t, err := typedBuf(f, op, buf, count, d, true, false, 0)
	if err != nil {
		return err
	}
	defer t.done(0, false)
	at, err := f.sharedReserve(op, t.size()/t.v.Esize)
	if err != nil {
		return f.handle(err)
	}
	return f.handle(f.pwrite(op, t.v, at*t.v.Esize, t.data))
}

// ReadOrderedTyped is ReadOrdered of count elements of d over buf
// (MPI_File_read_ordered); it returns the number of bytes read.
func ReadOrderedTyped(f *File, buf []byte, count int, d *Datatype) (int, error) {
	const op = "MPI_File_read_ordered"
	t, err := typedBuf(f, op, buf, count, d, false, false, 0)
	if err != nil {
		return 0, err
	}
	var n int
	err = f.inOrder(op, func() error {
		at, err := f.ordered(op, t.v, t.size())
		if err != nil {
			return err
		}
		n, err = f.readAll(op, t.v, at, t.data)
		return err
	})
	return t.done(n, true), f.handle(err)
}

// WriteOrderedTyped is WriteOrdered of count elements of d over buf
// (MPI_File_write_ordered).
func WriteOrderedTyped(f *File, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write_ordered"
	t, err := typedBuf(f, op, buf, count, d, true, false, 0)
	if err != nil {
		return err
	}
	defer t.done(0, false)
	return f.handle(f.inOrder(op, func() error {
		at, err := f.ordered(op, t.v, t.size())
		if err != nil {
			return err
		}
		return f.writeAll(op, t.v, at, t.data)
	}))
}

// Nonblocking forms. The data are packed when the call starts and
// unpacked when the request completes; buf must not be touched until then.

// IreadAtTyped starts a ReadAtTyped (MPI_File_iread_at); the request's
// Wait returns the number of bytes read.
func IreadAtTyped(f *File, offset int64, buf []byte, count int, d *Datatype) (*RequestOf[int], error) {
	const op = "MPI_File_iread_at"
	t, err := typedBuf(f, op, buf, count, d, false, true, offset)
	if err != nil {
		return nil, err
	}
	return startCollOf(f.c, op, func() (int, error) {
		n, err := f.pread(op, t.v, offset*t.v.Esize, t.data)
		return t.done(n, true), err
	}), nil
}

// IwriteAtTyped starts a WriteAtTyped (MPI_File_iwrite_at).
func IwriteAtTyped(f *File, offset int64, buf []byte, count int, d *Datatype) (*Request, error) {
	const op = "MPI_File_iwrite_at"
	t, err := typedBuf(f, op, buf, count, d, true, true, offset)
	if err != nil {
		return nil, err
	}
	return f.c.startColl(op, func() error {
		defer t.done(0, false)
		return f.pwrite(op, t.v, offset*t.v.Esize, t.data)
	}), nil
}

// IreadTyped starts a ReadTyped (MPI_File_iread): the individual file
// pointer moves past the data at once.
func IreadTyped(f *File, buf []byte, count int, d *Datatype) (*RequestOf[int], error) {
	const op = "MPI_File_iread"
	t, err := typedBuf(f, op, buf, count, d, false, true, 0)
	if err != nil {
		return nil, err
	}
	at := f.take(t.v, t.size())
	return startCollOf(f.c, op, func() (int, error) {
		n, err := f.pread(op, t.v, at, t.data)
		return t.done(n, true), err
	}), nil
}

// IwriteTyped starts a WriteTyped (MPI_File_iwrite).
func IwriteTyped(f *File, buf []byte, count int, d *Datatype) (*Request, error) {
	const op = "MPI_File_iwrite"
	t, err := typedBuf(f, op, buf, count, d, true, true, 0)
	if err != nil {
		return nil, err
	}
	at := f.take(t.v, t.size())
	return f.c.startColl(op, func() error {
		defer t.done(0, false)
		return f.pwrite(op, t.v, at, t.data)
	}), nil
}

// IreadAtAllTyped starts a ReadAtAllTyped (MPI_File_iread_at_all).
func IreadAtAllTyped(f *File, offset int64, buf []byte, count int, d *Datatype) (*RequestOf[int], error) {
	return ireadAtAllTyped(f, "MPI_File_iread_at_all", offset, buf, count, d)
}

func ireadAtAllTyped(f *File, op string, offset int64, buf []byte, count int, d *Datatype) (*RequestOf[int], error) {
	t, err := typedBuf(f, op, buf, count, d, false, true, offset)
	if err != nil {
		return nil, err
	}
	r := &RequestOf[int]{}
	r.Request = f.startOrdered(op, func() error {
		n, err := f.readAll(op, t.v, offset*t.v.Esize, t.data)
		r.val = t.done(n, true)
		return err
	})
	return r, nil
}

// IwriteAtAllTyped starts a WriteAtAllTyped (MPI_File_iwrite_at_all).
func IwriteAtAllTyped(f *File, offset int64, buf []byte, count int, d *Datatype) (*Request, error) {
	return iwriteAtAllTyped(f, "MPI_File_iwrite_at_all", offset, buf, count, d)
}

func iwriteAtAllTyped(f *File, op string, offset int64, buf []byte, count int, d *Datatype) (*Request, error) {
	t, err := typedBuf(f, op, buf, count, d, true, true, offset)
	if err != nil {
		return nil, err
	}
	return f.startOrdered(op, func() error {
		defer t.done(0, false)
		return f.writeAll(op, t.v, offset*t.v.Esize, t.data)
	}), nil
}

// IreadAllTyped starts a ReadAllTyped (MPI_File_iread_all): the individual
// file pointer moves past the data at once.
func IreadAllTyped(f *File, buf []byte, count int, d *Datatype) (*RequestOf[int], error) {
	return ireadAllTyped(f, "MPI_File_iread_all", buf, count, d)
}

func ireadAllTyped(f *File, op string, buf []byte, count int, d *Datatype) (*RequestOf[int], error) {
	t, err := typedBuf(f, op, buf, count, d, false, true, 0)
	if err != nil {
		return nil, err
	}
	at := f.take(t.v, t.size())
	r := &RequestOf[int]{}
	r.Request = f.startOrdered(op, func() error {
		n, err := f.readAll(op, t.v, at, t.data)
		r.val = t.done(n, true)
		return err
	})
	return r, nil
}

// IwriteAllTyped starts a WriteAllTyped (MPI_File_iwrite_all).
func IwriteAllTyped(f *File, buf []byte, count int, d *Datatype) (*Request, error) {
	return iwriteAllTyped(f, "MPI_File_iwrite_all", buf, count, d)
}

func iwriteAllTyped(f *File, op string, buf []byte, count int, d *Datatype) (*Request, error) {
	t, err := typedBuf(f, op, buf, count, d, true, true, 0)
	if err != nil {
		return nil, err
	}
	at := f.take(t.v, t.size())
	return f.startOrdered(op, func() error {
		defer t.done(0, false)
		return f.writeAll(op, t.v, at, t.data)
	}), nil
}

// IreadSharedTyped starts a ReadSharedTyped (MPI_File_iread_shared).
func IreadSharedTyped(f *File, buf []byte, count int, d *Datatype) (*RequestOf[int], error) {
	const op = "MPI_File_iread_shared"
	t, err := typedBuf(f, op, buf, count, d, false, false, 0)
	if err != nil {
		return nil, err
	}
	at, err := f.sharedReserve(op, t.size()/t.v.Esize)
	if err != nil {
		t.done(0, false)
		return nil, f.handle(err)
	}
	return startCollOf(f.c, op, func() (int, error) {
		n, err := f.pread(op, t.v, at*t.v.Esize, t.data)
		return t.done(n, true), err
	}), nil
}

// IwriteSharedTyped starts a WriteSharedTyped (MPI_File_iwrite_shared).
func IwriteSharedTyped(f *File, buf []byte, count int, d *Datatype) (*Request, error) {
	const op = "MPI_File_iwrite_shared"
	t, err := typedBuf(f, op, buf, count, d, true, false, 0)
	if err != nil {
		return nil, err
	}
	at, err := f.sharedReserve(op, t.size()/t.v.Esize)
	if err != nil {
		t.done(0, false)
		return nil, f.handle(err)
	}
	return f.c.startColl(op, func() error {
		defer t.done(0, false)
		return f.pwrite(op, t.v, at*t.v.Esize, t.data)
	}), nil
}

// Split collectives: the begin calls; the end calls are the File methods
// (ReadAtAllEnd, ...), whose counts are bytes after a typed begin.

// ReadAtAllBeginTyped begins a split ReadAtAllTyped
// (MPI_File_read_at_all_begin).
func ReadAtAllBeginTyped(f *File, offset int64, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_read_at_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return ireadAtAllTyped(f, op, offset, buf, count, d) })
}

// WriteAtAllBeginTyped begins a split WriteAtAllTyped
// (MPI_File_write_at_all_begin).
func WriteAtAllBeginTyped(f *File, offset int64, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write_at_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return asCount(iwriteAtAllTyped(f, op, offset, buf, count, d)) })
}

// ReadAllBeginTyped begins a split ReadAllTyped (MPI_File_read_all_begin).
func ReadAllBeginTyped(f *File, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_read_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return ireadAllTyped(f, op, buf, count, d) })
}

// WriteAllBeginTyped begins a split WriteAllTyped
// (MPI_File_write_all_begin).
func WriteAllBeginTyped(f *File, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return asCount(iwriteAllTyped(f, op, buf, count, d)) })
}

// ReadOrderedBeginTyped begins a split ReadOrderedTyped
// (MPI_File_read_ordered_begin).
func ReadOrderedBeginTyped(f *File, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_read_ordered_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) {
		t, err := typedBuf(f, op, buf, count, d, false, false, 0)
		if err != nil {
			return nil, err
		}
		r := &RequestOf[int]{}
		r.Request = f.startOrdered(op, func() error {
			at, err := f.ordered(op, t.v, t.size())
			if err != nil {
				t.done(0, false)
				return err
			}
			n, err := f.readAll(op, t.v, at, t.data)
			r.val = t.done(n, true)
			return err
		})
		return r, nil
	})
}

// WriteOrderedBeginTyped begins a split WriteOrderedTyped
// (MPI_File_write_ordered_begin).
func WriteOrderedBeginTyped(f *File, buf []byte, count int, d *Datatype) error {
	const op = "MPI_File_write_ordered_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) {
		t, err := typedBuf(f, op, buf, count, d, true, false, 0)
		if err != nil {
			return nil, err
		}
		return &RequestOf[int]{Request: f.startOrdered(op, func() error {
			defer t.done(0, false)
			at, err := f.ordered(op, t.v, t.size())
			if err != nil {
				return err
			}
			return f.writeAll(op, t.v, at, t.data)
		})}, nil
	})
}

// CallErrhandler raises err on the file's error handler and returns it
// (MPI_File_call_errhandler; the C binding's own argument errors).
func (f *File) CallErrhandler(err error) error { return f.handle(err) }

// FileCreateErrhandler returns a file error handler that calls fn with the
// file and the error; the call then returns the error
// (MPI_File_create_errhandler). Set it with File.SetErrhandler.
func FileCreateErrhandler(fn func(f *File, err error)) *Errhandler {
	return &Errhandler{name: "user file handler", file: fn}
}

// SetViewCurrent is SetView with the displacement MPI_DISPLACEMENT_CURRENT
// (MPI-4.1 14.3): the byte position of the shared file pointer in the
// current view. It is valid for a file opened with ModeSequential only
// (ErrArg otherwise).
func (f *File) SetViewCurrent(etype, filetype *Datatype) error {
	return f.SetViewCurrentDatarep(etype, filetype, Native)
}

// SetViewCurrentDatarep is SetViewCurrent in the data representation
// datarep, as SetViewDatarep (MPI_File_set_view with
// MPI_DISPLACEMENT_CURRENT and a datarep).
func (f *File) SetViewCurrentDatarep(etype, filetype *Datatype, datarep string) error {
	const op = "MPI_File_set_view"
	if err := f.check(op); err != nil {
		return err
	}
	if f.amode&ModeSequential == 0 {
		return f.handle(f.err(ErrArg, op, "MPI_DISPLACEMENT_CURRENT is valid for a file opened with MPI_MODE_SEQUENTIAL only"))
	}
	p, err := f.GetPositionShared()
	if err != nil {
		return err
	}
	disp, err := f.GetByteOffset(p)
	if err != nil {
		return err
	}
	return f.SetViewDatarep(disp, etype, filetype, datarep)
}
