//go:build !race

package spare

const raceEnabled = false
