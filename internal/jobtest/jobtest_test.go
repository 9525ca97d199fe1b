package jobtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A test binary killed before its TestMain removed its binaries (go
// test's -timeout, a kill) leaves their directory naming its dead owner:
// the next Bins.Get removes it, and Remove removes its own.
func TestBinsSweepsDirectoriesOfDeadOwners(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(tmp, "ftmpi-bins-left")
	if err := os.MkdirAll(filepath.Join(left, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"owner": fmt.Sprintf("%d 0\n", dead.Process.Pid), "prog": "binary", "sub/prog": "binary"} {
		if err := os.WriteFile(filepath.Join(left, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var b Bins
	if got := b.Get(t, nil, nil); len(got) != 0 {
		t.Fatalf("no binaries asked, got %v", got)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the dead owner's directory is still there: %v", err)
	}
	if filepath.Dir(b.dir) != tmp {
		t.Fatalf("binaries' directory %s, want one in %s", b.dir, tmp)
	}
	b.Remove()
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("left in TMPDIR after Remove: %v", ents)
	}
}
