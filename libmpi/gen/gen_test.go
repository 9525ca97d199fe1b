package main

import "testing"

// TestGeneratedUpToDate fails when zbind.c or pmpi.h were not regenerated
// after a header or a Go export changed (go run ./libmpi/gen).
func TestGeneratedUpToDate(t *testing.T) {
	if err := run("..", true); err != nil {
		t.Fatal(err)
	}
}
