package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// halves splits c into world ranks [0, cut) and [cut, n) and joins them
// with IntercommCreate (leaders: local rank lead of each half).
func halves(c *mpi.Comm, cut, lead, tag int) (local, inter *mpi.Comm, inA bool, err error) {
	inA = c.Rank() < cut
	color := 1
	if inA {
		color = 0
	}
	local, err = c.Split(color, c.Rank())
	if err != nil {
		return nil, nil, inA, err
	}
	remoteLeader := cut + lead // world rank of the other half's leader
	if !inA {
		remoteLeader = lead
	}
	inter, err = mpi.IntercommCreate(local, lead, c, remoteLeader, tag)
	return local, inter, inA, err
}

func span(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func TestIntercommCreateP2PAndMerge(t *testing.T) {
	const n, cut = 7, 3 // groups of 3 and 4
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, cut, 1, 99)
		if err != nil {
			return err
		}
		me := c.Rank()
		mine, other := span(0, cut), span(cut, n)
		if !inA {
			mine, other = other, mine
		}
		if !ic.IsInter() || local.IsInter() || ic.Size() != len(mine) || ic.RemoteSize() != len(other) || ic.Rank() != local.Rank() {
			return fmt.Errorf("intercomm: inter %v size %d remote %d rank %d", ic.IsInter(), ic.Size(), ic.RemoteSize(), ic.Rank())
		}
		if !slices.Equal(ic.Group().WorldRanks(), mine) || !slices.Equal(ic.RemoteGroup().WorldRanks(), other) || ic.RemoteGroup().Rank() != mpi.Undefined {
			return fmt.Errorf("groups %v / %v", ic.Group().WorldRanks(), ic.RemoteGroup().WorldRanks())
		}
		if local.RemoteGroup() != nil || local.RemoteSize() != 0 {
			return fmt.Errorf("intracommunicator has a remote group")
		}

		// Point-to-point across: every process sends its world rank to every
		// remote rank; receives with AnySource see remote ranks as sources.
		var reqs []*mpi.Request
		for r := 0; r < ic.RemoteSize(); r++ {
			q, err := mpi.Isend(ic, []int{me}, r, 3)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		got := make([]bool, ic.RemoteSize())
		for range ic.RemoteSize() {
			st, err := ic.Probe(mpi.AnySource, 3)
			if err != nil {
				return err
			}
			buf := []int{-1}
			st2, err := mpi.Recv(ic, buf, st.Source, 3)
			if err != nil {
				return err
			}
			if st2.Source != st.Source || buf[0] != other[st.Source] || got[st.Source] {
				return fmt.Errorf("received %d from remote rank %d (status %+v)", buf[0], st.Source, st2)
			}
			got[st.Source] = true
		}
		if _, err := mpi.Waitall(reqs); err != nil {
			return err
		}
		// Ranks refer to the remote group.
		if err := mpi.Send(ic, []int{1}, ic.RemoteSize(), 0); !errors.Is(err, mpi.ErrRank) {
			return fmt.Errorf("send to remote rank %d: %v", ic.RemoteSize(), err)
		}
		if _, err := mpi.Irecv(ic, []int{1}, -7, 0); !errors.Is(err, mpi.ErrRank) {
			return fmt.Errorf("irecv from -7: %v", err)
		}
		// Sendrecv pairs local rank i with remote rank i (when it exists).
		if r := ic.Rank(); r < ic.RemoteSize() && r < ic.Size() {
			buf := []int{0}
			if _, err := mpi.Sendrecv(ic, []int{me * 10}, r, 4, buf, r, 4); err != nil || buf[0] != other[r]*10 {
				return fmt.Errorf("sendrecv: %d %v", buf[0], err)
			}
		}

		// Merge, both orders and equal flags.
		for _, tc := range []struct {
			highA, highB bool
			aFirst       bool
		}{{false, true, true}, {true, false, false}, {false, false, true}, {true, true, true}} {
			high := tc.highA
			if !inA {
				high = tc.highB
			}
			m, err := ic.Merge(high)
			if err != nil {
				return err
			}
			want := append(span(0, cut), span(cut, n)...)
			if !tc.aFirst {
				want = append(span(cut, n), span(0, cut)...)
			}
			if m.IsInter() || m.Size() != n || !slices.Equal(m.Group().WorldRanks(), want) || m.Rank() != slices.Index(want, me) {
				return fmt.Errorf("merge %+v: members %v rank %d", tc, m.Group().WorldRanks(), m.Rank())
			}
			if err := ringCheck(m, 0); err != nil {
				return err
			}
			sum := []int{0}
			if err := mpi.Allreduce(m, []int{me}, sum, mpi.Sum); err != nil || sum[0] != n*(n-1)/2 {
				return fmt.Errorf("allreduce on merged: %d %v", sum[0], err)
			}
			if err := m.Free(); err != nil {
				return err
			}
		}
		if err := ic.Free(); err != nil {
			return err
		}
		if err := local.Free(); err != nil {
			return err
		}
		if n := mpi.CtxPairsInUse(w); n != 2 {
			return fmt.Errorf("%d pairs in use after freeing", n)
		}
		return nil
	})
}

