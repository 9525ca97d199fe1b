package main

/*
#include <stdint.h>
*/
import "C"

import (
	"sync"
)

// Handle kinds: a user handle is kind<<24 | index (index >= 1), far above
// the predefined handles (below 0x1000), so that every handle names its
// kind and a handle of the wrong kind or a stale one is caught.
const (
	kindComm uintptr = iota + 1
	kindGroup
	kindDatatype
	kindOp
	kindRequest
	kindErrhandler
	kindInfo
	kindWin
	kindFile
	kindMessage
	kindKeyval
	kindSession
)

const kindShift = 24

// Predefined handle values of the standard ABI (mpi.h).
const (
	hOpNull   = 0x020
	hCommNull = 0x100
	hWorld    = 0x101
	hSelf     = 0x102

	hGroupNull  = 0x108
	hGroupEmpty = 0x109
	hWinNull    = 0x110
	hFileNull   = 0x118
	hMsgNull    = 0x128
	hMsgNoProc  = 0x129
	hInfoNull   = 0x130
	hInfoEnv    = 0x131

	hErrhNull  = 0x140
	hErrFatal  = 0x141
	hErrReturn = 0x142
	hErrAbort  = 0x143
	hReqNull   = 0x180
	hTypeNull  = 0x200
)

// table maps user handles of one kind to their Go objects. Freed slots are
// reused; a handle is valid from its allocation to its free.
type table[T comparable] struct {
	kind  uintptr
	mu    sync.RWMutex
	objs  []T
	live  []bool
	free  []int
	index map[T]uintptr // object -> handle, for objects that come back from Go
}

func newTable[T comparable](kind uintptr) *table[T] {
	var zero T
	return &table[T]{kind: kind, objs: []T{zero}, live: []bool{false}, index: map[T]uintptr{}}
}

// put returns the handle of o, allocating one unless o has one already.
func (t *table[T]) put(o T) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.index[o]; ok {
		return h
	}
	var i int
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
		t.objs[i], t.live[i] = o, true
	} else {
		i = len(t.objs)
		t.objs = append(t.objs, o)
		t.live = append(t.live, true)
	}
	h := t.kind<<kindShift | uintptr(i)
	t.index[o] = h
	return h
}

// putNew allocates a fresh handle for o even if o has one (requests, whose
// Go objects are not reused, take the fast path without the index).
func (t *table[T]) putNew(o T) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i int
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
		t.objs[i], t.live[i] = o, true
	} else {
		i = len(t.objs)
		t.objs = append(t.objs, o)
		t.live = append(t.live, true)
	}
	return t.kind<<kindShift | uintptr(i)
}

// get returns the object of handle h, if h is a live handle of this table.
func (t *table[T]) get(h uintptr) (T, bool) {
	var zero T
	if h>>kindShift != t.kind {
		return zero, false
	}
	i := int(h & (1<<kindShift - 1))
	t.mu.RLock()
	defer t.mu.RUnlock()
	if i <= 0 || i >= len(t.objs) || !t.live[i] {
		return zero, false
	}
	return t.objs[i], true
}

// del frees handle h.
func (t *table[T]) del(h uintptr) {
	if h>>kindShift != t.kind {
		return
	}
	i := int(h & (1<<kindShift - 1))
	t.mu.Lock()
	defer t.mu.Unlock()
	if i <= 0 || i >= len(t.objs) || !t.live[i] {
		return
	}
	delete(t.index, t.objs[i])
	var zero T
	t.objs[i], t.live[i] = zero, false
	t.free = append(t.free, i)
}

// describe says what is wrong with handle h, which is not a live handle of
// kind want, for messages.
func describe(h, want uintptr) string {
	switch {
	case h>>kindShift == want:
		return "freed, or never allocated"
	case h>>kindShift >= kindComm && h>>kindShift <= kindSession:
		return "a " + kindNames[h>>kindShift] + " handle"
	}
	return "not a handle of this library"
}

var kindNames = map[uintptr]string{
	kindComm: "communicator", kindGroup: "group", kindDatatype: "datatype", kindOp: "operation",
	kindRequest: "request", kindErrhandler: "error handler", kindInfo: "info", kindWin: "window",
	kindFile: "file", kindMessage: "message", kindKeyval: "keyval", kindSession: "session",
}

// kindName names a handle's kind for messages.
func kindName(h uintptr) string {
	if n, ok := kindNames[h>>kindShift]; ok {
		return n
	}
	return "unknown"
}
