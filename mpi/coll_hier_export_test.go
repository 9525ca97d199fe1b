package mpi

import "github.com/ftmpi/ftmpi/internal/boot"

// SetHostsForTest tells w that process id i runs on hosts[i] (as the
// launcher tells a real process); call it at every rank before the first
// collective of a communicator.
func SetHostsForTest(w *World, hosts []string) {
	eps := make([]boot.Endpoint, len(hosts))
	for i, h := range hosts {
		eps[i] = boot.Endpoint{Rank: i, Host: h}
	}
	w.rt.Hosts.Add(eps)
}

// SetHierForTest sets FTMPI_COLL_HIER's mode (-1 never, 1 always, 0
// measured) and returns the previous one.
func SetHierForTest(mode int32) int32 { return hierMode.Swap(mode) }

// SetHierHookForTest sets the hook called before each hierarchical step.
func SetHierHookForTest(h func(me int, step string)) { hierHook = h }

// HierCallsForTest is the number of c's calls made through the hierarchy
// here.
func HierCallsForTest(c *Comm) uint64 {
	if p := c.hierLayout(); p != nil {
		return p.Calls()
	}
	return 0
}
