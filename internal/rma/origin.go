package rma

import (
	"fmt"
	"slices"
)

// The origin side: operations, epochs and their synchronisations.
//
// Put and accumulate are sent one way: a target's server applies the
// requests of one origin in the order they were sent, so the fence
// marker, completion marker, unlock or flush request that the origin's
// synchronisation sends afterwards reaches the server after them, and its
// effect (a fence completing, an unlock or flush reply) says they were
// applied. The operations returning data are a round trip completed before
// the call returns. An operation on the member's own window is applied in
// the call, under the memory lock. A failure of the target is not
// returned by the operation but kept per target and raised (an
// EpochError) by the next synchronisation; for a one-way operation, the
// synchronisation also raises it when the target is known failed by then.
//
// Every wait (a fence's markers, Start's posts, Wait's completes)
// re-examines its condition when a marker arrives and when a failure
// becomes known, and stops waiting for a member known failed.

// Access runs one operation (h: Put, Get, Acc, GetAcc or CAS; Disp and
// Count in elements of the target window) to target inside an access
// epoch: data is what it sends, into receives what it fetches. Its range
// was checked by the caller. It returns an epoch error (CodeSync) or the
// revocation; another failure is kept. It has no MPI counterpart.
func (e *Window) Access(op string, target int, h Header, data, into []byte) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if err := e.inEpoch(target); err != nil {
		return err
	}
	if target == e.rank {
		e.applyLocal(&h, data, into)
		return nil
	}
	b := e.hdr[:]
	h.Encode(b)
	return e.issue(op, target, h.Kind == Put || h.Kind == Acc, b, data, into)
}

// AccessLayout runs a layout request (h.Kind AccLayout) to target: l is
// the target typemap. On this member's own window it calls local under
// the memory lock instead, which reports whether the elements were inside
// the window. It has no MPI counterpart.
func (e *Window) AccessLayout(op string, target int, h Header, l Layout, data, into []byte, local func() bool) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if err := e.inEpoch(target); err != nil {
		return err
	}
	if target == e.rank {
		e.mu.Lock()
		ok := local()
		e.mu.Unlock()
		if !ok {
			return &Error{CodeRange, target, "elements outside the window"}
		}
		return nil
	}
	h.Kind = AccLayout
	var b [HeaderLen]byte
	h.Encode(b[:])
	msg := append(AppendLayout(make([]byte, 0, LayoutLen(l)+len(data)), l), data...)
	return e.issue(op, target, h.Mode == LayoutAcc || h.Mode == LayoutPut, b[:], msg, into)
}

// applyLocal performs an operation on this member's own window as the
// server would.
func (e *Window) applyLocal(h *Header, data, into []byte) {
	lo, hi := int(h.Disp)*e.esize, int(h.Disp+h.Count)*e.esize
	mem := e.mem[lo:hi]
	e.mu.Lock()
	defer e.mu.Unlock()
	switch h.Kind {
	case Put:
		copy(mem, data)
	case Get:
		copy(into, mem)
	case Acc:
		e.apply(h.DT, h.Op, data, mem)
	case GetAcc:
		copy(into, mem)
		e.apply(h.DT, h.Op, data, mem)
	case CAS:
		copy(into, mem)
		if string(mem) == string(data[:hi-lo]) {
			copy(mem, data[hi-lo:])
		}
	}
}

// issue sends header h and data to target: one way (oneWay), or a round
// trip whose reply lands in into. omu held.
func (e *Window) issue(op string, target int, oneWay bool, h, data, into []byte) error {
	if oneWay {
		SetNoReply(h)
		err := e.send(op, target, h, data)
		if err == nil {
			e.sent[target] = true
			return nil
		}
		return e.keepFailure(target, err)
	}
	rep, err := e.rpc(op, target, h, data, len(into))
	if err != nil {
		return e.keepFailure(target, err)
	}
	copy(into, rep)
	return nil
}

// keepFailure returns a revocation, and keeps another error of target's
// for the next synchronisation. omu held.
func (e *Window) keepFailure(target int, err error) error {
	if e.net.IsRevocation(err) {
		return err
	}
	if _, ok := e.failed[target]; !ok {
		e.failed[target] = err
	}
	return nil
}

// send sends a request (header and data) to target's server. omu held.
func (e *Window) send(op string, target int, h, data []byte) error {
	msg := h
	if len(data) > 0 {
		msg = room(&e.sbuf, len(h)+len(data))
		copy(msg, h)
		copy(msg[len(h):], data)
	}
	return e.net.Send(op, target, msg)
}

