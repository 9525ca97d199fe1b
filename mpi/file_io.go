package mpi

import (
	"io"

	"github.com/ftmpi/ftmpi/internal/mpiio"
)

// Independent data access (MPI-4.1 14.4): at explicit offsets (ReadAt,
// WriteAt), through the individual file pointer (Read, Write, Seek), and
// their nonblocking forms. Offsets count etypes of the view; a buffer is a
// typed slice whose bytes are a whole number of etypes. Reads stop at the
// end of the file and return the number of whole elements read (the count
// MPI_Get_count takes from the status); writes extend the file.

// Whence values of Seek and SeekShared (MPI_SEEK_*, as in Open MPI).
const (
	SeekSet = 600 // MPI_SEEK_SET: to offset
	SeekCur = 602 // MPI_SEEK_CUR: to the current position plus offset
	SeekEnd = 604 // MPI_SEEK_END: to the end of the file (in the view) plus offset
)

// ioBuf checks a data-access call's buffer against the view and returns
// its bytes and the view.
func ioBuf[T Elem](f *File, op string, buf []T, write bool) ([]byte, *fileView, error) {
	if err := f.check(op); err != nil {
		return nil, nil, err
	}
	if err := elemCheck[T](f.c, op); err != nil {
		err.(*Error).Comm = f.name
		return nil, nil, f.handle(err)
	}
	switch {
	case write && f.amode&ModeRdonly != 0:
		return nil, nil, f.handle(f.err(ErrReadOnly, op, "file opened MPI_MODE_RDONLY"))
	case !write && f.amode&ModeWronly != 0:
		return nil, nil, f.handle(f.err(ErrAccess, op, "file opened MPI_MODE_WRONLY"))
	}
	f.mu.Lock()
	v := f.view
	f.mu.Unlock()
	b := asBytes(buf)
	ef := elemOf[T]()
	if v.etype != Byte && ef.runs == nil && v.etype.sig.runs == nil && v.etype.sig.dt != ef.dt {
		return nil, nil, f.handle(f.err(ErrType, op, "buffer of %s, view etype %s", ef.name, v.etype.name))
	}
	if int64(len(b))%v.Esize != 0 {
		return nil, nil, f.handle(f.err(ErrType, op, "buffer of %d bytes is not a whole number of etypes %s (%d bytes)", len(b), v.etype.name, v.Esize))
	}
	if v.Ext32 {
		if d, err := TypeOf[T](); err == nil {
			v = v.converting(d)
		}
	}
	return b, v, nil
}

// ioBufSeq is ioBuf for an access that moves a file pointer or takes an
// explicit offset: refused on a file opened with ModeSequential.
func ioBufSeq[T Elem](f *File, op string, buf []T, write bool) ([]byte, *fileView, error) {
	b, v, err := ioBuf(f, op, buf, write)
	if err == nil {
		err = f.noSequential(op)
	}
	return b, v, err
}

// ioBufAt is ioBufSeq for an access at an explicit view offset, which it
// checks too.
func ioBufAt[T Elem](f *File, op string, buf []T, write bool, offset int64) ([]byte, *fileView, error) {
	b, v, err := ioBufSeq(f, op, buf, write)
	if err == nil {
		err = f.checkOffset(op, offset)
	}
	return b, v, err
}

func (f *File) noSequential(op string) error {
	if f.amode&ModeSequential != 0 {
		return f.handle(f.err(ErrUnsupportedOperation, op, "file opened MPI_MODE_SEQUENTIAL: only the shared file pointer may be used"))
	}
	return nil
}

func (f *File) checkOffset(op string, off int64) error {
	if off < 0 {
		return f.handle(f.err(ErrArg, op, "negative offset %d", off))
	}
	return nil
}

// lockData takes the atomic mode's lock on the file (exclusive for a
// write); it returns the unlock, a no-op outside atomic mode.
func (f *File) lockData(write bool) func() {
	f.mu.Lock()
	atomic := f.atomic
	f.mu.Unlock()
	if !atomic {
		return func() {}
	}
	return mpiio.LockFile(f.fd, write)
}

