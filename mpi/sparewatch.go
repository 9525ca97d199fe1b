package mpi

// The waiting spares are watched like the ranks: they are in the heartbeat
// ring (internal/ft/detector) with them, every process of the start set
// that is in this epoch, each observing its predecessor. A spare that dies
// or stops while it waits is suspected by its observer within the
// detector's timeout and declared failed like a rank (under ftmpirun the
// launcher confirms it; without a head the observer enforces it), and the
// notice reaches every process: World.Spares shrinks, and a repair never
// waits on it, nor does the headless Finalize fence (finalize.go). A spare
// watches its neighbours in turn, so it also learns the failures of the
// survivors that may hold it (its machine orphans it when all are lost).

// heartbeatRing returns the processes of this World's heartbeat ring: the
// ranks of its epoch (CommWorld's members; for a spare, which is in no
// CommWorld, starters: the epoch's ranks as process ids) and the spares
// of the pool that are in this epoch.
func (w *World) heartbeatRing(starters []int) []int {
	var ring []int
	if w.spares.isSpare {
		ring = append(ring, starters...)
	} else {
		ring = append(ring, w.world.memberWorldRanks()...)
	}
	for _, p := range w.rt.Spares.Pool() {
		if w.net != nil {
			if !w.net.Known(p) {
				continue // not in this Reinit epoch: the launcher watches it
			}
		}
		ring = append(ring, p)
	}
	return ring
}