// rpc sends a request to target's server and waits for its reply of want
// bytes after the status byte. omu held.
func (e *Window) rpc(op string, target int, h, data []byte, want int) ([]byte, error) {
	if err := e.send(op, target, h, data); err != nil {
		return nil, err
	}
	rb := room(&e.scr, 1+want)
	if _, err := e.net.Await(op, target, rb); err != nil {
		return nil, err
	}
	if rb[0] != 0 {
		return nil, &Error{CodeRefused, target, fmt.Sprintf("target refused the request (code %d)", rb[0])}
	}
	return rb[1:], nil
}

// inEpoch checks that an operation to target is inside an access epoch:
// a lock of target (Lock or LockAll), a Start whose group holds it, or
// the fence epoch; it counts the fence epoch's operations. omu held.
func (e *Window) inEpoch(target int) error {
	if _, ok := e.locked[target]; ok {
		return nil
	}
	switch {
	case e.startGrp != nil:
		if slices.Contains(e.startGrp, target) {
			return nil
		}
		return syncErr(target, "target is not in the group of the access epoch (Start)")
	case len(e.locked) > 0:
		return syncErr(target, "target is not locked by this process (Lock it, or LockAll)")
	case e.fenceOpen:
		e.fenceOps++
		return nil
	}
	return syncErr(target, "no access epoch: call Fence (without MPI_MODE_NOSUCCEED), Start with a group holding the target, or Lock it first")
}

// activeOpen is the error of a Lock or LockAll while an active target
// epoch has operations open. omu held.
func (e *Window) activeOpen() error {
	switch {
	case e.startGrp != nil:
		return syncErr(NoPeer, "an access epoch (Start) is open (Complete first)")
	case e.fenceOps > 0:
		return syncErr(NoPeer, "operations of a fence epoch are open (Fence first)")
	}
	return nil
}

// noEpoch is the error of a call that needs no lock, access or exposure
// epoch open. omu held.
func (e *Window) noEpoch() error {
	switch {
	case len(e.locked) > 0:
		return syncErr(NoPeer, "a lock epoch is open (Unlock first)")
	case e.startGrp != nil:
		return syncErr(NoPeer, "an access epoch is open (Complete first)")
	case e.postGrp != nil:
		return syncErr(NoPeer, "an exposure epoch is open (Wait first)")
	}
	return nil
}

// NoEpoch returns the CodeSync error of a call that needs no epoch open
// (MPI_Win_free, MPI_Win_validate), or nil. It has no MPI counterpart.
func (e *Window) NoEpoch() error {
	e.omu.Lock()
	defer e.omu.Unlock()
	return e.noEpoch()
}

// Outside runs f outside any epoch: no epoch may be open, and none opens
// while f runs (MPI_Win_validate). It has no MPI counterpart.
func (e *Window) Outside(f func() error) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if err := e.noEpoch(); err != nil {
		return err
	}
	return f()
}

// takeFailed returns (and forgets) the failure kept for target, or for
// any target if target < 0, as an EpochError. omu held.
func (e *Window) takeFailed(target int) error {
	var first error
	for t, err := range e.failed {
		if target >= 0 && t != target {
			continue
		}
		if first == nil {
			first = err
		}
		delete(e.failed, t)
	}
	if first == nil {
		return nil
	}
	return &EpochError{first}
}

// peekFailed is takeFailed without forgetting the failure. omu held.
func (e *Window) peekFailed(target int) error {
	for t, err := range e.failed {
		if target < 0 || t == target {
			return &EpochError{err}
		}
	}
	return nil
}

// settle ends the one-way operations to the targets that in selects (all
// if in is nil) at a synchronisation that completed them: a target now
// known failed gets a kept failure. omu held.
func (e *Window) settle(in func(t int) bool) {
	for t := range e.sent {
		if in != nil && !in(t) {
			continue
		}
		delete(e.sent, t)
		if _, ok := e.failed[t]; !ok && e.net.Lost(t) {
			e.failed[t] = &Error{CodeFailed, t, "target failed before its operations of the epoch were confirmed"}
		}
	}
}

// flushSent completes the one-way operations to target with a flush
// request (answered after them); a failure is kept. omu held.
func (e *Window) flushSent(op string, target int) {
	if !e.sent[target] {
		return
	}
	delete(e.sent, target)
	var h [HeaderLen]byte
	Header{Kind: Flush}.Encode(h[:])
	if _, err := e.rpc(op, target, h[:], nil, 0); err != nil {
		if _, ok := e.failed[target]; !ok {
			e.failed[target] = err
		}
	}
}

