package coll

import (
	"math/bits"
	"sync"
	"unsafe"
)

// Temporary buffers, 8-byte aligned (any element type may be viewed in
// them), pooled by power-of-two size class. The pools hold scratch memory
// only, never state of a job.
const maxTmpShift = 40

var tmpPools [maxTmpShift + 1]sync.Pool

type tmpBuf struct {
	words []uint64
}

// getTmp returns an n-byte buffer and its handle for putTmp.
func getTmp(n int) ([]byte, *tmpBuf) {
	if n <= 0 {
		return nil, nil
	}
	shift := bits.Len(uint(n+7)/8 - 1)
	t, _ := tmpPools[shift].Get().(*tmpBuf)
	if t == nil {
		t = &tmpBuf{words: make([]uint64, 1<<shift)}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&t.words[0])), n), t
}

func putTmp(t *tmpBuf) {
	if t == nil {
		return
	}
	tmpPools[bits.Len(uint(len(t.words))-1)].Put(t)
}

// overlap reports whether two byte ranges share memory.
func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}
