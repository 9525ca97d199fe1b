package mpi

// Parallel files (MPI-4.1 chapter 14, "I/O") over POSIX files, with the
// failure rules of seed 002 (5.2.1, 5.2.3, A.2.5, A.3.3) and seed 003
// (17.4.3, 17.12). This file: opening, closing, deleting, sizes, hints,
// error handlers and the fault-tolerance calls; file_view.go: views;
// file_io.go: independent and nonblocking data access and the individual
// file pointer; file_coll.go: collective data access (two-phase);
// file_shared.go: the shared file pointer. The engine under them (views
// flattened, two-phase planning and exchanges, the data path, the shared
// pointer's protocol) is internal/mpiio; these files hold the typed
// calls: argument checks, datatypes, file pointers, error classes and
// handlers, and the glue (mpiio.Net over the private communicator,
// mpiio.Data over the descriptor).
//
// Design. A file handle owns a private duplicate of its communicator
// (File.c), made at FileOpen like a window's (Win.c): every collective
// part of a file operation (the checks of SetView, SetSize, Sync, the
// exchanges of the two-phase collective I/O) is a collective on it, and
// so goes through its fault-tolerance model like any communicator's
// collective: under ULFM a failure makes it raise ErrProcFailed; under
// run-through it raises ErrRankFailStop while a failure is not recognised
// (File.Validate) and then runs over the alive processes - recognised
// failed processes neither read nor write (seed 003 17.12.4) - without a
// branch on the model here or in the collective code. A revocation of the
// handle (File.Revoke) is the revocation of that communicator. Every
// process opens the file itself (os.OpenFile): the processes must share
// a file system (one host, or a shared one), as MPI-IO over POSIX files
// always requires.
//
// All or nothing. FileOpen exchanges the access modes (they must be equal,
// and ModeExcl is checked against the file's existence before anyone
// creates it), opens the file at every process and then runs a
// fault-tolerant agreement on the private communicator on "opened here":
// the handle is created at every process or at none (seed 003 17.12.2),
// also when a process fails during the open. Close is the same agreement:
// it succeeds only if every failed process of the handle was acknowledged
// at every process (GetFailed) or recognised (Validate); otherwise it
// raises ErrRankFailStop (= ErrProcFailed) at every process and the file
// stays open (17.12.2). No call waits for a failed process: the
// agreements and collectives end on a failure.
//
// After a failure. A collective data access during which a process fails
// raises ErrProcFailed at the processes whose exchanges the failure cut
// (seed 002 A.2.5 allows others to succeed: their part may be written or
// not); the file contents of that call and both file pointers are then
// undefined (the individual pointer has moved past the call's data as if
// it had succeeded; a collective update of the shared pointer may or may
// not have been applied). The advice of A.2.5 holds: an
// Agree on a communicator of the same group tells the survivors whether
// the call succeeded everywhere.

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/mpiio"
)

// The I/O error classes (codes as in Open MPI's mpi.h).
var (
	ErrAccess               = &Class{"MPI_ERR_ACCESS: permission denied", 20}                    // MPI_ERR_ACCESS
	ErrAmode                = &Class{"MPI_ERR_AMODE: invalid access mode", 21}                   // MPI_ERR_AMODE
	ErrBadFile              = &Class{"MPI_ERR_BAD_FILE: invalid file name", 23}                  // MPI_ERR_BAD_FILE
	ErrFileExists           = &Class{"MPI_ERR_FILE_EXISTS: file exists", 28}                     // MPI_ERR_FILE_EXISTS
	ErrFile                 = &Class{"MPI_ERR_FILE: invalid file handle", 30}                    // MPI_ERR_FILE
	ErrIO                   = &Class{"MPI_ERR_IO: input/output error", 35}                       // MPI_ERR_IO
	ErrNotSame              = &Class{"MPI_ERR_NOT_SAME: arguments differ between processes", 40} // MPI_ERR_NOT_SAME
	ErrNoSpace              = &Class{"MPI_ERR_NO_SPACE: out of space", 41}                       // MPI_ERR_NO_SPACE
	ErrNoSuchFile           = &Class{"MPI_ERR_NO_SUCH_FILE: file does not exist", 42}            // MPI_ERR_NO_SUCH_FILE
	ErrQuota                = &Class{"MPI_ERR_QUOTA: quota exceeded", 44}                        // MPI_ERR_QUOTA
	ErrReadOnly             = &Class{"MPI_ERR_READ_ONLY: read-only file or file system", 45}     // MPI_ERR_READ_ONLY
	ErrUnsupportedDatarep   = &Class{"MPI_ERR_UNSUPPORTED_DATAREP: unsupported datarep", 51}     // MPI_ERR_UNSUPPORTED_DATAREP
	ErrUnsupportedOperation = &Class{"MPI_ERR_UNSUPPORTED_OPERATION: not supported here", 52}    // MPI_ERR_UNSUPPORTED_OPERATION
)

