package mpi

// One-sided accumulates on datatypes of several basic types that are
// moved whole: MPI_REPLACE and MPI_NO_OP on the pair types (MPI_DOUBLE_INT,
// MPI_FLOAT_INT, MPI_LONG_INT, MPI_SHORT_INT, ...) and datatypes built from
// them. MPI allows an accumulate datatype made of one predefined datatype,
// and the pair types are predefined; they take the layout path of
// cbind_win.go (one request with the target typemap, applied whole under
// the window's mutex), as MPI_MINLOC and MPI_MAXLOC on them already did.
// Here: which accumulates those are, and the check that the origin and
// result data hold the same basic types in the same order as the target
// data (the type signatures match, MPI-4.1 12.3.4).

import "github.com/ftmpi/ftmpi/internal/p2p"

// copyLayout reports whether an accumulate of o over target datatype td
// moves whole elements of several basic types.
func copyLayout(o *Op, td *Datatype) bool {
	return o != nil && (o.kind == opReplace || o.kind == opNoOp) && td.size > 0 && td.sig.runs != nil
}

// maxStream bounds the basic-type runs sameTypes compares (a larger
// accumulate is compared by its byte count only).
const maxStream = 1 << 16

// typeStream appends the basic types of count elements of d to out, as
// runs (code, count) with adjacent runs of one code merged; false if
// there are more than maxStream runs.
func typeStream(out []run, d *Datatype, count int) ([]run, bool) {
	add := func(code p2p.DType, n int) bool {
		if k := len(out) - 1; k >= 0 && out[k].code == code {
			out[k].count += n
			return true
		}
		out = append(out, run{code: code, count: n})
		return len(out) <= maxStream
	}
	for range count {
		if d.sig.runs == nil {
			if !add(d.sig.dt, d.nbasic) {
				return out, false
			}
			continue
		}
		for _, r := range d.sig.runs {
			if !add(r.code, r.count) {
				return out, false
			}
		}
	}
	return out, true
}

// sameTypes checks that count elements of d hold the basic types of
// tcount elements of td, in order (zero counts match anything).
func (w *Win) sameTypes(op string, td *Datatype, tcount int, d *Datatype, count int) error {
	if d == nil || count == 0 || tcount == 0 || d == td && count == tcount {
		return nil
	}
	if count*d.size != tcount*td.size {
		return w.handle(w.err(ErrType, op, NoPeer, "%d elements of %s are %d bytes, the target's %d elements of %s %d", count, d.name, count*d.size, tcount, td.name, tcount*td.size))
	}
	a, okA := typeStream(nil, d, count)
	b, okB := typeStream(nil, td, tcount)
	if !okA || !okB {
		return nil
	}
	if len(a) != len(b) {
		return w.handle(w.err(ErrType, op, NoPeer, "datatype %s does not hold the basic types of the target datatype %s", d.name, td.name))
	}
	for i := range a {
		if a[i].code != b[i].code || a[i].count != b[i].count {
			return w.handle(w.err(ErrType, op, NoPeer, "datatype %s holds %s where the target datatype %s holds %s",
				d.name, p2p.DTypeName(a[i].code), td.name, p2p.DTypeName(b[i].code)))
		}
	}
	return nil
}
