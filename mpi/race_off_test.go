//go:build !race

package mpi_test

// raceEnabled is set when the tests run under -race (whose detector allows
// at most 8128 goroutines: two per rank under Run).
const raceEnabled = false
