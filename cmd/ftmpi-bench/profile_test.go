package main

import (
	"os"
	"path/filepath"
	"testing"
)

// -cpuprofile FILE writes rank R's profile to FILE.R, a profile pprof
// reads; a file that cannot be made is a clear error.
func TestCPUProfilePerRank(t *testing.T) {
	base := filepath.Join(t.TempDir(), "cpu")
	stop, err := startCPUProfile(base, 3)
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 1 << 20 {
		x += i * i
	}
	stop()
	b, err := os.ReadFile(base + ".3")
	if err != nil || len(b) == 0 {
		t.Fatalf("profile of rank 3: %d bytes, %v (x %d)", len(b), err, x)
	}
	// A gzipped protocol buffer, as pprof writes it.
	if b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile of rank 3 is not gzip data: % x", b[:2])
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir"), 0); err == nil {
		t.Fatal("no error for a profile path in a missing directory")
	}
}