// Access modes of FileOpen (MPI_MODE_*, values as in Open MPI's mpi.h);
// combine them with |.
const (
	ModeCreate        = 1   // MPI_MODE_CREATE: create the file if it does not exist
	ModeRdonly        = 2   // MPI_MODE_RDONLY: read only
	ModeWronly        = 4   // MPI_MODE_WRONLY: write only
	ModeRdwr          = 8   // MPI_MODE_RDWR: reading and writing
	ModeDeleteOnClose = 16  // MPI_MODE_DELETE_ON_CLOSE: delete the file on Close
	ModeUniqueOpen    = 32  // MPI_MODE_UNIQUE_OPEN: not opened concurrently elsewhere (a hint)
	ModeExcl          = 64  // MPI_MODE_EXCL: error if creating a file that exists
	ModeAppend        = 128 // MPI_MODE_APPEND: the file pointers start at the end of the file
	ModeSequential    = 256 // MPI_MODE_SEQUENTIAL: only the shared file pointer is used
)

var amodeNames = []struct {
	bit  int
	name string
}{
	{ModeCreate, "MPI_MODE_CREATE"}, {ModeRdonly, "MPI_MODE_RDONLY"}, {ModeWronly, "MPI_MODE_WRONLY"},
	{ModeRdwr, "MPI_MODE_RDWR"}, {ModeDeleteOnClose, "MPI_MODE_DELETE_ON_CLOSE"},
	{ModeUniqueOpen, "MPI_MODE_UNIQUE_OPEN"}, {ModeExcl, "MPI_MODE_EXCL"},
	{ModeAppend, "MPI_MODE_APPEND"}, {ModeSequential, "MPI_MODE_SEQUENTIAL"},
}

// amodeString names the modes of amode.
func amodeString(amode int) string {
	s := ""
	for _, m := range amodeNames {
		if amode&m.bit != 0 {
			if s != "" {
				s += "|"
			}
			s += m.name
		}
	}
	if rest := amode &^ 511; rest != 0 {
		if s != "" {
			s += "|"
		}
		s += fmt.Sprintf("%#x", rest)
	}
	if s == "" {
		return "0"
	}
	return s
}

// checkAmode checks an access mode (MPI-4.1 14.2.1): exactly one of
// RDONLY, WRONLY, RDWR; CREATE and EXCL not with RDONLY; SEQUENTIAL not
// with RDWR; no unknown bits.
func checkAmode(op string, amode int) error {
	bad := func(format string, args ...any) error {
		return newErr(ErrAmode, op, nil, NoPeer, format, args...)
	}
	if rest := amode &^ 511; rest != 0 {
		return bad("unknown mode bits %#x in %s", rest, amodeString(amode))
	}
	n := 0
	for _, b := range []int{ModeRdonly, ModeWronly, ModeRdwr} {
		if amode&b != 0 {
			n++
		}
	}
	switch {
	case n == 0:
		return bad("%s has none of MPI_MODE_RDONLY, MPI_MODE_WRONLY, MPI_MODE_RDWR", amodeString(amode))
	case n > 1:
		return bad("%s has more than one of MPI_MODE_RDONLY, MPI_MODE_WRONLY, MPI_MODE_RDWR", amodeString(amode))
	case amode&ModeRdonly != 0 && amode&ModeCreate != 0:
		return bad("MPI_MODE_CREATE with MPI_MODE_RDONLY")
	case amode&ModeRdonly != 0 && amode&ModeExcl != 0:
		return bad("MPI_MODE_EXCL with MPI_MODE_RDONLY")
	case amode&ModeSequential != 0 && amode&ModeRdwr != 0:
		return bad("MPI_MODE_SEQUENTIAL with MPI_MODE_RDWR")
	}
	return nil
}

