//go:build race

package spare

// The race detector slows the simulator down about 30 times.
const raceEnabled = true
