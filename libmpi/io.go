package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "cside.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// MPI-IO (MPI-4.1 chapter 14). A C file is an *mpi.File; the data
// accesses forward their (buffer, count, datatype) triples to the typed
// calls of mpi/cbind_file.go, and a status's count is the bytes moved.
// Errors of a call on a file go to the file's error handler (by default
// MPI_ERRORS_RETURN); errors with no file (MPI_File_open, a bad handle) to
// the handler of MPI_FILE_NULL, which MPI_File_set_errhandler on
// MPI_FILE_NULL sets, and which new files start with. The data
// representations are "native", "internal" (native) and "external32"
// (mpi.File.SetViewDatarep).

var (
	files = newTable[*mpi.File](kindFile)

	fileMu       sync.Mutex
	fileNullErrh = mpi.ErrorsReturn                     // MPI_FILE_NULL's handler
	fileErrhFns  = map[*mpi.Errhandler]unsafe.Pointer{} // C functions of file handlers
	// fileViews are the etype and filetype handles of each file's last
	// MPI_File_set_view, which MPI_File_get_view returns (several
	// predefined handles share one Go datatype: MPI_BYTE, MPI_UINT8_T...).
	fileViews = map[*mpi.File][2]C.uintptr_t{}
)

// fileOf resolves a file handle for op; an invalid one is an MPI_ERR_FILE
// error raised on MPI_FILE_NULL's handler.
func fileOf(h C.uintptr_t, op string) (*mpi.File, error) {
	if f, ok := files.get(uintptr(h)); ok {
		return f, nil
	}
	if uintptr(h) == hFileNull {
		return nil, fileNullFail(bad(mpi.ErrFile, op, "MPI_FILE_NULL is not an open file"))
	}
	return nil, fileNullFail(bad(mpi.ErrFile, op, "invalid file handle %#x (%s)", uintptr(h), describe(uintptr(h), kindFile)))
}

// fileHandle returns the C handle of f.
func fileHandle(f *mpi.File) C.uintptr_t {
	if f == nil {
		return hFileNull
	}
	return C.uintptr_t(files.put(f))
}

// fileNullFail raises err, which concerns no open file, on MPI_FILE_NULL's
// error handler and returns it.
func fileNullFail(err error) error {
	fileMu.Lock()
	h := fileNullErrh
	fn := fileErrhFns[h]
	fileMu.Unlock()
	switch {
	case h == mpi.ErrorsReturn:
	case fn != nil:
		callFileErrh(fn, hFileNull, err)
	case h == mpi.ErrorsAreFatal && world != nil:
		fmt.Fprintf(os.Stderr, "ftmpi: MPI_ERRORS_ARE_FATAL (the handler of MPI_FILE_NULL): %v\n", err)
		world.Abort(int(code(err)))
	default:
		worldFail(err)
	}
	return err
}

func callFileErrh(fn unsafe.Pointer, fh C.uintptr_t, err error) {
	h := (*C.uintptr_t)(C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
	defer C.free(unsafe.Pointer(h))
	*h = fh
	v := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(v))
	*v = code(err)
	C.ftmpi_call_file_errhandler(fn, (*C.MPI_File)(unsafe.Pointer(h)), v)
}

// fileFail raises err, found by the binding in a call on f, on f's error
// handler and returns its code.
func fileFail(f *mpi.File, err error) C.int { return code(f.CallErrhandler(err)) }

// fileType resolves a datatype handle of a call on f.
func fileType(h C.uintptr_t, f *mpi.File, op string) (*mpi.Datatype, C.int) {
	if d, ok := predefTypes[uintptr(h)]; ok {
		return d, cSuccess
	}
	if d, ok := types.get(uintptr(h)); ok {
		return d, cSuccess
	}
	if uintptr(h) == hTypeNull {
		return nil, fileFail(f, bad(mpi.ErrType, op, "MPI_DATATYPE_NULL is not a datatype"))
	}
	return nil, fileFail(f, bad(mpi.ErrType, op, "invalid datatype handle %#x (%s)", uintptr(h), describe(uintptr(h), kindDatatype)))
}

