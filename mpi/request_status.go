package mpi

// GetStatus reports whether the operation has completed, with its status,
// without waiting (MPI_Request_get_status). Unlike MPI_Test in C, ftmpi's
// Test does not free the request either (a completed Request stays
// complete and keeps its status), so GetStatus answers as Test does and
// the request can still be waited on or tested: Wait after GetStatus
// returned true returns the same status. A wildcard receive that a failure
// leaves pending raises the model's error, as for Test. A persistent
// request stays active (GetStatus does not complete it for Start).
func (r *Request) GetStatus() (Status, bool, error) {
	const op = "MPI_Request_get_status"
	if err := r.usable(op); err != nil {
		return emptyStatus(), false, err
	}
	if r.inactive() { // an inactive persistent request: MPI's empty status, flag true
		return emptyStatus(), true, nil
	}
	if r.done {
		return r.st, true, r.err
	}
	if !r.pr.Done() {
		if err := r.wildCheck(op); err != nil {
			return emptyStatus(), false, r.c.handle(err)
		}
		if !r.pr.Done() {
			return emptyStatus(), false, nil
		}
	}
	r.collect()
	return r.st, true, r.c.handle(r.err)
}
