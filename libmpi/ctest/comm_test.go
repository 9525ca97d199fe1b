package ctest

import (
	"strings"
	"testing"
)

// wantLines fails t unless every line of want is in the job's stdout.
func wantLines(t *testing.T, stdout string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q", w)
		}
	}
}

// TestCommGroups: group constructors, compare and translate_ranks; split
// by colour and key with exact ranks; create, create_group, dup, compare,
// names, free, split_type; an intercommunicator and its merge.
func TestCommGroups(t *testing.T) {
	bin := Compile(t, "testdata/comm_groups.c")
	r := runC(t, "4", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	wantLines(t, r.Stdout,
		"result: groups sizes 2 3 2 4 1 2 empty 0 rexcl 2\n",
		"result: groups cmp ident similar unequal translate 3 1 -2 to31 -1 0\n",
		"result: rank 0 split 1/2 null-ok 1 rev 3 cmp ident congruent similar unequal cg -1 names 'MPI_COMM_WORLD' '' 'my dup' 6 freed 1 node 4 inter 1 0 remote 2 2 merged 1/4 peer -1 idup 4 1 fromgroup 0/2 1 2\n",
		"result: rank 1 split 1/2 null-ok 1 rev 2 cmp ident congruent similar unequal cg 2 names 'MPI_COMM_WORLD' '' 'my dup' 6 freed 1 node 4 inter 1 0 remote 2 2 merged 3/4 peer -1 idup 4 1 fromgroup 0/2 1 2\n",
		"result: rank 2 split 0/2 null-ok 1 rev 1 cmp ident congruent similar unequal cg -1 names 'MPI_COMM_WORLD' '' 'my dup' 6 freed 1 node 4 inter 1 0 remote 2 2 merged 0/4 peer 3 idup 4 1 fromgroup 1/2 1 2\n",
		"result: rank 3 split 0/2 null-ok 1 rev 0 cmp ident congruent similar unequal cg 2 names 'MPI_COMM_WORLD' '' 'my dup' 6 freed 1 node 4 inter 1 0 remote 2 2 merged 2/4 peer 2 idup 4 1 fromgroup 1/2 1 2\n",
	)
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestCommTopo: a periodic x non-periodic 2x2 grid with a halo exchange,
// Cart_sub, a graph, distributed graphs (adjacent and weighted, and given
// by one rank with MPI_UNWEIGHTED) and their neighbour queries.
func TestCommTopo(t *testing.T) {
	bin := Compile(t, "testdata/comm_topo.c")
	r := runC(t, "4", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	wantLines(t, r.Stdout,
		"result: rank 0 cart 0 coords 0,0 dims 2,2 per 1,0 back 0 nd 2 halo 2 2 -9 1 shift1 -2 1 row 0/2 graph 4 6 3 nb 1 ring 1 1 1 3:3 1:0 ring2 1 1 0 3 1 got 3 topo 1 1 1 1 1 dims3 4,3,2 map 0\n",
		"result: rank 1 cart 1 coords 0,1 dims 2,2 per 1,0 back 1 nd 2 halo 3 3 0 -9 shift1 0 -2 row 1/2 graph 4 6 1 nb 0 ring 1 1 1 0:0 2:1 ring2 1 1 0 0 2 got 0 topo 1 1 1 1 1 dims3 4,3,2 map 1\n",
		"result: rank 2 cart 2 coords 1,0 dims 2,2 per 1,0 back 2 nd 2 halo 0 0 -9 3 shift1 -2 3 row 0/2 graph 4 6 1 nb 0 ring 1 1 1 1:1 3:2 ring2 1 1 0 1 3 got 1 topo 1 1 1 1 1 dims3 4,3,2 map 2\n",
		"result: rank 3 cart 3 coords 1,1 dims 2,2 per 1,0 back 3 nd 2 halo 1 1 2 -9 shift1 2 -2 row 1/2 graph 4 6 1 nb 0 ring 1 1 1 2:2 0:3 ring2 1 1 0 2 0 got 2 topo 1 1 1 1 1 dims3 4,3,2 map 3\n",
	)
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestCommAttrInfo: attribute copy callbacks run on dup and delete
// callbacks on replacement, delete_attr and free (counted, with the
// values); MPI_COMM_DUP_FN, the null callbacks and the MPI-1 names; the
// predefined attributes; an info round trip and communicator hints.
func TestCommAttrInfo(t *testing.T) {
	bin := Compile(t, "testdata/comm_attr.c")
	r := runC(t, "2", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, rank := range []string{"0", "1"} {
		wantLines(t, r.Stdout,
			"result: rank "+rank+" attr copy 1 extra 77 dup 6 9 -1 del 1:6 2:20 gone 1 invalid 1 free 3:5 mpi1 31 31 predef 1 1 1 0 0 0 1 1 ro 1\n",
			"result: rank "+rank+" info nkeys 3 nth beta len 6/1 get uno del 2/0 small thr:7 dup 2 comm three3:1 null 1 env 2:1\n",
		)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestCommErrors: bad handles and arguments of this area's calls return
// the right error class under MPI_ERRORS_RETURN.
func TestCommErrors(t *testing.T) {
	bin := Compile(t, "testdata/comm_errors.c")
	r := runC(t, "2", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	wantLines(t, r.Stdout, "result: rank 0 errors wrong 0\n", "result: rank 1 errors wrong 0\n")
	if strings.Count(r.Stdout, " ok\n") != 2*25 {
		t.Errorf("%d checks passed, want %d", strings.Count(r.Stdout, " ok\n"), 2*25)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestInfoEnvAndFailedDup: MPI_INFO_ENV's values do not depend on when it
// is asked (MPICH info/infocreateenv); a Dup whose copy callback fails
// returns its class and MPI_COMM_NULL / MPI_DATATYPE_NULL (attr/attrerr*).
func TestInfoEnvAndFailedDup(t *testing.T) {
	bin := Compile(t, "testdata/comm_dupfail.c")
	r := runC(t, "2", nil, bin, "some", "args")
	for _, want := range []string{"result: rank 0 errors 0\n", "result: rank 1 errors 0\n"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Fatalf("want %q; exit %d\nstdout:\n%s\nstderr:\n%s", want, r.Code, r.Stdout, r.Stderr)
		}
	}
}
