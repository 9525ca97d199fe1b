package mpi

import "github.com/ftmpi/ftmpi/internal/mpiio"

// Collective data access (MPI-4.1 14.4.3-14.4.5) by two-phase I/O (the plan
// and the exchanges are internal/mpiio's Plan and Access; this file holds
// the typed calls and the glue: mpiio.Net over the handle's communicator), as
// ROMIO does it: a few aggregator processes each own a contiguous domain
// of the range of file bytes the call touches; every process sends the
// pieces of its data that fall in a domain to that domain's aggregator,
// which writes them as large contiguous runs (for reads: reads its domain
// in one piece and sends every process its pieces). Many small strided
// pieces of many processes become a few large writes. Aggregators: cb_nodes
// (an info hint) evenly spaced over the participating processes, else the
// first participating process of every host. A domain larger than
// cb_buffer_size (16 MiB by default) is handled in rounds of that size, so
// an aggregator holds at most that much at a time. When the processes'
// file ranges do not interleave (a block per process), every process
// accesses its own range directly, as ROMIO does: aggregation would only
// add copies.
//
// Every exchange is a collective on the handle's private communicator:
// under run-through, recognised failed processes take no part (seed 003
// 17.12.4: they neither read nor write, and are not aggregators); under
// ULFM, a failure during the call raises ErrProcFailed where it cuts an
// exchange (seed 002 A.2.5), and the file contents of the call are then
// undefined. An I/O error at an aggregator is reported at every process
// (a last exchange of error flags).

// makePlan computes the plan from every rank's (lo, hi) row; the same at
// every process. nil: the call touches no byte.
func (f *File) makePlan(rows [][]int64, live []bool) *mpiio.Plan {
	f.mu.Lock()
	nodes, buf := f.cbNodes, f.cbBuf
	f.mu.Unlock()
	return mpiio.NewPlan(rows, live, nodes, buf, func(r int) string { return f.c.w.rt.Hosts.Name(f.c.worldRank(r)) })
}

// fileNet is the handle's private communicator as one collective call
// (op) of internal/mpiio sees it (mpiio.Net).
type fileNet struct {
	f  *File
	op string
}

func (n *fileNet) Alltoall(sc, rc []int64) error {
	run, err := alltoallPrep(n.f.c, n.op, sc, rc)
	if err == nil {
		err = run()
	}
	return n.f.ferr(err)
}

func (n *fileNet) Alltoallv(sbuf []byte, scounts, sdisp []int, rbuf []byte, rcounts, rdisp []int) error {
	run, err := alltoallvPrep(n.f.c, n.op, sbuf, scounts, sdisp, rbuf, rcounts, rdisp)
	if err == nil {
		err = run()
	}
	return n.f.ferr(err)
}

func (n *fileNet) ErrFlag(local error) error { return n.f.errFlag(n.op, n.f.ioErr(n.op, local)) }

// fileCall is one collective call's Access with its Net: one allocation.
type fileCall struct {
	acc mpiio.Access
	net fileNet
}

// access is this process's side of the collective call op.
func (f *File) access(op string) *mpiio.Access {
	c := &fileCall{net: fileNet{f, op}}
	c.acc = mpiio.Access{Net: &c.net, Data: (*fileData)(f), Rank: f.c.rank, Size: f.c.size}
	return &c.acc
}

// collPlan runs the first exchange of a collective access (each rank's
// file range) and returns the plan and this process's extents.
func (f *File) collPlan(op string, v *fileView, l, n int64) (*mpiio.Plan, []mpiio.Ext, error) {
	exts := v.Extents(nil, l, n)
	lo, hi := mpiio.Span(exts)
	rows, live, err := f.together(op, lo, hi)
	if err != nil {
		return nil, nil, err
	}
	return f.makePlan(rows, live), exts, nil
}

// writeAll is the two-phase collective write of b at view bytes l on, in
// the view's data representation (internal/mpiio's Access.Write).
func (f *File) writeAll(op string, v *fileView, l int64, b []byte) error {
	b = v.ToFile(b)
	p, exts, err := f.collPlan(op, v, l, int64(len(b)))
	if err != nil || p == nil {
		return err
	}
	return f.ioErr(op, f.access(op).Write(p, &v.View, l, exts, b))
}

// readAll is the two-phase collective read into b from view bytes l on
// (internal/mpiio's Access.Read); it returns the bytes read before the
// end of the file, converted from the view's data representation.
func (f *File) readAll(op string, v *fileView, l int64, b []byte) (int, error) {
	n := 0
	p, exts, err := f.collPlan(op, v, l, int64(len(b)))
	if err == nil && p != nil {
		n, err = f.access(op).Read(p, &v.View, l, exts, b)
		err = f.ioErr(op, err)
	}
	v.FromFile(b[:n])
	return n, err
}

