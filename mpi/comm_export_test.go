package mpi

// Internals exposed to the external tests of communicator management.

// CtxOf returns c's point-to-point context id.
func CtxOf(c *Comm) uint32 { return c.ctx }

// CtxPairsInUse returns how many context-id pairs w's process holds
// (CommWorld and CommSelf included).
func CtxPairsInUse(w *World) int { return w.ctxTable().inUse() }

// CtxRetries returns how many context-id agreements of w's process had to
// start again after a failed claim.
func CtxRetries(w *World) int {
	t := w.ctxTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.retries
}

// CtxLowFirst makes w's first agreement attempts start at pair 0 whatever
// the parent, so that concurrent creations on different parents collide.
func CtxLowFirst(w *World) {
	t := w.ctxTable()
	t.mu.Lock()
	t.lowFirst = true
	t.mu.Unlock()
}