// amodeIn converts C MPI_MODE_* bits to package mpi's; unknown bits become
// one package mpi rejects (MPI_ERR_AMODE).
func amodeIn(a C.int) int {
	out, v := 0, int(a)
	for _, m := range amodes {
		if v&m.c != 0 {
			out |= m.g
			v &^= m.c
		}
	}
	if v != 0 {
		out |= 1 << 12
	}
	return out
}

func amodeOut(a int) C.int {
	out := 0
	for _, m := range amodes {
		if a&m.g != 0 {
			out |= m.c
		}
	}
	return C.int(out)
}

var amodes = []struct{ c, g int }{
	{C.MPI_MODE_APPEND, mpi.ModeAppend}, {C.MPI_MODE_CREATE, mpi.ModeCreate},
	{C.MPI_MODE_DELETE_ON_CLOSE, mpi.ModeDeleteOnClose}, {C.MPI_MODE_EXCL, mpi.ModeExcl},
	{C.MPI_MODE_RDONLY, mpi.ModeRdonly}, {C.MPI_MODE_RDWR, mpi.ModeRdwr},
	{C.MPI_MODE_SEQUENTIAL, mpi.ModeSequential}, {C.MPI_MODE_UNIQUE_OPEN, mpi.ModeUniqueOpen},
	{C.MPI_MODE_WRONLY, mpi.ModeWronly},
}

// whenceIn converts MPI_SEEK_*; another value stays invalid for package mpi.
func whenceIn(w C.int) int {
	switch w {
	case C.MPI_SEEK_SET:
		return mpi.SeekSet
	case C.MPI_SEEK_CUR:
		return mpi.SeekCur
	case C.MPI_SEEK_END:
		return mpi.SeekEnd
	}
	return -1
}

//export ftmpi_File_open
func ftmpi_File_open(comm C.uintptr_t, filename *C.char, amode C.int, info C.uintptr_t, fh *C.uintptr_t) C.int {
	const op = "MPI_File_open"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	if filename == nil || fh == nil {
		return code(fileNullFail(bad(mpi.ErrArg, op, "filename or fh is NULL")))
	}
	f, err := mpi.FileOpen(c, C.GoString(filename), amodeIn(amode), i)
	if err != nil {
		return code(fileNullFail(err))
	}
	fileMu.Lock()
	h := fileNullErrh
	fileMu.Unlock()
	if h != mpi.ErrorsReturn {
		f.SetErrhandler(h)
	}
	*fh = fileHandle(f)
	return cSuccess
}

//export ftmpi_File_close
func ftmpi_File_close(fh *C.uintptr_t) C.int {
	f, err := fileOf(*fh, "MPI_File_close")
	if err != nil {
		return code(err)
	}
	err = f.Close()
	fileMu.Lock()
	delete(fileViews, f)
	fileMu.Unlock()
	files.del(uintptr(*fh))
	*fh = hFileNull
	return code(err)
}

//export ftmpi_File_delete
func ftmpi_File_delete(filename *C.char, info C.uintptr_t) C.int {
	const op = "MPI_File_delete"
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	if filename == nil {
		return code(fileNullFail(bad(mpi.ErrArg, op, "filename is NULL")))
	}
	if err := mpi.FileDelete(C.GoString(filename), i); err != nil {
		return code(fileNullFail(err))
	}
	return cSuccess
}

// fileCall runs fn on the file of handle fh.
func fileCall(op string, fh C.uintptr_t, fn func(f *mpi.File) error) C.int {
	f, err := fileOf(fh, op)
	if err != nil {
		return code(err)
	}
	return code(fn(f))
}

//export ftmpi_File_set_size
func ftmpi_File_set_size(fh C.uintptr_t, size C.MPI_Offset) C.int {
	return fileCall("MPI_File_set_size", fh, func(f *mpi.File) error { return f.SetSize(int64(size)) })
}

//export ftmpi_File_preallocate
func ftmpi_File_preallocate(fh C.uintptr_t, size C.MPI_Offset) C.int {
	return fileCall("MPI_File_preallocate", fh, func(f *mpi.File) error { return f.Preallocate(int64(size)) })
}

//export ftmpi_File_get_size
func ftmpi_File_get_size(fh C.uintptr_t, size *C.MPI_Offset) C.int {
	return fileCall("MPI_File_get_size", fh, func(f *mpi.File) error {
		n, err := f.GetSize()
		*size = C.MPI_Offset(n)
		return err
	})
}

