package slurmtest

import (
	"sync"
	"testing"
	"time"
)

// ForTest brings up a cluster of nodes nodes for test t, or skips t with
// the reason it cannot be made here (not root, a package missing). It is
// torn down when t ends; a teardown that leaves something behind fails t.
func ForTest(t testing.TB, nodes int) *Cluster {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipped: %v (CI runs as root with the packages installed)", err)
	}
	c, err := Up(nodes, "", Options{})
	if err != nil {
		t.Fatalf("slurm cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("slurm cluster teardown: %v", err)
		}
	})
	return c
}

// shared is the one cluster of a test binary (Shared, CloseShared).
var shared struct {
	mu    sync.Mutex
	c     *Cluster
	nodes int
	err   error
}

// Shared returns the test binary's one cluster of nodes nodes, started by
// the first test that asks (or skips t when a cluster cannot be made
// here). The cluster is Reset when t ends; the package's TestMain must
// call CloseShared after m.Run.
func Shared(t testing.TB, nodes int) *Cluster {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipped: %v (CI runs as root with the packages installed)", err)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil && shared.err == nil {
		shared.c, shared.err = Up(nodes, "", Options{})
		shared.nodes = nodes
	}
	if shared.err != nil {
		t.Fatalf("slurm cluster: %v", shared.err)
	}
	if shared.nodes != nodes {
		t.Fatalf("slurm cluster: %d nodes asked, the shared one has %d", nodes, shared.nodes)
	}
	c := shared.c
	t.Cleanup(func() {
		if err := c.Reset(60 * time.Second); err != nil {
			t.Errorf("slurm cluster reset: %v", err)
		}
	})
	return c
}

// CloseShared tears the shared cluster down, if one was started.
func CloseShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil {
		return nil
	}
	err := shared.c.Close()
	shared.c = nil
	return err
}