// mark sends a marker of kind to each of ranks' servers; a failed or
// revoked member is seen by the wait that follows.
func (e *Window) mark(op string, kind Kind, ranks []int) {
	for _, t := range ranks {
		h := make([]byte, HeaderLen)
		Header{Kind: kind}.Encode(h)
		e.net.Send(op, t, h)
	}
}

// waitFor waits until ready (called under fmu with a test of the members
// known failed) returns true: it re-evaluates ready when a marker arrives
// and when a failure becomes known, so a wait for a marker of a failed
// process ends. It returns a revocation or an abort. omu held.
func (e *Window) waitFor(op string, ready func(failed func(r int) bool) bool) error {
	var untrack func()
	defer func() {
		if untrack != nil {
			untrack()
		}
	}()
	for {
		sig := e.net.Signal()
		if e.net.Revoked() {
			return &Error{CodeRevoked, NoPeer, "window revoked"}
		}
		e.fbuf = e.net.Failed(e.fbuf[:0])
		failed := func(r int) bool { return slices.Contains(e.fbuf, r) }
		e.fmu.Lock()
		done, ch := ready(failed), e.fch
		e.fmu.Unlock()
		if done {
			return nil
		}
		if untrack == nil {
			untrack = e.net.Track(op)
			if untrack == nil {
				untrack = func() {}
			}
		}
		select {
		case <-ch:
		case <-sig:
		case <-e.served:
			if !e.net.Revoked() {
				return &Error{CodeAborted, NoPeer, "the job ended"}
			}
		case <-e.net.Aborted():
			return &Error{CodeAborted, NoPeer, "the job ended"}
		}
	}
}

// syncAll is the synchronisation of Fence and Free: it sends this
// member's marker of its next fence epoch to every other member's server
// (its own is recorded directly) and waits until every member not known
// failed sent its own. A member's marker follows its one-way operations on
// the same ordered channel and its other operations are complete when
// their calls return, so the marker says that its operations of the epoch
// to this member are applied. It returns a revocation or an abort, and
// missing: the members that failed without sending their marker. omu held.
func (e *Window) syncAll(op string) (missing []int, err error) {
	e.epoch++
	k := e.epoch
	h := e.hdr[:]
	Header{Kind: Fence, Disp: int64(k)}.Encode(h)
	for t := 0; t < e.size; t++ {
		if t == e.rank {
			e.addMark(k, t) // this member's operations to itself are applied in its calls
			continue
		}
		e.net.Send(op, t, h) // a failed or revoked member is seen below
	}
	err = e.waitFor(op, func(failed func(int) bool) bool {
		var done bool
		missing, done = e.mk.FenceDone(k, failed, missing)
		return done
	})
	return missing, err
}

// Fence runs MPI_Win_fence's engine part: the epoch checks (noPrecede:
// MPI_MODE_NOPRECEDE given, noSucceed: MPI_MODE_NOSUCCEED), then the
// barrier of markers (twice: a second round, for a shared window whose
// members load and store each other's parts). It returns the failure kept
// from the epoch's operations (an EpochError), the members that failed
// without sending their marker in either round, and the revocation, the
// abort or an epoch error. It has no MPI counterpart.
func (e *Window) Fence(op string, noPrecede, noSucceed, twice bool) (kept error, missing []int, err error) {
	e.omu.Lock()
	defer e.omu.Unlock()
	if err := e.noEpoch(); err != nil {
		return nil, nil, err
	}
	if noPrecede && e.fenceOps > 0 {
		return nil, nil, syncErr(NoPeer, "MPI_MODE_NOPRECEDE given, but this process issued %d operations since the last fence", e.fenceOps)
	}
	e.fenceOps = 0
	e.fenceOpen = !noSucceed
	kept = e.takeFailed(-1)
	missing, err = e.syncAll(op)
	if err == nil && twice {
		missing, err = e.syncAll(op) // those failed in either round
	}
	e.settle(nil)
	if kept == nil {
		kept = e.takeFailed(-1)
	}
	return kept, missing, err
}

