//go:build !race

package growth

const race = false

// Race reports whether the race detector is on (no MPI counterpart): the
// packages' growth tests run smaller sizes then.
const Race = race
