package mpi

// Internals exposed to the external tests of communicator management.

// CtxOf returns c's point-to-point context id.
func CtxOf(c *Comm) uint32 { return c.ctx }

// CtxPairsInUse returns how many context-id pairs w's process holds
// (CommWorld and CommSelf included).
func CtxPairsInUse(w *World) int { return w.ctxTable().inUse() }
