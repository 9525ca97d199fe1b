//go:build race

package p2p

func init() { raceEnabled = true }