// WriteAtAll is the collective WriteAt (MPI_File_write_at_all): every
// process of the file calls it (with its own offset and buffer, possibly
// empty); the data go through the aggregators (two-phase I/O, see the top
// of file_coll.go). Under run-through the handle must be collectively
// active (seed 003 17.12.4).
func WriteAtAll[T Elem](f *File, offset int64, buf []T) error {
	const op = "MPI_File_write_at_all"
	b, v, err := ioBufAt(f, op, buf, true, offset)
	if err != nil {
		return err
	}
	return f.handle(f.inOrder(op, func() error { return f.writeAll(op, v, offset*v.Esize, b) }))
}

// ReadAtAll is the collective ReadAt (MPI_File_read_at_all); it returns
// the number of whole elements read.
func ReadAtAll[T Elem](f *File, offset int64, buf []T) (int, error) {
	const op = "MPI_File_read_at_all"
	b, v, err := ioBufAt(f, op, buf, false, offset)
	if err != nil {
		return 0, err
	}
	var n int
	err = f.inOrder(op, func() error {
		var err error
		n, err = f.readAll(op, v, offset*v.Esize, b)
		return err
	})
	return n / esizeOf[T](), f.handle(err)
}

// WriteAll is the collective Write at the individual file pointer
// (MPI_File_write_all): the pointer moves past buf.
func WriteAll[T Elem](f *File, buf []T) error {
	const op = "MPI_File_write_all"
	b, v, err := ioBufSeq(f, op, buf, true)
	if err != nil {
		return err
	}
	return f.handle(f.inOrder(op, func() error { return f.writeAll(op, v, f.take(v, int64(len(b))), b) }))
}

// ReadAll is the collective Read at the individual file pointer
// (MPI_File_read_all): the pointer moves past what was read.
func ReadAll[T Elem](f *File, buf []T) (int, error) {
	const op = "MPI_File_read_all"
	b, v, err := ioBufSeq(f, op, buf, false)
	if err != nil {
		return 0, err
	}
	var n int
	err = f.inOrder(op, func() error {
		var err error
		n, err = f.readAll(op, v, f.take(v, int64(len(b))), b)
		if err == nil {
			f.giveBack(v, int64(len(b)-n)) // stopped at the end of the file
		}
		return err
	})
	return n / esizeOf[T](), f.handle(err)
}

// startOrdered runs a collective of the handle in a goroutine, after the
// collectives called before it (and before those called after it).
func (f *File) startOrdered(op string, fn func() error) *Request {
	prev, mine := f.turn()
	return f.c.startColl(op, func() error {
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
	})
}

// IwriteAtAll starts a WriteAtAll (MPI_File_iwrite_at_all); buf must not
// change until the request completes. Under run-through, a handle
// collectively inactive raises ErrRankFailStop at the request's
// completion, not here (seed 003 17.12.4).
func IwriteAtAll[T Elem](f *File, offset int64, buf []T) (*Request, error) {
	const op = "MPI_File_iwrite_at_all"
	b, v, err := ioBufAt(f, op, buf, true, offset)
	if err != nil {
		return nil, err
	}
	return f.startOrdered(op, func() error { return f.writeAll(op, v, offset*v.Esize, b) }), nil
}

// IreadAtAll starts a ReadAtAll (MPI_File_iread_at_all); the request's
// Wait returns the number of whole elements read.
func IreadAtAll[T Elem](f *File, offset int64, buf []T) (*RequestOf[int], error) {
	const op = "MPI_File_iread_at_all"
	b, v, err := ioBufAt(f, op, buf, false, offset)
	if err != nil {
		return nil, err
	}
	r := &RequestOf[int]{}
	r.Request = f.startOrdered(op, func() error {
		n, err := f.readAll(op, v, offset*v.Esize, b)
		r.val = n / esizeOf[T]()
		return err
	})
	return r, nil
}

// IwriteAll starts a WriteAll (MPI_File_iwrite_all): the individual file
// pointer moves past buf at once.
func IwriteAll[T Elem](f *File, buf []T) (*Request, error) {
	const op = "MPI_File_iwrite_all"
	b, v, err := ioBufSeq(f, op, buf, true)
	if err != nil {
		return nil, err
	}
	at := f.take(v, int64(len(b)))
	return f.startOrdered(op, func() error { return f.writeAll(op, v, at, b) }), nil
}

