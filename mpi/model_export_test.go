package mpi

// Internals exposed to the tests of the fault-tolerance models.

// ModelName returns the name of c's fault-tolerance model.
func ModelName(c *Comm) string { return c.ftm().name() }

// SwitchToRunThrough switches c to the run-through model (as the
// chapter-17 calls do) and returns the model value, for identity checks.
func SwitchToRunThrough(c *Comm) any { return c.runThrough() }