func TestIntercommCollectives(t *testing.T) {
	for _, sizes := range [][2]int{{1, 1}, {3, 4}, {5, 2}} {
		t.Run(fmt.Sprintf("%dx%d", sizes[0], sizes[1]), func(t *testing.T) { testInterColl(t, sizes[0], sizes[1]) })
	}
}

func testInterColl(t *testing.T, na, nb int) {
	n := na + nb
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, na, 0, 5)
		if err != nil {
			return err
		}
		defer local.Free()
		me, r := c.Rank(), ic.Rank()
		for round, x := range []*mpi.Comm{ic, nil} {
			if x == nil { // second round on a dup: same results, own context
				if x, err = ic.Dup(); err != nil {
					return err
				}
				if !x.IsInter() || mpi.CompareComms(ic, x) != mpi.Congruent || x.RemoteSize() != ic.RemoteSize() {
					return fmt.Errorf("inter dup: compare %v", mpi.CompareComms(ic, x))
				}
			}
			if err := x.Barrier(); err != nil {
				return fmt.Errorf("round %d barrier: %w", round, err)
			}
			// Bcast from a root of A (its last rank), then from B's rank 0.
			for _, rootInA := range []bool{true, false} {
				rootLocal := na - 1
				if !rootInA {
					rootLocal = 0
				}
				buf := make([]float64, 1000)
				root := rootLocal
				switch {
				case inA == rootInA && r == rootLocal:
					root = mpi.Root
					for i := range buf {
						buf[i] = float64(i + me)
					}
				case inA == rootInA:
					root = mpi.ProcNull
				}
				if err := mpi.Bcast(x, buf, root); err != nil {
					return fmt.Errorf("round %d bcast: %w", round, err)
				}
				if inA != rootInA {
					rootWorld := rootLocal
					if !rootInA {
						rootWorld = na
					}
					for i, v := range buf {
						if v != float64(i+rootWorld) {
							return fmt.Errorf("bcast from root in A=%v: buf[%d] = %v", rootInA, i, v)
						}
					}
				}
			}
			// Allreduce: each group gets the sum over the OTHER group.
			send := []int64{int64(me), 1, int64(me * me)}
			recv := make([]int64, 3)
			if err := mpi.Allreduce(x, send, recv, mpi.Sum); err != nil {
				return fmt.Errorf("round %d allreduce: %w", round, err)
			}
			lo, hi := na, n
			if !inA {
				lo, hi = 0, na
			}
			var want [3]int64
			for p := lo; p < hi; p++ {
				want[0] += int64(p)
				want[1]++
				want[2] += int64(p * p)
			}
			if !slices.Equal(recv, want[:]) {
				return fmt.Errorf("allreduce: %v want %v", recv, want)
			}
			// Allgather: A sends 2 elements each, B 3; each gets the other's.
			k, rk := 2, 3
			if !inA {
				k, rk = 3, 2
			}
			mine := make([]int32, k)
			for i := range mine {
				mine[i] = int32(me*10 + i)
			}
			all := make([]int32, rk*ic.RemoteSize())
			if err := mpi.Allgather(x, mine, all); err != nil {
				return fmt.Errorf("round %d allgather: %w", round, err)
			}
			for j := 0; j < ic.RemoteSize(); j++ {
				for i := 0; i < rk; i++ {
					if all[j*rk+i] != int32((lo+j)*10+i) {
						return fmt.Errorf("allgather: %v", all)
					}
				}
			}
			if round == 1 {
				if err := x.Free(); err != nil {
					return err
				}
				if err := x.Barrier(); !errors.Is(err, mpi.ErrComm) {
					return fmt.Errorf("barrier on freed intercomm: %v", err)
				}
			}
		}
		return ic.Free()
	})
}

