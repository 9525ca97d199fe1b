package mpi

// Internals exposed to the external tests of Shrink.

// AgreementsBegun returns how many agreements this process began on c.
func AgreementsBegun(c *Comm) uint64 { return c.w.ftOf(c).d.AgreeState().Begun }

// SetShrinkHookForTest sets the hook called at Shrink's steps (nil: none);
// set it only while no job runs.
func SetShrinkHookForTest(h func(w *World, step string)) { shrinkHook = h }

// CtxTakeForTest takes pairs in w's table (false: one was taken) and
// CtxReleaseForTest returns them, to shape what a rank has free.
func CtxTakeForTest(w *World, pairs []int) bool { return w.ctxTable().claim(pairs) }

// CtxReleaseForTest returns pairs taken by CtxTakeForTest.
func CtxReleaseForTest(w *World, pairs []int) { w.ctxTable().release(pairs...) }
