package mpi

// IagreeBits starts a nonblocking AgreeBits (MPIX_Comm_iagree's integer
// form, as the C binding has it; MPI_Comm_iagree in MPI-6): the request's
// Wait returns the bitwise AND of the contributions, with the error
// AgreeBits would return (the value is valid with ErrProcFailed too).
func (c *Comm) IagreeBits(flags uint64) (*RequestOf[uint64], error) {
	const op = "MPI_Comm_iagree"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	t := c.takeTurn()
	return startCollOf(c, op, func() (uint64, error) {
		return inTurn(t, op, func() (uint64, error) { return c.agreeBits(op, flags) })
	}), nil
}