// IreadAll starts a ReadAll (MPI_File_iread_all): the individual file
// pointer moves past len(buf) elements at once; the request's Wait returns
// the number of whole elements read.
func IreadAll[T Elem](f *File, buf []T) (*RequestOf[int], error) {
	const op = "MPI_File_iread_all"
	b, v, err := ioBufSeq(f, op, buf, false)
	if err != nil {
		return nil, err
	}
	at := f.take(v, int64(len(b)))
	r := &RequestOf[int]{}
	r.Request = f.startOrdered(op, func() error {
		n, err := f.readAll(op, v, at, b)
		r.val = n / esizeOf[T]()
		return err
	})
	return r, nil
}

// splitBegin records the split collective started on f (one at a time
// per handle, MPI-4.1 14.4.5).
func (f *File) splitBegin(op string, start func() (*RequestOf[int], error)) error {
	f.mu.Lock()
	busy := f.split != nil
	f.mu.Unlock()
	if busy {
		return f.handle(f.err(ErrOther, op, "a split collective is already active on the file (%s)", f.splitOp))
	}
	r, err := start()
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.split, f.splitOp = r, op
	f.mu.Unlock()
	return nil
}

// splitEnd completes the split collective begun by begin.
func (f *File) splitEnd(op, begin string) (int, error) {
	if err := f.checkOpen(op); err != nil {
		return 0, err
	}
	f.mu.Lock()
	r, bop := f.split, f.splitOp
	if r != nil && bop == begin {
		f.split, f.splitOp = nil, ""
	}
	f.mu.Unlock()
	if r == nil || bop != begin {
		return 0, f.handle(f.err(ErrOther, op, "no matching %s is active (active: %q)", begin, bop))
	}
	n, err := r.Wait()
	return n, f.handle(f.ferr(err))
}

func asCount(r *Request, err error) (*RequestOf[int], error) {
	if err != nil {
		return nil, err
	}
	return &RequestOf[int]{Request: r}, nil
}

// WriteAtAllBegin begins a split collective WriteAtAll
// (MPI_File_write_at_all_begin); WriteAtAllEnd completes it. buf must not
// change in between. Under run-through, a handle collectively inactive is
// reported by the end call, not the begin call (seed 003 17.12.4).
func WriteAtAllBegin[T Elem](f *File, offset int64, buf []T) error {
	const op = "MPI_File_write_at_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return asCount(IwriteAtAll(f, offset, buf)) })
}

// WriteAtAllEnd completes the split collective begun by WriteAtAllBegin
// (MPI_File_write_at_all_end).
func (f *File) WriteAtAllEnd() error {
	_, err := f.splitEnd("MPI_File_write_at_all_end", "MPI_File_write_at_all_begin")
	return err
}

// ReadAtAllBegin begins a split collective ReadAtAll
// (MPI_File_read_at_all_begin); ReadAtAllEnd completes it and returns the
// number of whole elements read.
func ReadAtAllBegin[T Elem](f *File, offset int64, buf []T) error {
	const op = "MPI_File_read_at_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return IreadAtAll(f, offset, buf) })
}

// ReadAtAllEnd completes the split collective begun by ReadAtAllBegin
// (MPI_File_read_at_all_end).
func (f *File) ReadAtAllEnd() (int, error) {
	return f.splitEnd("MPI_File_read_at_all_end", "MPI_File_read_at_all_begin")
}

// WriteAllBegin begins a split collective WriteAll
// (MPI_File_write_all_begin); WriteAllEnd completes it.
func WriteAllBegin[T Elem](f *File, buf []T) error {
	const op = "MPI_File_write_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return asCount(IwriteAll(f, buf)) })
}

// WriteAllEnd completes the split collective begun by WriteAllBegin
// (MPI_File_write_all_end).
func (f *File) WriteAllEnd() error {
	_, err := f.splitEnd("MPI_File_write_all_end", "MPI_File_write_all_begin")
	return err
}

// ReadAllBegin begins a split collective ReadAll
// (MPI_File_read_all_begin); ReadAllEnd completes it.
func ReadAllBegin[T Elem](f *File, buf []T) error {
	const op = "MPI_File_read_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return IreadAll(f, buf) })
}

// ReadAllEnd completes the split collective begun by ReadAllBegin
// (MPI_File_read_all_end) and returns the number of whole elements read.
func (f *File) ReadAllEnd() (int, error) {
	return f.splitEnd("MPI_File_read_all_end", "MPI_File_read_all_begin")
}