// File is a file opened collectively by the processes of a communicator
// (MPI_File). Make one with FileOpen; Close closes it. Its methods may be
// called from several goroutines; the collective ones must be called in
// the same order at every process, as MPI requires.
type File struct {
	parent *Comm // the communicator it was opened on
	c      *Comm // private duplicate: the handle's collectives and revocation
	path   string
	name   string
	amode  int
	fd     *os.File
	sh     *mpiio.Shared // the shared file pointer (file_shared.go)

	errh atomic.Pointer[Errhandler]

	mu       sync.Mutex // the fields below
	view     *fileView
	pos      int64 // individual file pointer, in etypes of the view
	atomic   bool
	closed   bool
	hints    *Info
	cbNodes  int             // aggregators of collective I/O (cb_nodes); 0: one per host
	cbBuf    int64           // bytes an aggregator handles per round (cb_buffer_size)
	lastColl chan struct{}   // the end of the last collective started (turn)
	split    *RequestOf[int] // the active split collective (file_coll.go)
	splitOp  string
}

// Default collective-buffering size per aggregator and round.
const defaultCBBuffer = 16 << 20

// fileErr maps an operating system error to its MPI class.
func fileErr(op, name string, err error) *Error {
	class := ErrIO
	var errno syscall.Errno
	switch {
	case errors.Is(err, os.ErrNotExist):
		class = ErrNoSuchFile
	case errors.Is(err, os.ErrExist):
		class = ErrFileExists
	case errors.Is(err, os.ErrPermission):
		class = ErrAccess
	case errors.As(err, &errno):
		switch errno {
		case syscall.EROFS:
			class = ErrReadOnly
		case syscall.ENOSPC:
			class = ErrNoSpace
		case syscall.EDQUOT:
			class = ErrQuota
		case syscall.EISDIR, syscall.ENAMETOOLONG, syscall.ENOTDIR:
			class = ErrBadFile
		}
	}
	e := &Error{Class: class, Op: op, Peer: NoPeer, Detail: err.Error(), sys: err}
	e.Comm = name
	return e
}

// FileOpen opens the file path on every process of c (MPI_File_open). It
// is collective: every process passes the same amode (else ErrNotSame)
// and the same file. The file is created at every process or at none: a
// process that cannot open it (or fails) makes FileOpen fail everywhere,
// each process naming the first process's error. Under run-through, c must
// be collectively active (seed 003 17.12.2), and its recognised failed
// processes are recognised in the file's group. Hints of info: cb_nodes
// (the number of aggregators of collective I/O; default one per host) and
// cb_buffer_size (bytes per aggregator and round; default 16 MiB). The
// file's error handler is ErrorsReturn (MPI's default for files); errors
// of FileOpen are returned, not given to c's handler.
func FileOpen(c *Comm, path string, amode int, info *Info) (*File, error) {
	const op = "MPI_File_open"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return nil, newErr(ErrComm, op, c, NoPeer, "files are opened on intracommunicators")
	}
	// Local checks; a bad argument at one process still takes part in the
	// exchange, so every process fails.
	lerr := checkAmode(op, amode)
	if lerr == nil && path == "" {
		lerr = newErr(ErrBadFile, op, nil, NoPeer, "empty file name")
	}
	cbNodes, cbBuf := 0, int64(defaultCBBuffer)
	if lerr == nil {
		cbNodes, cbBuf, lerr = fileHints(op, info, cbNodes, cbBuf)
	}
	if lerr != nil {
		lerr.(*Error).Comm = "file " + path
	}
	exists := int64(0)
	if _, err := os.Stat(path); err == nil {
		exists = 1
	}
	var tok [8]byte
	rand.Read(tok[:])
	token := int64(binary.LittleEndian.Uint64(tok[:]) | 1)
	bad := int64(0)
	if lerr != nil {
		bad = 1
	}
	var all []int64
	fc, err := c.ftm().create(c, op, func() (*Comm, error) {
		var err error
		// Every process's amode, a token naming the shared pointer's side
		// file, whether its arguments were bad, whether the file exists:
		// taken before any process creates it (ModeExcl).
		if all, err = allgatherInts(c, op, int64(amode), token, bad, exists, 1); err != nil {
			return nil, err
		}
		if e := openAgreed(c, op, path, amode, all, lerr); e != nil {
			return nil, e
		}
		fc, err := c.dup(op)
		if err != nil {
			return nil, err
		}
		fc.errh.Store(ErrorsReturn)
		return fc, nil
	})
	if err != nil {
		return nil, err
	}
	for r := 0; r < c.size; r++ {
		if all[5*r+4] == 1 {
			token = all[5*r+1] // the first live process's token
			break
		}
	}
	f := &File{parent: c, c: fc, path: path, name: "file " + path, amode: amode,
		view: defaultView(), cbNodes: cbNodes, cbBuf: cbBuf, hints: info.clone()}
	f.errh.Store(ErrorsReturn)
	fc.name = f.name
	c.w.chkPrivate(fc, "file") // check.go
	dir, base := filepath.Split(path)
	f.sh = mpiio.NewShared(filepath.Join(dir, "."+base+".ftmpi-shfp-"+strconv.FormatUint(uint64(token), 36)))
	// Open here, then agree on the outcome (all or nothing).
	flags := 0
	switch {
	case amode&ModeRdonly != 0:
		flags = os.O_RDONLY
	case amode&ModeWronly != 0:
		flags = os.O_WRONLY
	default:
		flags = os.O_RDWR
	}
	if amode&ModeCreate != 0 {
		flags |= os.O_CREATE
	}
	var oerr error
	f.fd, oerr = os.OpenFile(path, flags, 0o644)
	if oerr != nil {
		oerr = fileErr(op, f.name, oerr)
	} else if amode&ModeAppend != 0 {
		if st, err := f.fd.Stat(); err == nil {
			f.pos = st.Size()
		}
	}
	ok := uint64(1)
	if oerr != nil {
		ok = 0
	}
	res, aerr := inTurn(fc.takeTurn(), op, func() (uint64, error) { return fc.agreeBits(op, ok) })
	if aerr == nil && res&1 == 0 && oerr == nil {
		aerr = newErr(ErrIO, op, nil, NoPeer, "the file could not be opened at another process")
		aerr.(*Error).Comm = f.name
	}
	if oerr == nil {
		oerr = aerr
	}
	if oerr != nil {
		if f.fd != nil {
			f.fd.Close()
		}
		fc.Free()
		return nil, oerr
	}
	return f, nil
}