func TestIntercommErrors(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		inA := c.Rank() < 2
		color := 0
		if !inA {
			color = 1
		}
		local, err := c.Split(color, 0)
		if err != nil {
			return err
		}
		defer local.Free()
		// Local leader out of range: every process of the group fails alike.
		if _, err := mpi.IntercommCreate(local, 2, c, 0, 1); !errors.Is(err, mpi.ErrRank) || !errContains(err, "local leader 2") {
			return fmt.Errorf("bad local leader: %v", err)
		}
		// Remote leader out of range (both leaders pass a bad one): the
		// leader's error reaches its whole group.
		_, err = mpi.IntercommCreate(local, 0, c, 9, 1)
		if c.Rank()%2 == 0 && (!errors.Is(err, mpi.ErrRank) || !errContains(err, "remote leader 9")) {
			return fmt.Errorf("bad remote leader at a leader: %v", err)
		}
		if c.Rank()%2 == 1 && err == nil {
			return fmt.Errorf("bad remote leader: no error at a non-leader")
		}
		if _, err := mpi.IntercommCreate(local, 0, c, 0, -3); !errors.Is(err, mpi.ErrTag) {
			return fmt.Errorf("negative tag: %v", err)
		}
		if _, err := local.Merge(false); !errors.Is(err, mpi.ErrComm) {
			return fmt.Errorf("merge on an intracommunicator: %v", err)
		}
		remoteLeader := 2
		if !inA {
			remoteLeader = 0
		}
		ic, err := mpi.IntercommCreate(local, 0, c, remoteLeader, 1)
		if err != nil {
			return err
		}
		defer ic.Free()
		if err := mpi.Bcast(ic, []int{0}, 5); !errors.Is(err, mpi.ErrRoot) {
			return fmt.Errorf("bcast with root 5: %v", err)
		}
		if nc, err := ic.Split(0, 0); err != nil || !nc.IsInter() { // supported since intercomm_split.go
			return fmt.Errorf("split of an intercomm: %v", err)
		} else if err := nc.Free(); err != nil {
			return err
		}
		if err := mpi.Scan(ic, []int{1}, []int{0}, mpi.Sum); !errors.Is(err, mpi.ErrComm) { // Reduce is defined since intercoll.go
			return fmt.Errorf("scan on an intercomm: %v", err)
		}
		return ic.Barrier()
	})
}

func TestIntercommNonblockingOneAtATime(t *testing.T) {
	run(t, 5, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, 2, 0, 8)
		if err != nil {
			return err
		}
		defer local.Free()
		defer ic.Free()
		q, err := ic.Ibarrier()
		if err != nil {
			return err
		}
		if _, err := q.Wait(); err != nil {
			return err
		}
		recv := []int{0}
		q, err = mpi.Iallreduce(ic, []int{1}, recv, mpi.Sum)
		if err != nil {
			return err
		}
		if _, err := q.Wait(); err != nil {
			return err
		}
		if want := map[bool]int{true: 3, false: 2}[inA]; recv[0] != want {
			return fmt.Errorf("iallreduce: %d, want %d", recv[0], want)
		}
		return nil
	})
}

// Several nonblocking intercommunicator collectives outstanding at once
// take their sequence numbers in call order, so they never mix messages.
func TestIntercommNonblockingOverlapping(t *testing.T) {
	run(t, 5, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, 2, 0, 8)
		if err != nil {
			return err
		}
		defer local.Free()
		defer ic.Free()
		var reqs []*mpi.Request
		sums := make([][]int, 6)
		for i := range sums {
			sums[i] = []int{0}
			q, err := mpi.Iallreduce(ic, []int{i + 1}, sums[i], mpi.Sum)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		for i := len(reqs) - 1; i >= 0; i-- { // wait in reverse order
			if _, err := reqs[i].Wait(); err != nil {
				return err
			}
		}
		for i, s := range sums {
			remote := map[bool]int{true: 3, false: 2}[inA]
			if s[0] != remote*(i+1) {
				return fmt.Errorf("iallreduce %d: %d, want %d", i, s[0], remote*(i+1))
			}
		}
		return nil
	})
}
