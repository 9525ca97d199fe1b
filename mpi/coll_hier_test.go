package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/mpi"
)

// Hierarchical collectives (coll_hier.go, internal/coll/hier): the ranks
// of Run are told they run on several hosts (mpi.SetHostsForTest, as a
// launcher tells real processes), and FTMPI_COLL_HIER's "always" mode
// (mpi.SetHierForTest) sends every eligible call through the hierarchy.
// Results against a sequential reference for many layouts, roots, sizes
// and in-place forms, the path counted; a member killed before every step
// it takes (leaders and others) ends every survivor's call with
// ErrProcFailed, never a hang or wrong data.

// hierLayouts are host names by rank, one letter a host.
func hierLayouts() []string {
	if jobtest.RaceEnabled {
		return []string{"aab", "abab", "abcabca"}
	}
	return []string{"aab", "aba", "abb", "aabb", "abab", "abba", "aaab", "abcabc", "aabbbc", "abcdab", "aaaaaaab", "abcabca"}
}

func hierVal(r, i int) int64 { return int64((r*7+i*3)%11 + 1) }

func withHier(t *testing.T, mode int32) {
	old := mpi.SetHierForTest(mode)
	t.Cleanup(func() { mpi.SetHierForTest(old) })
}

func setHosts(w *mpi.World, layout string) {
	mpi.SetHostsForTest(w, strings.Split(layout, ""))
}

// checkHier runs every hierarchical call on c at sizes and roots and
// compares with the reference; it returns the number of calls made.
func checkHier(c *mpi.Comm) (int, error) {
	p, me := c.Size(), c.Rank()
	calls := 0
	if err := c.Barrier(); err != nil {
		return 0, fmt.Errorf("barrier: %v", err)
	}
	calls++
	for _, n := range []int{1, 7, 9000} { // 9000 int64s: the long algorithms within and between hosts
		sum := make([]int64, n)
		for i := range n {
			for r := range p {
				sum[i] += hierVal(r, i)
			}
		}
		mine := make([]int64, n)
		for i := range n {
			mine[i] = hierVal(me, i)
		}
		for root := range p {
			buf := make([]int64, n)
			if me == root {
				copy(buf, mine)
			}
			if err := mpi.Bcast(c, buf, root); err != nil {
				return 0, fmt.Errorf("bcast n %d root %d: %v", n, root, err)
			}
			want := make([]int64, n)
			for i := range n {
				want[i] = hierVal(root, i)
			}
			if !slices.Equal(buf, want) {
				return 0, fmt.Errorf("bcast n %d root %d: got %v, want %v", n, root, head(buf), head(want))
			}
			recv := make([]int64, n+1)
			if err := mpi.Reduce(c, mine, recv, mpi.Sum, root); err != nil {
				return 0, fmt.Errorf("reduce n %d root %d: %v", n, root, err)
			}
			if me == root && !slices.Equal(recv[:n], sum) {
				return 0, fmt.Errorf("reduce n %d root %d: got %v, want %v", n, root, head(recv), head(sum))
			}
			inpl := slices.Clone(mine)
			if err := mpi.Reduce(c, inpl, inpl, mpi.Sum, root); err != nil {
				return 0, fmt.Errorf("reduce in place n %d root %d: %v", n, root, err)
			}
			if me == root && !slices.Equal(inpl, sum) {
				return 0, fmt.Errorf("reduce in place n %d root %d: got %v, want %v", n, root, head(inpl), head(sum))
			}
			calls += 3
		}
		recv := make([]int64, n)
		if err := mpi.Allreduce(c, mine, recv, mpi.Sum); err != nil {
			return 0, fmt.Errorf("allreduce n %d: %v", n, err)
		}
		inpl := slices.Clone(mine)
		if err := mpi.Allreduce(c, inpl, inpl, mpi.Sum); err != nil {
			return 0, fmt.Errorf("allreduce in place n %d: %v", n, err)
		}
		if !slices.Equal(recv, sum) || !slices.Equal(inpl, sum) {
			return 0, fmt.Errorf("allreduce n %d: got %v and in place %v, want %v", n, head(recv), head(inpl), head(sum))
		}
		all := make([]int64, p*n)
		if err := mpi.Allgather(c, mine, all); err != nil {
			return 0, fmt.Errorf("allgather n %d: %v", n, err)
		}
		inall := make([]int64, p*n)
		copy(inall[me*n:], mine)
		if err := mpi.Allgather(c, inall[me*n:(me+1)*n], inall); err != nil {
			return 0, fmt.Errorf("allgather in place n %d: %v", n, err)
		}
		for r := range p {
			for i := range n {
				if all[r*n+i] != hierVal(r, i) || inall[r*n+i] != hierVal(r, i) {
					return 0, fmt.Errorf("allgather n %d: rank %d's element %d: %d and in place %d, want %d", n, r, i, all[r*n+i], inall[r*n+i], hierVal(r, i))
				}
			}
		}
		calls += 4
	}
	// Zero counts: nothing to move, every member returns.
	if err := mpi.Allreduce(c, []int64{}, []int64{}, mpi.Sum); err != nil {
		return 0, fmt.Errorf("allreduce of nothing: %v", err)
	}
	if err := mpi.Bcast(c, []int64{}, p-1); err != nil {
		return 0, fmt.Errorf("bcast of nothing: %v", err)
	}
	return calls + 2, nil
}