//export ftmpi_File_get_group
func ftmpi_File_get_group(fh C.uintptr_t, group *C.uintptr_t) C.int {
	return fileCall("MPI_File_get_group", fh, func(f *mpi.File) error {
		g, err := f.GetGroup()
		if err == nil {
			*group = groupHandle(g)
		}
		return err
	})
}

//export ftmpi_File_get_amode
func ftmpi_File_get_amode(fh C.uintptr_t, amode *C.int) C.int {
	return fileCall("MPI_File_get_amode", fh, func(f *mpi.File) error {
		a, err := f.GetAmode()
		*amode = amodeOut(a)
		return err
	})
}

//export ftmpi_File_set_info
func ftmpi_File_set_info(fh, info C.uintptr_t) C.int {
	const op = "MPI_File_set_info"
	f, err := fileOf(fh, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	return code(f.SetInfo(i))
}

//export ftmpi_File_get_info
func ftmpi_File_get_info(fh C.uintptr_t, info *C.uintptr_t) C.int {
	return fileCall("MPI_File_get_info", fh, func(f *mpi.File) error {
		i, err := f.GetInfo()
		if err == nil {
			*info = infoHandle(i)
		}
		return err
	})
}

//export ftmpi_File_set_view
func ftmpi_File_set_view(fh C.uintptr_t, disp C.MPI_Offset, etype, filetype C.uintptr_t, datarep *C.char, info C.uintptr_t) C.int {
	const op = "MPI_File_set_view"
	f, err := fileOf(fh, op)
	if err != nil {
		return code(err)
	}
	et, rc := fileType(etype, f, op)
	if rc != cSuccess {
		return rc
	}
	ft, rc := fileType(filetype, f, op)
	if rc != cSuccess {
		return rc
	}
	rep := mpi.Native
	if datarep != nil {
		rep = C.GoString(datarep)
	}
	if _, err := infoOf(info, op); err != nil {
		return code(err)
	}
	if disp == C.MPI_DISPLACEMENT_CURRENT {
		err = f.SetViewCurrentDatarep(et, ft, rep)
	} else {
		err = f.SetViewDatarep(int64(disp), et, ft, rep)
	}
	if err != nil {
		return code(err)
	}
	fileMu.Lock()
	fileViews[f] = [2]C.uintptr_t{etype, filetype}
	fileMu.Unlock()
	return cSuccess
}

//export ftmpi_File_get_view
func ftmpi_File_get_view(fh C.uintptr_t, disp *C.MPI_Offset, etype, filetype *C.uintptr_t, datarep *C.char) C.int {
	return fileCall("MPI_File_get_view", fh, func(f *mpi.File) error {
		d, et, ft, err := f.GetView()
		if err != nil {
			return err
		}
		*disp = C.MPI_Offset(d)
		*etype, *filetype = typeHandle(et), typeHandle(ft)
		fileMu.Lock()
		hs, ok := fileViews[f]
		fileMu.Unlock()
		if ok {
			if d, ok := predefTypes[uintptr(hs[0])]; ok && d == et {
				*etype = hs[0]
			}
			if d, ok := predefTypes[uintptr(hs[1])]; ok && d == ft {
				*filetype = hs[1]
			}
		}
		cstr(datarep, f.Datarep(), C.MPI_MAX_DATAREP_STRING)
		return nil
	})
}

// fileStatus is the status of a data access that moved n bytes.
func fileStatus(s *C.MPI_Status, n int) {
	setStatus(s, mpi.Status{Source: mpi.AnySource, Tag: mpi.AnyTag, Bytes: n})
}

// fileArgs resolves a data access's file and buffer.
func fileArgs(op string, fh C.uintptr_t, buf unsafe.Pointer, count int, dt C.uintptr_t) (*mpi.File, []byte, *mpi.Datatype, C.int) {
	f, err := fileOf(fh, op)
	if err != nil {
		return nil, nil, nil, code(err)
	}
	d, rc := fileType(dt, f, op)
	if rc != cSuccess {
		return nil, nil, nil, rc
	}
	b, v, err := view(buf, int(count), d, op)
	if err != nil {
		return nil, nil, nil, fileFail(f, err)
	}
	return f, b, v, cSuccess
}

// fileRead runs a blocking read; its status counts the bytes read.
func fileRead(op string, fh C.uintptr_t, buf unsafe.Pointer, count int, dt C.uintptr_t, status *C.MPI_Status,
	fn func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (int, error)) C.int {
	f, b, d, rc := fileArgs(op, fh, buf, count, dt)
	if rc != cSuccess {
		return rc
	}
	n, err := fn(f, b, int(count), d)
	fileStatus(status, n)
	return code(err)
}

// fileWrite runs a blocking write; its status counts the bytes written.
func fileWrite(op string, fh C.uintptr_t, buf unsafe.Pointer, count int, dt C.uintptr_t, status *C.MPI_Status,
	fn func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error) C.int {
	f, b, d, rc := fileArgs(op, fh, buf, count, dt)
	if rc != cSuccess {
		return rc
	}
	err := fn(f, b, int(count), d)
	n := 0
	if err == nil {
		n = int(count) * d.Size()
	}
	fileStatus(status, n)
	return code(err)
}

// fileIread starts a nonblocking read: its request's status counts the
// bytes read.
func fileIread(op string, fh C.uintptr_t, buf unsafe.Pointer, count int, dt C.uintptr_t, request *C.uintptr_t,
	fn func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.RequestOf[int], error)) C.int {
	f, b, d, rc := fileArgs(op, fh, buf, count, dt)
	if rc != cSuccess {
		return rc
	}
	r, err := fn(f, b, int(count), d)
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r.Request, done: func(st *mpi.Status) {
		n, _ := r.Wait()
		st.Source, st.Tag, st.Bytes = mpi.AnySource, mpi.AnyTag, n
	}})
	return cSuccess
}