// openAgreed checks the exchanged (amode, token, bad, exists, live) rows
// of FileOpen: the same at every process.
func openAgreed(c *Comm, op, path string, amode int, all []int64, lerr error) error {
	name := "file " + path
	fail := func(class *Class, format string, args ...any) error {
		e := newErr(class, op, nil, NoPeer, format, args...)
		e.Comm = name
		return e
	}
	if lerr != nil {
		return lerr
	}
	exists := false
	for r := 0; r < c.size; r++ {
		row := all[5*r : 5*r+5]
		if row[4] != 1 {
			continue // a recognised failed process (run-through)
		}
		if row[2] != 0 {
			return fail(ErrAmode, "the arguments are invalid at rank %d", r)
		}
		if int(row[0]) != amode {
			return fail(ErrNotSame, "access mode %s here, %s at rank %d", amodeString(amode), amodeString(int(row[0])), r)
		}
		exists = exists || row[3] == 1
	}
	if amode&ModeExcl != 0 && amode&ModeCreate != 0 && exists {
		e := fileErr(op, name, &os.PathError{Op: "open", Path: path, Err: os.ErrExist})
		e.Detail = path + " exists (MPI_MODE_EXCL)"
		return e
	}
	return nil
}

// fileHints reads the hints of collective buffering from info.
func fileHints(op string, info *Info, cbNodes int, cbBuf int64) (int, int64, error) {
	if info == nil {
		return cbNodes, cbBuf, nil
	}
	if v, ok := info.Get("cb_nodes"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, 0, newErr(ErrInfoValue, op, nil, NoPeer, "cb_nodes %q is not a positive integer", v)
		}
		cbNodes = n
	}
	if v, ok := info.Get("cb_buffer_size"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return 0, 0, newErr(ErrInfoValue, op, nil, NoPeer, "cb_buffer_size %q is not a positive integer", v)
		}
		cbBuf = n
	}
	return cbNodes, cbBuf, nil
}

// check returns the error of an operation on a closed or nil handle.
func (f *File) checkOpen(op string) error {
	if f == nil {
		return newErr(ErrFile, op, nil, NoPeer, "nil file handle (MPI_FILE_NULL)")
	}
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return f.handle(f.err(ErrFile, op, "file already closed"))
	}
	return nil
}

// check is checkOpen plus the revocation (seed 002 A.3.3: every non-local
// operation on a revoked handle raises ErrRevoked).
func (f *File) check(op string) error {
	if err := f.checkOpen(op); err != nil {
		return err
	}
	if f.c.IsRevoked() {
		return f.handle(f.err(ErrRevoked, op, "the file handle (File.Revoke)"))
	}
	return nil
}

