//go:build race

package jobtest

func init() { RaceEnabled = true }
