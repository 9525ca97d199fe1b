package mpi

// ShmSleepersForTest is the number of c's members asleep on its shared
// segment's doorbell (0 without a segment).
func ShmSleepersForTest(c *Comm) int {
	return c.coll.shm.Sleepers()
}