// Free ends the window's engine (MPI_Win_free): no epoch may be open; it
// waits for every live member's operations (a fence's barrier), then
// stops the server. It returns the revocation or the abort met (the
// window is freed anyway), or the epoch error (then nothing is done). It
// has no MPI counterpart.
func (e *Window) Free(op string) error {
	e.omu.Lock()
	if err := e.noEpoch(); err != nil {
		e.omu.Unlock()
		return err
	}
	e.freed = true
	_, err := e.syncAll(op)
	clear(e.sent)
	e.omu.Unlock()
	close(e.stop)
	<-e.served
	return err
}

// Post starts an exposure epoch to the origins ranks (MPI_Win_post): it
// sends them a post marker and does not wait. It has no MPI counterpart.
func (e *Window) Post(op string, ranks []int) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if e.postGrp != nil || len(e.locked) > 0 {
		return syncErr(NoPeer, "an exposure or lock epoch is already open")
	}
	e.postGrp = ranks
	e.mark(op, Post, ranks)
	return nil
}

// Start starts an access epoch to the targets ranks (MPI_Win_start): it
// returns once each posted or is known failed (kept for Complete). It has
// no MPI counterpart.
func (e *Window) Start(op string, ranks []int) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if e.startGrp != nil || len(e.locked) > 0 {
		return syncErr(NoPeer, "an access or lock epoch is already open")
	}
	if e.fenceOps > 0 {
		return syncErr(NoPeer, "operations of a fence epoch are open (Fence first)")
	}
	pending := slices.Clone(ranks)
	err := e.waitFor(op, func(failed func(int) bool) bool {
		pending = slices.DeleteFunc(pending, func(t int) bool {
			if e.mk.TakePost(t) {
				return true
			}
			if failed(t) {
				if _, ok := e.failed[t]; !ok {
					e.failed[t] = &Error{CodeFailed, t, "target failed before posting"}
				}
				return true
			}
			return false
		})
		return len(pending) == 0
	})
	if err != nil {
		return err
	}
	e.startGrp = ranks
	return nil
}

// Complete ends the access epoch begun by Start (MPI_Win_complete): it
// sends the completion markers after the epoch's one-way operations and
// returns the first failure of a target of the epoch. It has no MPI
// counterpart.
func (e *Window) Complete(op string) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if e.startGrp == nil {
		return syncErr(NoPeer, "no access epoch (Start first)")
	}
	ranks := e.startGrp
	e.startGrp = nil
	e.mark(op, Complete, ranks)
	e.settle(func(t int) bool { return slices.Contains(ranks, t) })
	var ferr error
	for _, t := range ranks {
		if err := e.takeFailed(t); err != nil && ferr == nil {
			ferr = err
		}
	}
	if ferr == nil {
		for _, t := range ranks {
			if e.net.Lost(t) {
				ferr = &Error{CodeFailed, t, "target failed during the epoch"}
				break
			}
		}
	}
	return ferr
}

// Wait ends the exposure epoch begun by Post once every origin of it
// completed or is known failed (MPI_Win_wait; block false: MPI_Win_test,
// which reports whether it ended). The origins that failed without
// completing are a CodeFailed error. It has no MPI counterpart.
func (e *Window) Wait(op string, block bool) (bool, error) {
	e.omu.Lock()
	defer e.omu.Unlock()
	if e.postGrp == nil {
		return false, syncErr(NoPeer, "no exposure epoch (Post first)")
	}
	var dead []int
	ready := func(failed func(int) bool) bool {
		var done bool
		dead, done = e.mk.TakeCompletes(e.postGrp, failed, dead)
		return done
	}
	if block {
		if err := e.waitFor(op, ready); err != nil {
			return false, err
		}
	} else {
		if e.net.Revoked() {
			return false, &Error{CodeRevoked, NoPeer, "window revoked"}
		}
		e.fbuf = e.net.Failed(e.fbuf[:0])
		e.fmu.Lock()
		ok := ready(func(r int) bool { return slices.Contains(e.fbuf, r) })
		e.fmu.Unlock()
		if !ok {
			return false, nil
		}
	}
	e.postGrp = nil
	if len(dead) > 0 {
		return true, &Error{CodeFailed, NoPeer, fmt.Sprintf("origins %v failed during the epoch", dead)}
	}
	return true, nil
}