func TestHierResults(t *testing.T) {
	withHier(t, 1)
	for _, layout := range hierLayouts() {
		t.Run(layout, func(t *testing.T) {
			err := runErr(t, len(layout), func(w *mpi.World, c *mpi.Comm) error {
				setHosts(w, layout)
				calls, err := checkHier(c)
				if err != nil {
					return fmt.Errorf("rank %d: %v", c.Rank(), err)
				}
				if got := mpi.HierCallsForTest(c); got != uint64(calls) {
					return fmt.Errorf("rank %d: %d calls through the hierarchy, want %d", c.Rank(), got, calls)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The hierarchy is not used where it has no steps of both kinds (one
// host; one member per host), for non-commutative reductions (hosts
// combine their members first), nor when FTMPI_COLL_HIER=0; the results
// are those of the flat algorithms.
func TestHierNotChosen(t *testing.T) {
	cases := []struct {
		layout string
		mode   int32
	}{{"aaaa", 1}, {"abcd", 1}, {"aabb", -1}}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/mode%d", tc.layout, tc.mode), func(t *testing.T) {
			withHier(t, tc.mode)
			err := runErr(t, len(tc.layout), func(w *mpi.World, c *mpi.Comm) error {
				setHosts(w, tc.layout)
				if _, err := checkHier(c); err != nil {
					return fmt.Errorf("rank %d: %v", c.Rank(), err)
				}
				if got := mpi.HierCallsForTest(c); got != 0 {
					return fmt.Errorf("rank %d: %d calls through the hierarchy, want 0", c.Rank(), got)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	withHier(t, 1)
	// A non-commutative operation: the flat path, its result the same as on
	// one host.
	cat := mpi.NewOp(func(in, inout []int64) {
		for i := range inout {
			inout[i] = in[i]*10 + inout[i]
		}
	}, false)
	var results [2][4]int64
	for i, layout := range []string{"aaaa", "abab"} {
		err := runErr(t, 4, func(w *mpi.World, c *mpi.Comm) error {
			setHosts(w, layout)
			out := make([]int64, 1)
			if err := mpi.Allreduce(c, []int64{int64(c.Rank() + 1)}, out, cat); err != nil {
				return err
			}
			if n := mpi.HierCallsForTest(c); n != 0 {
				return fmt.Errorf("rank %d: %d hierarchical calls, want 0", c.Rank(), n)
			}
			results[i][c.Rank()] = out[0]
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if results[0] != results[1] || results[0][0] != results[0][3] {
		t.Fatalf("results on one host %v, on two %v", results[0], results[1])
	}
}

// hierCrashCalls are the calls of the crash test, each checking its data
// when it succeeds.
var hierCrashCalls = map[string]func(c *mpi.Comm) error{
	"barrier": func(c *mpi.Comm) error { return c.Barrier() },
	"bcast": func(c *mpi.Comm) error { // root 4: a non-leader of host b
		buf := make([]int64, 3)
		if c.Rank() == 4 {
			buf = []int64{4, 5, 6}
		}
		if err := mpi.Bcast(c, buf, 4); err != nil {
			return err
		}
		if !slices.Equal(buf, []int64{4, 5, 6}) {
			return fmt.Errorf("bcast: got %v", buf)
		}
		return nil
	},
	"reduce": func(c *mpi.Comm) error { // root 3
		out := make([]int64, 1)
		if err := mpi.Reduce(c, []int64{1}, out, mpi.Sum, 3); err != nil {
			return err
		}
		if c.Rank() == 3 && out[0] != int64(c.Size()) {
			return fmt.Errorf("reduce: got %d", out[0])
		}
		return nil
	},
	"allreduce": func(c *mpi.Comm) error {
		out := make([]int64, 1)
		if err := mpi.Allreduce(c, []int64{1}, out, mpi.Sum); err != nil {
			return err
		}
		if out[0] != int64(c.Size()) {
			return fmt.Errorf("allreduce: got %d", out[0])
		}
		return nil
	},
	"allgather": func(c *mpi.Comm) error {
		all := make([]int64, c.Size())
		if err := mpi.Allgather(c, []int64{int64(c.Rank())}, all); err != nil {
			return err
		}
		for r, v := range all {
			if v != int64(r) {
				return fmt.Errorf("allgather: got %v", all)
			}
		}
		return nil
	},
}

// A member killed before each step it takes, a leader (ranks 0, 1) or
// not (rank 3, 4): every survivor's call, or the Barrier after it, fails
// with ErrProcFailed; a call that succeeds has the right data.
func TestHierMemberKilledAtEveryStep(t *testing.T) {
	withHier(t, 1)
	t.Cleanup(func() { mpi.SetHierHookForTest(nil) })
	const layout = "abcbba" // hosts a {0,5}, b {1,3,4}, c {2}
	np := len(layout)
	for _, name := range []string{"barrier", "bcast", "reduce", "allreduce", "allgather"} {
		for _, victim := range []int{0, 1, 3, 4} {
			// The steps the victim takes, from a run without a kill.
			// armed: the victim's own goroutine sets it after the first
			// Barrier (whose steps are not counted) and reads it in the hook.
			var steps []string
			armed := false
			mpi.SetHierHookForTest(func(me int, step string) {
				if me == victim && armed {
					steps = append(steps, step)
				}
			})
			err := runErr(t, np, func(w *mpi.World, c *mpi.Comm) error {
				setHosts(w, layout)
				if err := c.Barrier(); err != nil {
					return err
				}
				if c.Rank() == victim {
					armed = true
				}
				return hierCrashCalls[name](c)
			})
			mpi.SetHierHookForTest(nil)
			if err != nil {
				t.Fatalf("%s without a kill: %v", name, err)
			}
			if len(steps) == 0 {
				t.Fatalf("%s: victim %d took no step", name, victim)
			}
			for k, step := range steps {
				t.Run(fmt.Sprintf("%s/victim%d/%d-%s", name, victim, k, strings.ReplaceAll(step, " ", "-")), func(t *testing.T) {
					var kill func()
					armed, seen := false, 0
					mpi.SetHierHookForTest(func(me int, _ string) {
						if me != victim || !armed {
							return
						}
						seen++
						if seen == k+1 {
							kill() // does not return
						}
					})
					defer mpi.SetHierHookForTest(nil)
					err := runErr(t, np, func(w *mpi.World, c *mpi.Comm) error {
						setHosts(w, layout)
						if c.Rank() == victim {
							kill = w.Kill
						}
						// A survivor still in this Barrier when the victim,
						// out of it, dies fails it: that is the outcome too.
						err := c.Barrier()
						if c.Rank() == victim {
							armed = true
						}
						if err == nil {
							err = hierCrashCalls[name](c)
						}
						if err == nil {
							err = c.Barrier()
						}
						if !errors.Is(err, mpi.ErrProcFailed) {
							return fmt.Errorf("rank %d: %v, want ErrProcFailed", c.Rank(), err)
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}
