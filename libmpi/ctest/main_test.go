package ctest

import (
	"os"
	"testing"
)

// TestMain removes the work directory (compiled programs, ftmpirun) after
// the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}
