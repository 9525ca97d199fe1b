package e2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// builds holds the programs that only some tests need, each built once
// (buildOnce), beside the binaries TestMain builds.
var builds struct {
	mu sync.Mutex
	m  map[string]*onceBuild
}

type onceBuild struct {
	once sync.Once
	path string
	err  error
}

// buildOnce builds the Go package pkg as program name, once per test
// binary, next to TestMain's binaries (in TestMain's directory, which it
// removes at the end), and returns its path. name may hold a
// subdirectory ("coll/jacobi"); a build error fails t.
func buildOnce(t *testing.T, name, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.m == nil {
		builds.m = map[string]*onceBuild{}
	}
	b := builds.m[name]
	if b == nil {
		b = &onceBuild{path: filepath.Join(filepath.Dir(bin["ftmpirun"]), filepath.FromSlash(name))}
		builds.m[name] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		if b.err = os.MkdirAll(filepath.Dir(b.path), 0o755); b.err == nil {
			b.err = jobtest.Build([]string{b.path}, []string{pkg})
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
