// Package libb is the second library of examples/libcompose: a three-point
// smoother on a block-distributed integer vector with zero boundaries,
// exact modulo ftlib.Modulus, which exchanges halo values with the
// neighbouring ranks on its own duplicate of the application's
// communicator.
package libb

import (
	"github.com/ftmpi/ftmpi/examples/libcompose/ftlib"
	"github.com/ftmpi/ftmpi/mpi"
)

// Name is the library's name in status objects and failures.
const Name = "libB"

// Lib is one instance of the library.
type Lib struct {
	c           *mpi.Comm
	left, right int
}

// New initialises the library on a duplicate of parent (collective over
// parent).
func New(parent *mpi.Comm) (*Lib, error) {
	c, err := parent.Dup()
	if err != nil {
		return nil, err
	}
	c.SetErrhandler(mpi.ErrorsReturn)
	l := &Lib{c: c, left: c.Rank() - 1, right: c.Rank() + 1}
	if l.left < 0 {
		l.left = mpi.ProcNull
	}
	if l.right >= c.Size() {
		l.right = mpi.ProcNull
	}
	return l, nil
}

// NewStatus returns a status object for this library.
func NewStatus() *ftlib.Status { return &ftlib.Status{Lib: Name} }

// Revoke revokes the library's communicator.
func (l *Lib) Revoke() { l.c.Revoke() }

// Free releases the library's communicator after a failure-free run.
func (l *Lib) Free() error { return l.c.Free() }

// Smooth returns, for this rank's block x of the distributed vector v,
// the block of s with s[i] = v[i-1] + 3 v[i] + v[i+1] + 1 (mod Modulus),
// v being 0 outside the vector. Every block must be non-empty.
func (l *Lib) Smooth(st *ftlib.Status, step int, x []int64) ([]int64, error) {
	st.Begin("Smooth", step)
	m := len(x)
	halo := []int64{0, 0} // left, right neighbour values
	if _, err := mpi.Sendrecv(l.c, x[m-1:m], l.right, 0, halo[0:1], l.left, 0); err != nil {
		return nil, st.Fail(l.c, err)
	}
	if _, err := mpi.Sendrecv(l.c, x[0:1], l.left, 1, halo[1:2], l.right, 1); err != nil {
		return nil, st.Fail(l.c, err)
	}
	out := make([]int64, m)
	for i := range x {
		a, b := halo[0], halo[1]
		if i > 0 {
			a = x[i-1]
		}
		if i < m-1 {
			b = x[i+1]
		}
		out[i] = (a + 3*x[i] + b + 1) % ftlib.Modulus
	}
	st.Done = true
	return out, nil
}
