//go:build race

package fence

// The race detector slows the simulator down many times: fewer seeds.
const raceEnabled = true
