// Package liba is the first library of examples/libcompose: linear algebra
// on a block-distributed integer vector (dot product, sum, gather), exact
// modulo ftlib.Modulus. It works on its own duplicate of the communicator
// the application gives it, never on CommWorld.
package liba

import (
	"github.com/ftmpi/ftmpi/examples/libcompose/ftlib"
	"github.com/ftmpi/ftmpi/mpi"
)

// Name is the library's name in status objects and failures.
const Name = "libA"

// Lib is one instance of the library.
type Lib struct {
	c *mpi.Comm
	n int // global vector length
}

// New initialises the library on a duplicate of parent (collective over
// parent) for vectors of n elements.
func New(parent *mpi.Comm, n int) (*Lib, error) {
	c, err := parent.Dup()
	if err != nil {
		return nil, err
	}
	c.SetErrhandler(mpi.ErrorsReturn)
	return &Lib{c: c, n: n}, nil
}

// NewStatus returns a status object for this library.
func NewStatus() *ftlib.Status { return &ftlib.Status{Lib: Name} }

// Revoke revokes the library's communicator (the application calls it when
// another library failed, so that no member stays blocked in this one).
func (l *Lib) Revoke() { l.c.Revoke() }

// Free releases the library's communicator after a failure-free run.
func (l *Lib) Free() error { return l.c.Free() }

// Dot returns sum x[i]*y[i] mod Modulus over the whole distributed vectors
// (x and y are this rank's blocks).
func (l *Lib) Dot(st *ftlib.Status, step int, x, y []int64) (int64, error) {
	st.Begin("Dot", step)
	var local int64
	for i := range x {
		local = (local + x[i]*y[i]) % ftlib.Modulus
	}
	return l.reduce(st, local)
}

// Sum returns sum x[i] mod Modulus over the whole distributed vector.
func (l *Lib) Sum(st *ftlib.Status, step int, x []int64) (int64, error) {
	st.Begin("Sum", step)
	var local int64
	for _, v := range x {
		local = (local + v) % ftlib.Modulus
	}
	return l.reduce(st, local)
}

func (l *Lib) reduce(st *ftlib.Status, local int64) (int64, error) {
	out := []int64{0}
	if err := mpi.Allreduce(l.c, []int64{local}, out, mpi.Sum); err != nil {
		return 0, st.Fail(l.c, err)
	}
	st.Done = true
	return out[0] % ftlib.Modulus, nil
}

// Gather returns the whole vector at every rank, from every rank's block.
func (l *Lib) Gather(st *ftlib.Status, step int, x []int64) ([]int64, error) {
	st.Begin("Gather", step)
	size := l.c.Size()
	counts, displs := make([]int, size), make([]int, size)
	for r := range size {
		lo, hi := ftlib.Block(l.n, size, r)
		counts[r], displs[r] = hi-lo, lo
	}
	full := make([]int64, l.n)
	if err := mpi.Allgatherv(l.c, x, full, counts, displs); err != nil {
		return nil, st.Fail(l.c, err)
	}
	st.Done = true
	return full, nil
}
