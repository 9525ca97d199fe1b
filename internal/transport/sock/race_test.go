//go:build race

package sock

func init() { raceEnabled = true }
