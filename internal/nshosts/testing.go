package nshosts

import (
	"testing"
)

// ForTest brings up n hosts for test t, or skips t with the reason they
// cannot be made here (not root, a tool missing). They are torn down when
// t ends; a teardown that leaves something behind fails t.
func ForTest(t testing.TB, n int) *Hosts {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipped: %v (CI runs as root with openssh-server and nftables installed)", err)
	}
	h, err := Up(n, "")
	if err != nil {
		t.Fatalf("namespace hosts: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("namespace hosts teardown: %v", err)
		}
	})
	return h
}
