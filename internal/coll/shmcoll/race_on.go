//go:build race

package shmcoll

import (
	"runtime"
	"unsafe"
)

// raceSync is the race detector's stand-in for the segment's ordering:
// the detector does not see the atomics on the mapped segment, so ranks
// that are goroutines of one process (mpi.Run) would look unordered
// across a collective (a window's memory written before a Barrier and
// read after it). One variable for every group of the process: coarser
// than the segment's real order, never finer.
var raceSync byte

// raceRelease precedes a publication of this member's step.
func raceRelease() { runtime.RaceReleaseMerge(unsafe.Pointer(&raceSync)) }

// raceAcquire follows a wait that saw another member's step.
func raceAcquire() { runtime.RaceAcquire(unsafe.Pointer(&raceSync)) }
