package ctest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// collRun runs a C collective test on np ranks and returns its stdout,
// failing the test on a non-zero exit.
func collRun(t *testing.T, src, np string) string {
	t.Helper()
	bin := Compile(t, src)
	r := runC(t, np, nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

func collWant(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("stdout lacks %q:\n%s", l, out)
		}
	}
}

// TestCollAll: every blocking collective, exact results, in place.
func TestCollAll(t *testing.T) {
	for _, np := range []string{"3", "4"} {
		t.Run("np"+np, func(t *testing.T) {
			out := collRun(t, "testdata/coll_all.c", np)
			var want []string
			for _, n := range []string{"MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Reduce in place", "MPI_Allreduce",
				"MPI_Allreduce in place", "bitwise and logical operations", "MPI_MINLOC/MPI_MAXLOC", "MPI_Gather",
				"MPI_Gather in place", "MPI_Gatherv", "MPI_Gatherv in place", "MPI_Scatter", "MPI_Scatter in place",
				"MPI_Scatterv", "MPI_Allgather", "MPI_Allgather in place", "MPI_Allgatherv", "MPI_Allgatherv in place",
				"MPI_Alltoall", "MPI_Alltoall in place", "MPI_Alltoallv", "MPI_Alltoallw", "MPI_Reduce_scatter",
				"MPI_Reduce_scatter in place", "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan",
				"MPI_Exscan in place", "MPI_Reduce_local", "long double reductions"} {
				want = append(want, "result: "+n+" ok")
			}
			collWant(t, out, append(want, "result: failures 0")...)
		})
	}
}

// TestCollUserOp: a non-commutative C user operation against the
// sequential composition, a commutative one on a long vector.
func TestCollUserOp(t *testing.T) {
	out := collRun(t, "testdata/coll_userop.c", "4")
	collWant(t, out, "result: wrong 0 commutative 0 1 1 called-with-MPI_2INT 1 freed 1")
}

// TestCollNonblocking: eleven nonblocking collectives outstanding at once,
// persistent collectives started twice.
func TestCollNonblocking(t *testing.T) {
	out := collRun(t, "testdata/coll_nb.c", "4")
	collWant(t, out, "result: nonblocking and persistent wrong 0")
}

// TestCollErrors: bad arguments give their MPI error class and a message
// saying what was wrong.
func TestCollErrors(t *testing.T) {
	out := collRun(t, "testdata/coll_err.c", "3")
	for _, c := range []struct {
		what  string
		class int
		msg   string
	}{
		{"bcast-root", 8, "root 3"},
		{"reduce-root", 8, "root -7"},
		{"allreduce-type", 3, "MPI_DATATYPE_NULL"},
		{"allreduce-op", 10, "MPI_OP_NULL"},
		{"allreduce-replace", 10, "MPI_REPLACE"},
		{"allreduce-band-double", 10, "MPI_BAND is not defined on the float64 elements"},
		{"allreduce-count", 2, "negative count -1"},
		{"bcast-in-place", 1, "MPI_IN_PLACE"},
		{"gather-comm", 5, "MPI_COMM_NULL"},
		{"allreduce-long-double", 10, "MPI_BAND is not defined on MPI_LONG_DOUBLE"},
		{"minloc-int", 10, "MPI_MINLOC"},
		{"iallreduce-type", 3, "0x101"},
		{"op-free-predefined", 10, "predefined"},
	} {
		prefix := fmt.Sprintf("result: %s class %d: ", c.what, c.class)
		i := strings.Index(out, prefix)
		if i < 0 {
			t.Errorf("no %q in:\n%s", prefix, out)
			continue
		}
		line, _, _ := strings.Cut(out[i+len(prefix):], "\n")
		if !strings.Contains(line, c.msg) {
			t.Errorf("%s: message %q does not mention %q", c.what, line, c.msg)
		}
	}
	collWant(t, out, "result: after errors rc 0 sum 3 req-null 1")
}

// TestCollDerived: derived datatypes in collectives and a user operation
// on them (needs the datatype constructors of dtype.h).
func TestCollDerived(t *testing.T) {
	h, err := os.ReadFile("../include/ftmpi/dtype.h")
	if err != nil || !strings.Contains(string(h), "MPI_Type_vector(") || !strings.Contains(string(h), "MPI_Type_create_resized(") {
		t.Skip("MPI_Type_vector / MPI_Type_create_resized are not declared in dtype.h yet")
	}
	out := collRun(t, "testdata/coll_dtype.c", "4")
	collWant(t, out, "result: derived wrong 0 user function called 1")
}

// TestCollTopoInter: neighbourhood collectives on a periodic ring and the
// intercommunicator collectives with MPI_ROOT / MPI_PROC_NULL roots.
func TestCollTopoInter(t *testing.T) {
	out := collRun(t, "testdata/coll_topo.c", "4")
	collWant(t, out, "result: neighbourhood wrong 0 intercommunicator wrong 0")
}

// TestCollMismatch: members disagreeing on a collective's count,
// operation, signature or user operation get the class of the difference
// (those whose part completed first may succeed), with a message naming
// both calls, and the communicator stays usable.
func TestCollMismatch(t *testing.T) {
	out := collRun(t, "testdata/coll_mismatch.c", "3")
	for _, c := range []struct {
		what  string
		class string
		must  []int // ranks that always learn of it
	}{
		{"bcast-count", "2", []int{1, 2}},
		{"allreduce-op", "10", []int{0, 1, 2}},
		{"gather-sig", "3", []int{0}},
		{"allreduce-type", "3", []int{0, 1, 2}},
		{"reduce-userop", "10", []int{0}},
	} {
		prefix := "result: " + c.what + " classes "
		i := strings.Index(out, prefix)
		if i < 0 {
			t.Errorf("no %q in:\n%s", prefix, out)
			continue
		}
		line, _, _ := strings.Cut(out[i+len(prefix):], "\n")
		got := strings.Fields(line)
		if len(got) != 3 {
			t.Errorf("%s: classes %q", c.what, line)
			continue
		}
		for r, g := range got {
			if g != "0" && g != c.class {
				t.Errorf("%s: rank %d class %s, want %s (or 0)", c.what, r, g, c.class)
			}
		}
		for _, r := range c.must {
			if got[r] != c.class {
				t.Errorf("%s: rank %d class %s, want %s", c.what, r, got[r], c.class)
			}
		}
	}
	collWant(t, out, "result: usable after 1")
	if !strings.Contains(out, "rank 1 MPI_Allreduce (2 x int32, MPI_MAX)") || !strings.Contains(out, "MPI_Allreduce (2 x int32, MPI_SUM)") {
		t.Errorf("the operation mismatch does not name both calls:\n%s", out)
	}
}

// TestCollBigCount: the large-count (_c) collectives.
func TestCollBigCount(t *testing.T) {
	out := collRun(t, "testdata/coll_bigcount.c", "3")
	collWant(t, out, "result: large-count wrong 0")
}
