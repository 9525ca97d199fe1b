package coll

// Crowded reports whether some host runs more of the n members than it has
// cores: host(i) names the host of member i and its cores as the launcher
// counted them (0: not told; such a host never counts as crowded). Callers
// pass data every member holds alike, so every member gets the same answer
// and picks the same algorithms.
func Crowded(n int, host func(i int) (name string, cores int)) bool {
	if n < 2 {
		return false
	}
	on := make(map[string]int)
	for i := range n {
		h, cores := host(i)
		on[h]++
		if cores > 0 && on[h] > cores {
			return true
		}
	}
	return false
}

// Allgather collects len(send) bytes of every member into recv, member i's
// block at i*len(send); send may be this member's block of recv.
func (s *Set) Allgather(send, recv []byte) error {
	counts, displs := equalBlocks(s.N, len(send))
	return s.Allgatherv(send, recv, counts, displs)
}

// GatherLinear reports whether Gather and Scatter of n bytes per member
// over p members go straight to and from the root (else over a binomial
// tree, which needs the blocks contiguous in member order).
func GatherLinear(p, n int) bool { return p*n > gatherShort }

// AlltoallPairwise reports whether Alltoall(v) with largest block n bytes
// exchanges pairwise (else all requests are posted at once).
func AlltoallPairwise(n int) bool { return n >= alltoallLong }
