//go:build race

package growth

// race: built with the race detector, which slows the simulators down
// about ten times; Sizes then stops at 1024.
const race = true

// Race reports whether the race detector is on (no MPI counterpart): the
// packages' growth tests run smaller sizes then.
const Race = race
