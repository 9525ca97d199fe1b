package mpi

// SetCrowdedForTest forces the crowded-host algorithm choice (1: trees,
// -1: symmetric algorithms, 0: automatic) and returns a restore function.
func SetCrowdedForTest(mode int32) func() {
	old := crowdedMode.Swap(mode)
	return func() { crowdedMode.Store(old) }
}
