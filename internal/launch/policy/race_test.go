//go:build race

package policy

// The race detector slows the simulator down about 30 times.
const raceEnabled = true