func (f *File) err(class *Class, op string, format string, args ...any) *Error {
	e := newErr(class, op, nil, NoPeer, format, args...)
	e.Comm = f.name
	return e
}

// ferr makes an error of the private communicator an error of the file:
// the file's name; a revocation says the handle was revoked.
func (f *File) ferr(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	e2 := *e
	e2.Comm = f.name
	if e2.Class == ErrRevoked {
		e2.Detail = "the file handle (File.Revoke)"
	}
	return &e2
}

// handle applies the file's error handler to err and returns err.
func (f *File) handle(err error) error {
	if err == nil {
		return nil
	}
	switch h := f.errh.Load(); {
	case h == nil || h == ErrorsReturn:
	case h == ErrorsAreFatal:
		f.parent.w.fatal(err)
	case isReinitHandler(h):
		return f.parent.reinitHandle(h, err)
	case h.file != nil:
		h.file(f, err)
	default:
		h.fn(f.parent, err)
	}
	return err
}

// SetErrhandler sets the file's error handler (MPI_File_set_errhandler):
// ErrorsReturn, ErrorsAreFatal, one made by FileCreateErrhandler, or a
// communicator handler (NewErrhandler), which is called with the
// communicator the file was opened on. The default is ErrorsReturn. A
// Reinit handler is an ErrArg error, as on windows and communicators other
// than CommWorld (seed 000 1.4 and 1.6 (5): they belong on MPI_COMM_WORLD
// only), and so is a window handler (WinCreateErrhandler), which a file
// cannot call; the file's handler is then unchanged.
func (f *File) SetErrhandler(h *Errhandler) error {
	const op = "MPI_File_set_errhandler"
	if err := f.checkOpen(op); err != nil {
		return err
	}
	switch {
	case h == nil:
		return f.handle(f.err(ErrArg, op, "nil error handler"))
	case isReinitHandler(h):
		return f.handle(f.err(ErrArg, op, "%v may only be set on MPI_COMM_WORLD (seed 000, 1.4)", h))
	case h.win != nil:
		return f.handle(f.err(ErrArg, op, "a window error handler (WinCreateErrhandler) cannot be set on a file: use FileCreateErrhandler"))
	}
	f.errh.Store(h)
	return nil
}

// Errhandler returns the file's error handler (MPI_File_get_errhandler).
func (f *File) Errhandler() *Errhandler { return f.errh.Load() }

// String names the file. It has no MPI counterpart (the file's name as
// MPI_File_open got it).
func (f *File) String() string { return f.name }

// turn orders the collective operations of the handle: a nonblocking one
// runs in a goroutine, and the next collective waits for it to end, so
// every process runs them in call order.
func (f *File) turn() (prev, mine chan struct{}) {
	mine = make(chan struct{})
	f.mu.Lock()
	prev, f.lastColl = f.lastColl, mine
	f.mu.Unlock()
	return prev, mine
}

// inOrder runs fn after the collectives called before it on the handle.
func (f *File) inOrder(op string, fn func() error) error {
	prev, mine := f.turn()
	defer close(mine)
	if prev != nil {
		w := f.c.w
		select {
		case <-prev:
		case <-w.abort:
			return w.abortedErr(op, f.c)
		case <-w.stop:
			return w.abortedErr(op, f.c)
		}
	}
	return fn()
}

// together is the collective step of the handle's collective calls: an
// allgather of vals over the private communicator, which raises
// ErrProcFailed (ULFM) or, while a failure is not recognised,
// ErrRankFailStop (run-through, seed 003 17.12), and otherwise runs over
// the alive processes. It returns each rank's row and whether that rank
// took part (recognised failed processes did not: their rows are zero).
func (f *File) together(op string, vals ...int64) (rows [][]int64, live []bool, err error) {
	k := len(vals) + 1
	all := make([]int64, k*f.c.size)
	run, err := allgatherPrep(f.c, op, append(vals, 1), all)
	if err == nil {
		err = run()
	}
	if err != nil {
		return nil, nil, f.ferr(err)
	}
	rows = make([][]int64, f.c.size)
	live = make([]bool, f.c.size)
	for r := range rows {
		rows[r] = all[k*r : k*r+k-1]
		live[r] = all[k*r+k-1] == 1
	}
	return rows, live, nil
}

// firstLive returns the lowest rank that took part.
func firstLive(live []bool) int {
	for r, ok := range live {
		if ok {
			return r
		}
	}
	return -1
}

