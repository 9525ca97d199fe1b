package coll

// Neighbor is the exchange of the neighbourhood collectives: block i of
// recv (rcounts[i] bytes at rdispls[i]) comes from member in[i], block j of
// send (scounts[j] bytes at sdispls[j]) goes to member out[j]; a negative
// member is no neighbour (its receive block is left alone, nothing is sent
// for it). Receives are posted in in's order, sends go out in the order
// order (indices into out; nil: out's order). Between two members,
// messages match in the order they are sent (non-overtaking), so the k-th
// send from a to b lands in b's k-th receive from a: the caller orders
// both lists so that this is the pairing it wants.
func (s *Set) Neighbor(in []int, recv []byte, rcounts, rdispls []int, out []int, send []byte, scounts, sdispls []int, order []int) error {
	n := len(in) + len(out)
	pd := pending{reqs: make([]Req, 0, n), peers: make([]int, 0, n), want: make([]int, 0, n)}
	for i, src := range in {
		if src < 0 {
			continue
		}
		if err := s.postRecv(&pd, src, recv[rdispls[i]:rdispls[i]+rcounts[i]], true); err != nil {
			s.cancelAll(&pd)
			return err
		}
	}
	for k := range out {
		j := k
		if order != nil {
			j = order[k]
		}
		dst := out[j]
		if dst < 0 {
			continue
		}
		if err := s.postSend(&pd, dst, send[sdispls[j]:sdispls[j]+scounts[j]]); err != nil {
			s.cancelAll(&pd)
			return err
		}
	}
	return s.waitAll(&pd)
}
