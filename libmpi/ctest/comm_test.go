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
		"result: rank 0 split 1/2 null-ok 1 rev 3 cmp ident congruent similar unequal cg -1 names 'MPI_COMM_WORLD' '' 'my dup' 6 freed 1 node 4 inter 1 0 remote 2 2 merged 1/4 peer -1\n",
		"result: rank 1 split 1/2 null-ok 1 rev 2 cmp ident congruent similar unequal cg 2 names 'MPI_COMM_WORLD' '' 'my dup' 6 freed 1 node 4 inter 1 0 remote 2 2 merged 3/4 peer -1\n",
		"result: rank 2 split 0/2 null-ok 1 rev 1 cmp ident congruent similar unequal cg -1 names 'MPI_COMM_WORLD' '' 'my dup' 6 freed 1 node 4 inter 1 0 remote 2 2 merged 0/4 peer 3\n",
		"result: rank 3 split 0/2 null-ok 1 rev 0 cmp ident congruent similar unequal cg 2 names 'MPI_COMM_WORLD' '' 'my dup' 6 freed 1 node 4 inter 1 0 remote 2 2 merged 2/4 peer 2\n",
	)
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