// sameEverywhere checks that every live rank passed v in column col.
func (f *File) sameEverywhere(op, what string, rows [][]int64, live []bool, col int, v int64) error {
	for r, row := range rows {
		if live[r] && row[col] != v {
			return f.err(ErrNotSame, op, "%s %d here, %d at rank %d", what, v, row[col], r)
		}
	}
	return nil
}

// errFlag is the second step of a collective whose local part may fail:
// every process learns whether it failed anywhere.
func (f *File) errFlag(op string, local error) error {
	bad := int64(0)
	if local != nil {
		bad = 1
	}
	rows, live, err := f.together(op, bad)
	if err != nil {
		return err
	}
	if local != nil {
		return local
	}
	for r, row := range rows {
		if live[r] && row[0] != 0 {
			return f.err(ErrIO, op, "the operation failed at rank %d", r)
		}
	}
	return nil
}

// Close closes the file at every process (MPI_File_close). It is
// collective. It succeeds only if every failed process of the file was
// acknowledged at every process by GetFailed or recognised by Validate;
// otherwise it raises ErrRankFailStop (= ErrProcFailed) everywhere and the
// file stays open (seed 003 17.12.2): acknowledge and close again. A
// revoked file is closed too, and Close then returns ErrRevoked. With
// ModeDeleteOnClose the file is deleted. Closing twice is an ErrFile
// error.
func (f *File) Close() error {
	const op = "MPI_File_close"
	if err := f.checkOpen(op); err != nil {
		return err
	}
	err := f.inOrder(op, func() error {
		_, err := inTurn(f.c.takeTurn(), op, func() (uint64, error) { return f.c.agreeBits(op, 1) })
		return err
	})
	if err != nil {
		return f.handle(f.ferr(err))
	}
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	var cerr error
	f.sh.Close() // every process removes the side file: whoever is last
	if e := f.fd.Close(); e != nil {
		cerr = fileErr(op, f.name, e)
	}
	if f.amode&ModeDeleteOnClose != 0 {
		if e := os.Remove(f.path); e != nil && !errors.Is(e, os.ErrNotExist) && cerr == nil {
			cerr = fileErr(op, f.name, e)
		}
	}
	revoked := f.c.IsRevoked()
	f.c.Free()
	if cerr != nil {
		return f.handle(cerr)
	}
	if revoked {
		return f.handle(f.err(ErrRevoked, op, "the file handle (File.Revoke); it is closed"))
	}
	return nil
}

// FileDelete deletes the file path (MPI_File_delete). It is local; info is
// ignored. A missing file is an ErrNoSuchFile error.
func FileDelete(path string, info *Info) error {
	const op = "MPI_File_delete"
	if path == "" {
		return newErr(ErrBadFile, op, nil, NoPeer, "empty file name")
	}
	if err := os.Remove(path); err != nil {
		return fileErr(op, "file "+path, err)
	}
	return nil
}

// SetSize sets the size of the file to size bytes, truncating or
// extending it (MPI_File_set_size). It is collective: every process passes
// the same size (else ErrNotSame). Under run-through the handle must be
// collectively active (seed 003 17.12.2).
func (f *File) SetSize(size int64) error {
	return f.resize("MPI_File_set_size", size, false)
}

// Preallocate makes the file at least size bytes long
// (MPI_File_preallocate); a larger file is left as it is. It is
// collective, like SetSize. The new bytes read as zeros (on file systems
// with sparse files they take no space until written).
func (f *File) Preallocate(size int64) error {
	return f.resize("MPI_File_preallocate", size, true)
}

func (f *File) resize(op string, size int64, grow bool) error {
	if err := f.check(op); err != nil {
		return err
	}
	if size < 0 {
		return f.handle(f.err(ErrArg, op, "negative size %d", size))
	}
	if f.amode&ModeRdonly != 0 {
		return f.handle(f.err(ErrReadOnly, op, "file opened MPI_MODE_RDONLY"))
	}
	if f.amode&ModeSequential != 0 && !grow {
		return f.handle(f.err(ErrUnsupportedOperation, op, "file opened MPI_MODE_SEQUENTIAL"))
	}
	return f.handle(f.inOrder(op, func() error {
		rows, live, err := f.together(op, size)
		if err != nil {
			return err
		}
		if err := f.sameEverywhere(op, "size", rows, live, 0, size); err != nil {
			return err
		}
		var lerr error
		if f.c.rank == firstLive(live) {
			st, err := f.fd.Stat()
			switch {
			case err != nil:
				lerr = fileErr(op, f.name, err)
			case !grow || st.Size() < size:
				if err := f.fd.Truncate(size); err != nil {
					lerr = fileErr(op, f.name, err)
				}
			}
		}
		return f.errFlag(op, lerr)
	}))
}

