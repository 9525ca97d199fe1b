//go:build race

package launch

func init() { raceEnabled = true }