// fileData is the file's data as internal/mpiio reaches it (mpiio.Data).
type fileData File

func (d *fileData) ReadAt(b []byte, off int64) (int, error)  { return d.fd.ReadAt(b, off) }
func (d *fileData) WriteAt(b []byte, off int64) (int, error) { return d.fd.WriteAt(b, off) }
func (d *fileData) Lock(write bool) func()                   { return (*File)(d).lockData(write) }
func (d *fileData) Size() (int64, error) {
	st, err := d.fd.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// ioErr turns internal/mpiio's operating system errors into the file's
// errors (fileErr: the class of the errno); other errors are already
// the file's.
func (f *File) ioErr(op string, err error) error {
	if e, ok := err.(*mpiio.IOError); ok {
		fe := fileErr(op, f.name, e.Err)
		if e.What != "" {
			fe.Detail = e.What + fe.Detail
		}
		return fe
	}
	return err
}

// pwrite writes b at the file ranges of view bytes [l, l+len(b)), in the
// view's data representation.
func (f *File) pwrite(op string, v *fileView, l int64, b []byte) error {
	return f.ioErr(op, mpiio.Pwrite((*fileData)(f), &v.View, l, v.ToFile(b)))
}

// pread reads b from the file ranges of view bytes [l, l+len(b)) and
// returns the bytes read before the end of the file, converted from the
// view's data representation.
func (f *File) pread(op string, v *fileView, l int64, b []byte) (int, error) {
	n, err := mpiio.Pread((*fileData)(f), &v.View, l, b)
	v.FromFile(b[:n])
	return n, f.ioErr(op, err)
}

// ReadAt reads len(buf) elements from view offset offset (in etypes) on
// (MPI_File_read_at) and returns the number of whole elements read: fewer
// at the end of the file. It is independent (not collective).
func ReadAt[T Elem](f *File, offset int64, buf []T) (int, error) {
	const op = "MPI_File_read_at"
	b, v, err := ioBufAt(f, op, buf, false, offset)
	if err != nil {
		return 0, err
	}
	n, err := f.pread(op, v, offset*v.Esize, b)
	return n / esizeOf[T](), f.handle(err)
}

// WriteAt writes buf at view offset offset (in etypes) on
// (MPI_File_write_at). It is independent.
func WriteAt[T Elem](f *File, offset int64, buf []T) error {
	const op = "MPI_File_write_at"
	b, v, err := ioBufAt(f, op, buf, true, offset)
	if err != nil {
		return err
	}
	return f.handle(f.pwrite(op, v, offset*v.Esize, b))
}

// take reserves n view bytes at the individual file pointer and returns
// the view offset (in bytes) they start at; the pointer moves past them.
func (f *File) take(v *fileView, n int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := f.pos * v.Esize
	f.pos += n / v.Esize
	return at
}

// giveBack moves the individual pointer back by the bytes of a read that
// stopped at the end of the file (the pointer moves by what was read).
func (f *File) giveBack(v *fileView, short int64) {
	f.mu.Lock()
	f.pos -= short / v.Esize
	f.mu.Unlock()
}

// Read reads len(buf) elements at the individual file pointer and moves it
// past them (MPI_File_read); it returns the number of whole elements read.
func Read[T Elem](f *File, buf []T) (int, error) {
	const op = "MPI_File_read"
	b, v, err := ioBufSeq(f, op, buf, false)
	if err != nil {
		return 0, err
	}
	at := f.take(v, int64(len(b)))
	n, err := f.pread(op, v, at, b)
	f.giveBack(v, int64(len(b)-n))
	return n / esizeOf[T](), f.handle(err)
}

// Write writes buf at the individual file pointer and moves it past them
// (MPI_File_write).
func Write[T Elem](f *File, buf []T) error {
	const op = "MPI_File_write"
	b, v, err := ioBufSeq(f, op, buf, true)
	if err != nil {
		return err
	}
	return f.handle(f.pwrite(op, v, f.take(v, int64(len(b))), b))
}

// Seek moves the individual file pointer (MPI_File_seek): to offset
// (SeekSet), by offset (SeekCur), or to offset past the end of the file in
// the view (SeekEnd), and returns the new position in etypes (so *File is
// an io.Seeker: io.SeekStart, io.SeekCurrent and io.SeekEnd are accepted
// too). A negative result is an ErrArg error. It is local.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	const op = "MPI_File_seek"
	if err := f.checkOpen(op); err != nil {
		return 0, err
	}
	if err := f.noSequential(op); err != nil {
		return 0, err
	}
	f.mu.Lock()
	v, cur := f.view, f.pos
	f.mu.Unlock()
	np, err := f.seekTo(op, v, cur, offset, whence)
	if err != nil {
		return 0, f.handle(err)
	}
	f.mu.Lock()
	f.pos = np
	f.mu.Unlock()
	return np, nil
}

