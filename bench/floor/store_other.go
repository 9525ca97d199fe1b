//go:build !amd64

package main

import "sync/atomic"

// storeRelease is sync/atomic's Store where a plain store is not a release store.
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