// Lock starts a passive-target epoch to target with a lock of type t
// (MPI_Win_lock): a request answered when the lock is granted, or none if
// noCheck (MPI_MODE_NOCHECK). It has no MPI counterpart.
func (e *Window) Lock(op string, t LockType, target int, noCheck bool) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if _, ok := e.locked[target]; ok {
		return syncErr(target, "target already locked by this process")
	}
	if err := e.activeOpen(); err != nil {
		return err
	}
	if noCheck {
		if e.net.Lost(target) {
			return &Error{CodeFailed, target, "target failed"}
		}
		e.locked[target], e.nocheck[target] = t, true
		return nil
	}
	var h [HeaderLen]byte
	Header{Kind: Lock, Mode: uint8(t)}.Encode(h[:])
	if _, err := e.rpc(op, target, h[:], nil, 0); err != nil {
		return err
	}
	e.locked[target] = t
	return nil
}

// Unlock ends the passive-target epoch to target (MPI_Win_unlock); a
// failure of the target or of an operation of the epoch is returned. It
// has no MPI counterpart.
func (e *Window) Unlock(op string, target int) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if _, ok := e.locked[target]; !ok || e.all {
		return syncErr(target, "target not locked by Lock")
	}
	return e.unlock(op, target)
}

func (e *Window) unlock(op string, target int) error {
	delete(e.locked, target)
	ferr := e.takeFailed(target)
	if e.nocheck[target] {
		delete(e.nocheck, target)
		// No lock to release: a flush completes the operations.
		e.flushSent(op, target)
		if ferr == nil {
			ferr = e.takeFailed(target)
		}
		if ferr == nil && e.net.Lost(target) {
			ferr = &Error{CodeFailed, target, "target failed during the epoch"}
		}
		return ferr
	}
	// The unlock is answered after the epoch's one-way operations.
	delete(e.sent, target)
	var h [HeaderLen]byte
	Header{Kind: Unlock}.Encode(h[:])
	if _, err := e.rpc(op, target, h[:], nil, 0); err != nil {
		return err
	}
	return ferr
}

// LockAll starts a shared passive-target epoch to every member
// (MPI_Win_lock_all); on a failure the locks taken are released. It has
// no MPI counterpart.
func (e *Window) LockAll(op string, noCheck bool) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if len(e.locked) > 0 {
		return syncErr(NoPeer, "a lock epoch is open")
	}
	if err := e.activeOpen(); err != nil {
		return err
	}
	if noCheck {
		for t := 0; t < e.size; t++ {
			e.locked[t], e.nocheck[t] = Shared, true
		}
		e.all = true
		return nil
	}
	var h [HeaderLen]byte
	Header{Kind: Lock, Mode: uint8(Shared)}.Encode(h[:])
	for t := 0; t < e.size; t++ {
		if _, err := e.rpc(op, t, h[:], nil, 0); err != nil {
			for u := range e.locked {
				e.unlock(op, u)
			}
			return err
		}
		e.locked[t] = Shared
	}
	e.all = true
	return nil
}

// UnlockAll ends a LockAll epoch (MPI_Win_unlock_all), releasing every
// live member's lock before returning the first failure. It has no MPI
// counterpart.
func (e *Window) UnlockAll(op string) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if !e.all {
		return syncErr(NoPeer, "no LockAll epoch is open")
	}
	e.all = false
	var first error
	for t := 0; t < e.size; t++ {
		if err := e.unlock(op, t); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Flush completes the operations to target at origin and target
// (MPI_Win_flush). It has no MPI counterpart.
func (e *Window) Flush(op string, target int) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if _, ok := e.locked[target]; !ok {
		return syncErr(target, "no passive-target epoch to this target")
	}
	e.flushSent(op, target)
	return e.takeFailed(target)
}

// FlushAll is Flush to every locked target (MPI_Win_flush_all). It has no
// MPI counterpart.
func (e *Window) FlushAll(op string) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if len(e.locked) == 0 {
		return syncErr(NoPeer, "no passive-target epoch")
	}
	for t := range e.sent {
		if _, ok := e.locked[t]; ok {
			e.flushSent(op, t)
		}
	}
	return e.takeFailed(-1)
}

// FlushLocal reports the failure kept for target (any target if target <
// 0) without forgetting it (MPI_Win_flush_local, _all): the operations
// are complete at the origin when their calls return. It has no MPI
// counterpart.
func (e *Window) FlushLocal(target int) error {
	e.omu.Lock()
	defer e.omu.Unlock()
	if target >= 0 {
		if _, ok := e.locked[target]; !ok {
			return syncErr(target, "no passive-target epoch to this target")
		}
	} else if len(e.locked) == 0 {
		return syncErr(NoPeer, "no passive-target epoch")
	}
	return e.peekFailed(target)
}