// fileIwrite starts a nonblocking write.
func fileIwrite(op string, fh C.uintptr_t, buf unsafe.Pointer, count int, dt C.uintptr_t, request *C.uintptr_t,
	fn func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.Request, error)) C.int {
	f, b, d, rc := fileArgs(op, fh, buf, count, dt)
	if rc != cSuccess {
		return rc
	}
	r, err := fn(f, b, int(count), d)
	if err != nil {
		return code(err)
	}
	n := int(count) * d.Size()
	*request = newReq(&creq{r: r, done: func(st *mpi.Status) {
		st.Source, st.Tag = mpi.AnySource, mpi.AnyTag
		if st.Err == nil {
			st.Bytes = n
		}
	}})
	return cSuccess
}

// fileBegin begins a split collective.
func fileBegin(op string, fh C.uintptr_t, buf unsafe.Pointer, count int, dt C.uintptr_t,
	fn func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error) C.int {
	f, b, d, rc := fileArgs(op, fh, buf, count, dt)
	if rc != cSuccess {
		return rc
	}
	return code(fn(f, b, int(count), d))
}

// fileEnd ends a split collective; its status counts the bytes moved.
func fileEnd(op string, fh C.uintptr_t, status *C.MPI_Status, fn func(f *mpi.File) (int, error)) C.int {
	return fileCall(op, fh, func(f *mpi.File) error {
		n, err := fn(f)
		fileStatus(status, n)
		return err
	})
}

