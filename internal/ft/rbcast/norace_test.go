//go:build !race

package rbcast

const raceOn = false
