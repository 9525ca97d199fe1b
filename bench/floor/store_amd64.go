package main

// storeRelease stores v at p with a plain MOV (store_amd64.s): on amd64 a
// store is not reordered with earlier stores, so it is a release store.
//
//go:noescape
func storeRelease(p *uint64, v uint64)