//export ftmpi_File_read_at
func ftmpi_File_read_at(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_at", fh, buf, int(count), dt, status, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (int, error) {
		return mpi.ReadAtTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_read_at_all
func ftmpi_File_read_at_all(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_at_all", fh, buf, int(count), dt, status, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (int, error) {
		return mpi.ReadAtAllTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_write_at
func ftmpi_File_write_at(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_at", fh, buf, int(count), dt, status, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error {
		return mpi.WriteAtTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_write_at_all
func ftmpi_File_write_at_all(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_at_all", fh, buf, int(count), dt, status, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error {
		return mpi.WriteAtAllTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_iread_at
func ftmpi_File_iread_at(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread_at", fh, buf, int(count), dt, request, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.RequestOf[int], error) {
		return mpi.IreadAtTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_iwrite_at
func ftmpi_File_iwrite_at(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite_at", fh, buf, int(count), dt, request, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.Request, error) {
		return mpi.IwriteAtTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_iread_at_all
func ftmpi_File_iread_at_all(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread_at_all", fh, buf, int(count), dt, request, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.RequestOf[int], error) {
		return mpi.IreadAtAllTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_iwrite_at_all
func ftmpi_File_iwrite_at_all(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite_at_all", fh, buf, int(count), dt, request, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.Request, error) {
		return mpi.IwriteAtAllTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_read
func ftmpi_File_read(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read", fh, buf, int(count), dt, status, mpi.ReadTyped)
}

//export ftmpi_File_read_all
func ftmpi_File_read_all(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_all", fh, buf, int(count), dt, status, mpi.ReadAllTyped)
}

//export ftmpi_File_write
func ftmpi_File_write(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write", fh, buf, int(count), dt, status, mpi.WriteTyped)
}

//export ftmpi_File_write_all
func ftmpi_File_write_all(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_all", fh, buf, int(count), dt, status, mpi.WriteAllTyped)
}

//export ftmpi_File_iread
func ftmpi_File_iread(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread", fh, buf, int(count), dt, request, mpi.IreadTyped)
}

//export ftmpi_File_iwrite
func ftmpi_File_iwrite(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite", fh, buf, int(count), dt, request, mpi.IwriteTyped)
}

//export ftmpi_File_iread_all
func ftmpi_File_iread_all(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread_all", fh, buf, int(count), dt, request, mpi.IreadAllTyped)
}

//export ftmpi_File_iwrite_all
func ftmpi_File_iwrite_all(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite_all", fh, buf, int(count), dt, request, mpi.IwriteAllTyped)
}

//export ftmpi_File_seek
func ftmpi_File_seek(fh C.uintptr_t, off C.MPI_Offset, whence C.int) C.int {
	return fileCall("MPI_File_seek", fh, func(f *mpi.File) error {
		_, err := f.Seek(int64(off), whenceIn(whence))
		return err
	})
}

//export ftmpi_File_get_position
func ftmpi_File_get_position(fh C.uintptr_t, off *C.MPI_Offset) C.int {
	return fileCall("MPI_File_get_position", fh, func(f *mpi.File) error {
		p, err := f.GetPosition()
		*off = C.MPI_Offset(p)
		return err
	})
}

//export ftmpi_File_get_byte_offset
func ftmpi_File_get_byte_offset(fh C.uintptr_t, off C.MPI_Offset, disp *C.MPI_Offset) C.int {
	return fileCall("MPI_File_get_byte_offset", fh, func(f *mpi.File) error {
		b, err := f.GetByteOffset(int64(off))
		*disp = C.MPI_Offset(b)
		return err
	})
}

//export ftmpi_File_read_shared
func ftmpi_File_read_shared(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_shared", fh, buf, int(count), dt, status, mpi.ReadSharedTyped)
}

//export ftmpi_File_write_shared
func ftmpi_File_write_shared(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_shared", fh, buf, int(count), dt, status, mpi.WriteSharedTyped)
}

//export ftmpi_File_iread_shared
func ftmpi_File_iread_shared(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread_shared", fh, buf, int(count), dt, request, mpi.IreadSharedTyped)
}

//export ftmpi_File_iwrite_shared
func ftmpi_File_iwrite_shared(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite_shared", fh, buf, int(count), dt, request, mpi.IwriteSharedTyped)
}

//export ftmpi_File_read_ordered
func ftmpi_File_read_ordered(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_ordered", fh, buf, int(count), dt, status, mpi.ReadOrderedTyped)
}

//export ftmpi_File_write_ordered
func ftmpi_File_write_ordered(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_ordered", fh, buf, int(count), dt, status, mpi.WriteOrderedTyped)
}

//export ftmpi_File_seek_shared
func ftmpi_File_seek_shared(fh C.uintptr_t, off C.MPI_Offset, whence C.int) C.int {
	return fileCall("MPI_File_seek_shared", fh, func(f *mpi.File) error { return f.SeekShared(int64(off), whenceIn(whence)) })
}

//export ftmpi_File_get_position_shared
func ftmpi_File_get_position_shared(fh C.uintptr_t, off *C.MPI_Offset) C.int {
	return fileCall("MPI_File_get_position_shared", fh, func(f *mpi.File) error {
		p, err := f.GetPositionShared()
		*off = C.MPI_Offset(p)
		return err
	})
}

//export ftmpi_File_read_at_all_begin
func ftmpi_File_read_at_all_begin(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_read_at_all_begin", fh, buf, int(count), dt, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error {
		return mpi.ReadAtAllBeginTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_read_at_all_end
func ftmpi_File_read_at_all_end(fh C.uintptr_t, buf unsafe.Pointer, status *C.MPI_Status) C.int {
	return fileEnd("MPI_File_read_at_all_end", fh, status, (*mpi.File).ReadAtAllEnd)
}

//export ftmpi_File_write_at_all_begin
func ftmpi_File_write_at_all_begin(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_write_at_all_begin", fh, buf, int(count), dt, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error {
		return mpi.WriteAtAllBeginTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_write_at_all_end
func ftmpi_File_write_at_all_end(fh C.uintptr_t, buf unsafe.Pointer, status *C.MPI_Status) C.int {
	return fileEnd("MPI_File_write_at_all_end", fh, status, func(f *mpi.File) (int, error) { return 0, f.WriteAtAllEnd() })
}

//export ftmpi_File_read_all_begin
func ftmpi_File_read_all_begin(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_read_all_begin", fh, buf, int(count), dt, mpi.ReadAllBeginTyped)
}

//export ftmpi_File_read_all_end
func ftmpi_File_read_all_end(fh C.uintptr_t, buf unsafe.Pointer, status *C.MPI_Status) C.int {
	return fileEnd("MPI_File_read_all_end", fh, status, (*mpi.File).ReadAllEnd)
}

//export ftmpi_File_write_all_begin
func ftmpi_File_write_all_begin(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_write_all_begin", fh, buf, int(count), dt, mpi.WriteAllBeginTyped)
}

//export ftmpi_File_write_all_end
func ftmpi_File_write_all_end(fh C.uintptr_t, buf unsafe.Pointer, status *C.MPI_Status) C.int {
	return fileEnd("MPI_File_write_all_end", fh, status, func(f *mpi.File) (int, error) { return 0, f.WriteAllEnd() })
}

//export ftmpi_File_read_ordered_begin
func ftmpi_File_read_ordered_begin(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_read_ordered_begin", fh, buf, int(count), dt, mpi.ReadOrderedBeginTyped)
}

//export ftmpi_File_read_ordered_end
func ftmpi_File_read_ordered_end(fh C.uintptr_t, buf unsafe.Pointer, status *C.MPI_Status) C.int {
	return fileEnd("MPI_File_read_ordered_end", fh, status, (*mpi.File).ReadOrderedEnd)
}

//export ftmpi_File_write_ordered_begin
func ftmpi_File_write_ordered_begin(fh C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_write_ordered_begin", fh, buf, int(count), dt, mpi.WriteOrderedBeginTyped)
}

//export ftmpi_File_write_ordered_end
func ftmpi_File_write_ordered_end(fh C.uintptr_t, buf unsafe.Pointer, status *C.MPI_Status) C.int {
	return fileEnd("MPI_File_write_ordered_end", fh, status, func(f *mpi.File) (int, error) { return 0, f.WriteOrderedEnd() })
}

//export ftmpi_File_get_type_extent
func ftmpi_File_get_type_extent(fh, dt C.uintptr_t, extent *C.MPI_Aint) C.int {
	const op = "MPI_File_get_type_extent"
	f, err := fileOf(fh, op)
	if err != nil {
		return code(err)
	}
	d, rc := fileType(dt, f, op)
	if rc != cSuccess {
		return rc
	}
	_, ext := d.Extent() // "native": the file extent is the memory extent
	*extent = C.MPI_Aint(ext)
	return cSuccess
}

//export ftmpi_File_set_atomicity
func ftmpi_File_set_atomicity(fh C.uintptr_t, flag C.int) C.int {
	return fileCall("MPI_File_set_atomicity", fh, func(f *mpi.File) error { return f.SetAtomicity(flag != 0) })
}

//export ftmpi_File_get_atomicity
func ftmpi_File_get_atomicity(fh C.uintptr_t, flag *C.int) C.int {
	return fileCall("MPI_File_get_atomicity", fh, func(f *mpi.File) error {
		a, err := f.GetAtomicity()
		*flag = cbool(a)
		return err
	})
}

//export ftmpi_File_sync
func ftmpi_File_sync(fh C.uintptr_t) C.int {
	return fileCall("MPI_File_sync", fh, (*mpi.File).Sync)
}

//export ftmpi_File_create_errhandler
func ftmpi_File_create_errhandler(fn unsafe.Pointer, errhandler *C.uintptr_t) C.int {
	if fn == nil {
		return code(worldFail(bad(mpi.ErrArg, "MPI_File_create_errhandler", "null function")))
	}
	e := mpi.FileCreateErrhandler(func(f *mpi.File, err error) { callFileErrh(fn, fileHandle(f), err) })
	fileMu.Lock()
	fileErrhFns[e] = fn
	fileMu.Unlock()
	*errhandler = C.uintptr_t(errhs.put(e))
	return cSuccess
}

//export ftmpi_File_set_errhandler
func ftmpi_File_set_errhandler(fh, errhandler C.uintptr_t) C.int {
	const op = "MPI_File_set_errhandler"
	e, err := errhOf(errhandler, op)
	if err != nil {
		return code(err)
	}
	if uintptr(fh) == hFileNull {
		if e == mpi.ErrorsReinitAsync || e == mpi.ErrorsReinitSync {
			// As on a file (mpi.File.SetErrhandler): seed 000 1.4 and
			// 1.6 (5), the Reinit handlers belong on MPI_COMM_WORLD only.
			return code(fileNullFail(bad(mpi.ErrArg, op, "%v may only be set on MPI_COMM_WORLD (seed 000, 1.4)", e)))
		}
		fileMu.Lock()
		fileNullErrh = e
		fileMu.Unlock()
		return cSuccess
	}
	return fileCall(op, fh, func(f *mpi.File) error { return f.SetErrhandler(e) })
}

//export ftmpi_File_get_errhandler
func ftmpi_File_get_errhandler(fh C.uintptr_t, errhandler *C.uintptr_t) C.int {
	if uintptr(fh) == hFileNull {
		fileMu.Lock()
		e := fileNullErrh
		fileMu.Unlock()
		*errhandler = errhHandle(e)
		return cSuccess
	}
	return fileCall("MPI_File_get_errhandler", fh, func(f *mpi.File) error {
		*errhandler = errhHandle(f.Errhandler())
		return nil
	})
}

//export ftmpi_File_call_errhandler
func ftmpi_File_call_errhandler(fh C.uintptr_t, errorcode C.int) C.int {
	err := errOf(int(errorcode), "MPI_File_call_errhandler")
	if uintptr(fh) == hFileNull {
		fileNullFail(err)
		return cSuccess
	}
	return fileCall("MPI_File_call_errhandler", fh, func(f *mpi.File) error {
		f.CallErrhandler(err)
		return nil
	})
}

// The large-count forms (MPI-4.1 14.4): the same calls with MPI_Count counts.

//export ftmpi_File_read_at_c
func ftmpi_File_read_at_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_at", fh, buf, int(count), dt, status, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (int, error) {
		return mpi.ReadAtTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_read_at_all_c
func ftmpi_File_read_at_all_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_at_all", fh, buf, int(count), dt, status, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (int, error) {
		return mpi.ReadAtAllTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_write_at_c
func ftmpi_File_write_at_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_at", fh, buf, int(count), dt, status, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error {
		return mpi.WriteAtTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_write_at_all_c
func ftmpi_File_write_at_all_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_at_all", fh, buf, int(count), dt, status, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error {
		return mpi.WriteAtAllTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_iread_at_c
func ftmpi_File_iread_at_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread_at", fh, buf, int(count), dt, request, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.RequestOf[int], error) {
		return mpi.IreadAtTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_iwrite_at_c
func ftmpi_File_iwrite_at_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite_at", fh, buf, int(count), dt, request, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.Request, error) {
		return mpi.IwriteAtTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_iread_at_all_c
func ftmpi_File_iread_at_all_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread_at_all", fh, buf, int(count), dt, request, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.RequestOf[int], error) {
		return mpi.IreadAtAllTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_iwrite_at_all_c
func ftmpi_File_iwrite_at_all_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite_at_all", fh, buf, int(count), dt, request, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) (*mpi.Request, error) {
		return mpi.IwriteAtAllTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_read_c
func ftmpi_File_read_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read", fh, buf, int(count), dt, status, mpi.ReadTyped)
}

//export ftmpi_File_read_all_c
func ftmpi_File_read_all_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_all", fh, buf, int(count), dt, status, mpi.ReadAllTyped)
}

//export ftmpi_File_write_c
func ftmpi_File_write_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write", fh, buf, int(count), dt, status, mpi.WriteTyped)
}

//export ftmpi_File_write_all_c
func ftmpi_File_write_all_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_all", fh, buf, int(count), dt, status, mpi.WriteAllTyped)
}

//export ftmpi_File_iread_c
func ftmpi_File_iread_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread", fh, buf, int(count), dt, request, mpi.IreadTyped)
}

//export ftmpi_File_iwrite_c
func ftmpi_File_iwrite_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite", fh, buf, int(count), dt, request, mpi.IwriteTyped)
}

//export ftmpi_File_iread_all_c
func ftmpi_File_iread_all_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread_all", fh, buf, int(count), dt, request, mpi.IreadAllTyped)
}

//export ftmpi_File_iwrite_all_c
func ftmpi_File_iwrite_all_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite_all", fh, buf, int(count), dt, request, mpi.IwriteAllTyped)
}

//export ftmpi_File_read_shared_c
func ftmpi_File_read_shared_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_shared", fh, buf, int(count), dt, status, mpi.ReadSharedTyped)
}

//export ftmpi_File_write_shared_c
func ftmpi_File_write_shared_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_shared", fh, buf, int(count), dt, status, mpi.WriteSharedTyped)
}

