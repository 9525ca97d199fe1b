package mpi

// Op is a reduction operation (MPI_Op).
type Op struct {
	name        string
	commutative bool
}

// Name returns the MPI name of the operation.
func (o *Op) Name() string { return o.name }

// Commutative reports whether the operation is commutative (MPI_Op_commutative).
func (o *Op) Commutative() bool { return o.commutative }
