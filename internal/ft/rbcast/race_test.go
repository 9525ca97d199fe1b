//go:build race

package rbcast

const raceOn = true
