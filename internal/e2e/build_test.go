package e2e

import (
	"flag"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// core are the programs most tests run (through bin): TestMain builds
// them whatever -run selects.
var core = map[string]string{
	"ftmpirun":     "../../cmd/ftmpirun",
	"p2pcheck":     "./testdata/p2pcheck",
	"ring":         "../../examples/ring",
	"pingpong":     "../../examples/pingpong",
	"hello":        "../../examples/hello",
	"refinement":   "../../examples/refinement",
	"masterworker": "../../examples/masterworker",
}

// progs are the programs only some tests run (buildOnce), by name: the Go
// package of each.
var progs = map[string]string{
	"bigxfer":       "./testdata/bigxfer",
	"checkmode":     "./testdata/checkmode",
	"ckptfile":      "../../examples/ckptfile",
	"clientserver":  "../../examples/clientserver",
	"cof":           "../../examples/cof",
	"collcheck":     "./testdata/collcheck",
	"counter":       "../../examples/counter",
	"ctxprobecheck": "./testdata/ctxprobecheck",
	"cutcheck":      "./testdata/cutcheck",
	"dpmcheck":      "./testdata/dpmcheck",
	"elemcheck":     "./testdata/elemcheck",
	"endofjob":      "./testdata/endofjob",
	"filecheck":     "./testdata/filecheck",
	"ftmpi-guard":   "../../cmd/ftmpi-guard",
	"ftmpi-trace":   "../../cmd/ftmpi-trace",
	"halo-rma":      "../../examples/halo-rma",
	"hangcheck":     "./testdata/hangcheck",
	"hostilecheck":  "./testdata/hostilecheck",
	"hostilejob":    "./testdata/hostilejob",
	"hostileshm":    "./testdata/hostileshm",
	"initcheck":     "./testdata/initcheck",
	"ioprobe":       "./testdata/ioprobe",
	"jacobi":        "../../examples/jacobi",
	"libcompose":    "../../examples/libcompose",
	"panicfinalize": "./testdata/panicfinalize",
	"particles":     "../../examples/particles",
	"persistcheck":  "./testdata/persistcheck",
	"pi":            "../../examples/pi",
	"reinit-async":  "../../examples/reinit-async",
	"reinit-sync":   "../../examples/reinit-sync",
	"reinitcheck":   "./testdata/reinitcheck",
	"rmacheck":      "./testdata/rmacheck",
	"roguecheck":    "./testdata/roguecheck",
	"rtcheck":       "./testdata/rtcheck",
	"runthrough":    "../../examples/runthrough",
	"shmcheck":      "./testdata/shmcheck",
	"sparewatch":    "./testdata/sparewatch",
	"spawncheck":    "./testdata/spawncheck",
	"topocheck":     "./testdata/topocheck",
	"txn":           "../../examples/txn",
	"values":        "../../examples/values",
}

// binDir holds every program built (TestMain's directory).
var binDir string

// builds holds the programs of progs built so far.
var builds struct {
	mu sync.Mutex
	m  map[string]*onceBuild
}

type onceBuild struct {
	once sync.Once
	path string
	err  error
}

// buildAll builds the core programs into dir, and every program of progs
// too unless -run selects some tests only: one go build links them all in
// parallel, where one go build a program took twice as long (jobtest.Build).
func buildAll(dir string) error {
	binDir = dir
	names := make([]string, 0, len(core)+len(progs))
	for n := range core {
		names = append(names, n)
	}
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() == "" { // flags parsed by TestMain
		for n := range progs {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	outs := make([]string, len(names))
	pkgs := make([]string, len(names))
	for i, n := range names {
		outs[i] = filepath.Join(dir, n)
		if pkgs[i] = core[n]; pkgs[i] == "" {
			pkgs[i] = progs[n]
		}
	}
	if err := jobtest.Build(outs, pkgs); err != nil {
		return err
	}
	for i, n := range names {
		if core[n] != "" {
			bin[n] = outs[i]
			continue
		}
		b := build(n)
		b.once.Do(func() {}) // built
	}
	return nil
}

// build returns name's entry in builds, made on first use.
func build(name string) *onceBuild {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.m == nil {
		builds.m = map[string]*onceBuild{}
	}
	b := builds.m[name]
	if b == nil {
		b = &onceBuild{path: filepath.Join(binDir, name)}
		builds.m[name] = b
	}
	return b
}

// buildOnce returns the path of program name of progs, built by TestMain
// or, when -run selected some tests only, once by the first test that
// asks (next to TestMain's binaries, in its directory, which it removes
// at the end); a build error fails t.
func buildOnce(t *testing.T, name string) string {
	t.Helper()
	pkg, ok := progs[name]
	if !ok {
		t.Fatalf("buildOnce: no program %q in progs (build_test.go)", name)
	}
	b := build(name)
	b.once.Do(func() { b.err = jobtest.Build([]string{b.path}, []string{pkg}) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