// seekTo computes a new pointer position in etypes.
func (f *File) seekTo(op string, v *fileView, cur, offset int64, whence int) (int64, error) {
	var np int64
	switch whence {
	case io.SeekStart:
		whence = SeekSet
	case io.SeekCurrent:
		whence = SeekCur
	case io.SeekEnd:
		whence = SeekEnd
	}
	switch whence {
	case SeekSet:
		np = offset
	case SeekCur:
		np = cur + offset
	case SeekEnd:
		st, err := f.fd.Stat()
		if err != nil {
			return 0, fileErr(op, f.name, err)
		}
		np = v.BytesBefore(st.Size())/v.Esize + offset
	default:
		return 0, f.err(ErrArg, op, "whence %d is none of SeekSet, SeekCur, SeekEnd", whence)
	}
	if np < 0 {
		return 0, f.err(ErrArg, op, "the new position %d is negative", np)
	}
	return np, nil
}

// GetPosition returns the individual file pointer, in etypes of the view
// (MPI_File_get_position).
func (f *File) GetPosition() (int64, error) {
	if err := f.checkOpen("MPI_File_get_position"); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos, nil
}

// IreadAt starts a ReadAt (MPI_File_iread_at); the request's Wait returns
// the number of whole elements read. buf must not be used until then.
func IreadAt[T Elem](f *File, offset int64, buf []T) (*RequestOf[int], error) {
	const op = "MPI_File_iread_at"
	b, v, err := ioBufAt(f, op, buf, false, offset)
	if err != nil {
		return nil, err
	}
	return startCollOf(f.c, op, func() (int, error) {
		n, err := f.pread(op, v, offset*v.Esize, b)
		return n / esizeOf[T](), err
	}), nil
}

// IwriteAt starts a WriteAt (MPI_File_iwrite_at); buf must not change
// until the request completes.
func IwriteAt[T Elem](f *File, offset int64, buf []T) (*Request, error) {
	const op = "MPI_File_iwrite_at"
	b, v, err := ioBufAt(f, op, buf, true, offset)
	if err != nil {
		return nil, err
	}
	return f.c.startColl(op, func() error { return f.pwrite(op, v, offset*v.Esize, b) }), nil
}

// Iread starts a Read (MPI_File_iread): the individual file pointer moves
// past len(buf) elements at once.
func Iread[T Elem](f *File, buf []T) (*RequestOf[int], error) {
	const op = "MPI_File_iread"
	b, v, err := ioBufSeq(f, op, buf, false)
	if err != nil {
		return nil, err
	}
	at := f.take(v, int64(len(b)))
	return startCollOf(f.c, op, func() (int, error) {
		n, err := f.pread(op, v, at, b)
		return n / esizeOf[T](), err
	}), nil
}

// Iwrite starts a Write (MPI_File_iwrite): the individual file pointer
// moves past buf at once.
func Iwrite[T Elem](f *File, buf []T) (*Request, error) {
	const op = "MPI_File_iwrite"
	b, v, err := ioBufSeq(f, op, buf, true)
	if err != nil {
		return nil, err
	}
	at := f.take(v, int64(len(b)))
	return f.c.startColl(op, func() error { return f.pwrite(op, v, at, b) }), nil
}
