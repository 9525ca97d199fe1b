package p2p

import (
	"math/bits"
	"sync"
)

// Size-classed pools for unexpected-message buffers (powers of two up to
// the eager limit), so the eager path does not allocate per message.
const maxPooledShift = 20

var bufPools [maxPooledShift + 1]sync.Pool

func getBuf(n int) ([]byte, *[]byte) {
	if n <= 0 {
		return nil, nil
	}
	shift := bits.Len(uint(n - 1))
	if shift > maxPooledShift {
		return make([]byte, n), nil
	}
	if p, ok := bufPools[shift].Get().(*[]byte); ok {
		return (*p)[:n], p
	}
	b := make([]byte, 1<<shift)
	return b[:n], &b
}

func putBuf(p *[]byte) {
	if p == nil {
		return
	}
	shift := bits.Len(uint(cap(*p) - 1))
	*p = (*p)[:cap(*p)]
	bufPools[shift].Put(p)
}

// GetBuf returns a pooled buffer of n bytes and its handle for PutBuf
// (nil: not pooled). Package mpi packs derived-datatype messages into it.
func GetBuf(n int) ([]byte, *[]byte) { return getBuf(n) }

// PutBuf returns a buffer of GetBuf to its pool.
func PutBuf(p *[]byte) { putBuf(p) }