// GetSize returns the size of the file in bytes (MPI_File_get_size). It
// is local.
func (f *File) GetSize() (int64, error) {
	const op = "MPI_File_get_size"
	if err := f.checkOpen(op); err != nil {
		return 0, err
	}
	st, err := f.fd.Stat()
	if err != nil {
		return 0, f.handle(fileErr(op, f.name, err))
	}
	return st.Size(), nil
}

// GetAmode returns the access mode the file was opened with
// (MPI_File_get_amode).
func (f *File) GetAmode() (int, error) {
	if err := f.checkOpen("MPI_File_get_amode"); err != nil {
		return 0, err
	}
	return f.amode, nil
}

// GetGroup returns the group of the processes that opened the file
// (MPI_File_get_group).
func (f *File) GetGroup() (*Group, error) {
	if err := f.checkOpen("MPI_File_get_group"); err != nil {
		return nil, err
	}
	return f.c.Group(), nil
}

// SetInfo sets the file's hints (MPI_File_set_info): cb_nodes and
// cb_buffer_size (see FileOpen); other keys are kept and returned by
// GetInfo. It is collective; under run-through the handle must be
// collectively active (seed 003 17.12.2).
func (f *File) SetInfo(info *Info) error {
	const op = "MPI_File_set_info"
	if err := f.check(op); err != nil {
		return err
	}
	f.mu.Lock()
	nodes, buf := f.cbNodes, f.cbBuf
	f.mu.Unlock()
	nodes, buf, err := fileHints(op, info, nodes, buf)
	if err != nil {
		err.(*Error).Comm = f.name
		return f.handle(err)
	}
	return f.handle(f.inOrder(op, func() error {
		if _, _, err := f.together(op, int64(nodes)); err != nil {
			return err
		}
		f.mu.Lock()
		f.cbNodes, f.cbBuf = nodes, buf
		if info != nil {
			if f.hints == nil {
				f.hints = NewInfo()
			}
			for _, k := range info.Keys() {
				v, _ := info.Get(k)
				f.hints.Set(k, v)
			}
		}
		f.mu.Unlock()
		return nil
	}))
}