//export ftmpi_File_iread_shared_c
func ftmpi_File_iread_shared_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIread("MPI_File_iread_shared", fh, buf, int(count), dt, request, mpi.IreadSharedTyped)
}

//export ftmpi_File_iwrite_shared_c
func ftmpi_File_iwrite_shared_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, request *C.uintptr_t) C.int {
	return fileIwrite("MPI_File_iwrite_shared", fh, buf, int(count), dt, request, mpi.IwriteSharedTyped)
}

//export ftmpi_File_read_ordered_c
func ftmpi_File_read_ordered_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileRead("MPI_File_read_ordered", fh, buf, int(count), dt, status, mpi.ReadOrderedTyped)
}

//export ftmpi_File_write_ordered_c
func ftmpi_File_write_ordered_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, status *C.MPI_Status) C.int {
	return fileWrite("MPI_File_write_ordered", fh, buf, int(count), dt, status, mpi.WriteOrderedTyped)
}

//export ftmpi_File_read_at_all_begin_c
func ftmpi_File_read_at_all_begin_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_read_at_all_begin", fh, buf, int(count), dt, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error {
		return mpi.ReadAtAllBeginTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_write_at_all_begin_c
func ftmpi_File_write_at_all_begin_c(fh C.uintptr_t, off C.MPI_Offset, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_write_at_all_begin", fh, buf, int(count), dt, func(f *mpi.File, b []byte, n int, d *mpi.Datatype) error {
		return mpi.WriteAtAllBeginTyped(f, int64(off), b, n, d)
	})
}

//export ftmpi_File_read_all_begin_c
func ftmpi_File_read_all_begin_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_read_all_begin", fh, buf, int(count), dt, mpi.ReadAllBeginTyped)
}

//export ftmpi_File_write_all_begin_c
func ftmpi_File_write_all_begin_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_write_all_begin", fh, buf, int(count), dt, mpi.WriteAllBeginTyped)
}

//export ftmpi_File_read_ordered_begin_c
func ftmpi_File_read_ordered_begin_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_read_ordered_begin", fh, buf, int(count), dt, mpi.ReadOrderedBeginTyped)
}

//export ftmpi_File_write_ordered_begin_c
func ftmpi_File_write_ordered_begin_c(fh C.uintptr_t, buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t) C.int {
	return fileBegin("MPI_File_write_ordered_begin", fh, buf, int(count), dt, mpi.WriteOrderedBeginTyped)
}

//export ftmpi_File_get_type_extent_c
func ftmpi_File_get_type_extent_c(fh, dt C.uintptr_t, extent *C.MPI_Count) C.int {
	var e C.MPI_Aint
	rc := ftmpi_File_get_type_extent(fh, dt, &e)
	*extent = C.MPI_Count(e)
	return rc
}