// GetInfo returns a copy of the file's hints (MPI_File_get_info),
// including the values in use of cb_nodes (when set) and cb_buffer_size.
func (f *File) GetInfo() (*Info, error) {
	if err := f.checkOpen("MPI_File_get_info"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.hints.clone()
	if i == nil {
		i = NewInfo()
	}
	if f.cbNodes > 0 {
		i.Set("cb_nodes", strconv.Itoa(f.cbNodes))
	}
	i.Set("cb_buffer_size", strconv.FormatInt(f.cbBuf, 10))
	return i, nil
}

// SetAtomicity sets the atomic mode of the file (MPI_File_set_atomicity).
// In atomic mode each data access of a process is atomic with respect to
// those of the others (one access is seen whole or not at all where they
// overlap): ftmpi takes a lock on the file around each access (flock;
// shared for reads). It is collective: every process passes the same flag
// (else ErrNotSame); under run-through the handle must be collectively
// active (seed 003 17.12.5).
func (f *File) SetAtomicity(flag bool) error {
	const op = "MPI_File_set_atomicity"
	if err := f.check(op); err != nil {
		return err
	}
	v := int64(0)
	if flag {
		v = 1
	}
	return f.handle(f.inOrder(op, func() error {
		rows, live, err := f.together(op, v)
		if err != nil {
			return err
		}
		if err := f.sameEverywhere(op, "atomicity", rows, live, 0, v); err != nil {
			return err
		}
		f.mu.Lock()
		f.atomic = flag
		f.mu.Unlock()
		return nil
	}))
}

// GetAtomicity reports whether the file is in atomic mode
// (MPI_File_get_atomicity).
func (f *File) GetAtomicity() (bool, error) {
	if err := f.checkOpen("MPI_File_get_atomicity"); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.atomic, nil
}

// Sync transfers the data this process wrote to the storage device
// (MPI_File_sync: fsync), and returns once every process did: a write
// before a Sync at one process is visible to a read after the Sync at
// another. It is collective; under run-through the handle must be
// collectively active (seed 003 17.12.5), and recognised failed processes
// do not take part.
func (f *File) Sync() error {
	const op = "MPI_File_sync"
	if err := f.check(op); err != nil {
		return err
	}
	return f.handle(f.inOrder(op, func() error {
		if _, _, err := f.together(op); err != nil {
			return err
		}
		var lerr error
		if f.amode&ModeRdonly == 0 {
			if err := f.fd.Sync(); err != nil {
				lerr = fileErr(op, f.name, err)
			}
		}
		return f.errFlag(op, lerr)
	}))
}

// Revoke revokes the file handle (MPI_FILE_REVOKE, seed 002 A.3.3): every
// ongoing and later non-local operation on it, at every process, raises
// ErrRevoked. It is local and not collective: the notice spreads by the
// reliable broadcast of Comm.Revoke over the handle's private
// communicator. Close still closes the file.
func (f *File) Revoke() error {
	const op = "MPI_File_revoke"
	if err := f.checkOpen(op); err != nil {
		return err
	}
	return f.c.Revoke()
}

// IsRevoked reports whether the file handle was revoked. It has no MPI
// counterpart (the analogue of MPIX_Comm_is_revoked for files).
func (f *File) IsRevoked() bool { return f != nil && f.c.IsRevoked() }

// GetFailed returns the group of the file's processes known failed here,
// in the order their failure became known, and acknowledges them
// (MPI_FILE_GET_FAILED, as MPI_WIN_GET_FAILED for windows: seed 002 5.2.3
// considered and left out this function; ftmpi has it because a file's
// group is that of its communicator). It is local. Close succeeds once
// every process acknowledged every failure.
func (f *File) GetFailed() (*Group, error) {
	const op = "MPI_File_get_failed"
	if err := f.checkOpen(op); err != nil {
		return nil, err
	}
	failed := f.c.failedMembers()
	f.c.FailureAck()
	return newGroup(failed, f.c.w.rank), nil
}

// GroupFailed returns the group of the file's processes known failed
// here, in rank order (MPI_File_get_group_failed, seed 003 17.4.3). It is
// local and does not acknowledge them.
func (f *File) GroupFailed() (*Group, error) {
	const op = "MPI_File_get_group_failed"
	if err := f.checkOpen(op); err != nil {
		return nil, err
	}
	var ranks []int
	for _, p := range f.c.failedMembers() {
		ranks = append(ranks, f.c.rankOfProc(p))
	}
	slices.Sort(ranks)
	return groupOfRanks(f.c.memberWorldRanks(), ranks, f.c.w.rank), nil
}

// CollectivesEnabled reports whether the handle is collectively active:
// every failure of its processes known here was recognised by Validate
// (MPI_File_collectives_enabled, seed 003 17.12.1). It is local; like the
// other chapter-17 calls it makes the handle follow the run-through model.
func (f *File) CollectivesEnabled() (bool, error) {
	if err := f.checkOpen("MPI_File_collectives_enabled"); err != nil {
		return false, err
	}
	return f.c.CollectivesEnabled()
}

// Validate recognises the file's failed processes collectively and
// re-activates its collective operations (MPI_File_validate, seed 003
// 17.12.1): every live process gets the same group of failed processes,
// or every one gets an error. It must be called by all live processes,
// with no collective operation of the handle in progress. Afterwards the
// collective operations run over the alive processes. It runs
// Comm.Validate's agreement on the handle's private communicator.
func (f *File) Validate() (*Group, error) {
	const op = "MPI_File_validate"
	if err := f.check(op); err != nil {
		return nil, err
	}
	var g *Group
	err := f.inOrder(op, func() error {
		var err error
		g, err = f.c.Validate()
		return err
	})
	if err != nil {
		return nil, f.handle(f.ferr(err))
	}
	return g, nil
}

// Ivalidate starts a nonblocking Validate (MPI_File_ivalidate, seed 003
// 17.12.1: MPI_IFILE_VALIDATE); the request's Wait returns the group of
// recognised failed processes. Its errors are returned, not given to an
// error handler.
func (f *File) Ivalidate() (*RequestOf[*Group], error) {
	const op = "MPI_File_ivalidate"
	if err := f.check(op); err != nil {
		return nil, err
	}
	c := f.c
	c.runThrough()
	prev, mine := f.turn()
	t := c.takeTurn()
	return startCollOf(c, op, func() (*Group, error) {
		defer close(mine)
		if prev != nil {
			<-prev
		}
		g, err := inTurn(t, op, func() (*Group, error) { return c.validate(op) })
		if err != nil {
			return nil, f.ferr(err)
		}
		return g, nil
	}), nil
}
