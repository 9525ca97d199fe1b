package ctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMPICHFixes holds the bugs of the core bindings that MPICH's test
// suite found (docs/conformance.md), one result line each.
func TestMPICHFixes(t *testing.T) {
	bin := Compile(t, "testdata/mpich_fixes.c")
	r := runC(t, "1", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"result: errstring empty 1 len 0",
		"result: get_status flag 1 empty 1",
		"result: wait empty 1",
		"result: bsend 1 3 5 | 2 4 6 | 1 2 3 detach-same 1 size 1",
		"result: long_double_int size 20 lb 0 extent-ok 1",
		"result: self attrs deleted 3 order 1 0 2 finalized-during 0",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// mpichDirs is the part of MPICH's test/mpi that TestMPICHSuite runs: ft,
// and small directories that take a few seconds each when nothing hangs
// ($FTMPI_MPICH_DIRS overrides it).
const mpichDirs = "ft init errhan group info"

// TestMPICHSuite runs MPICH's own tests (bench/mpich-tests.sh: MPICH's
// runtests, ftmpirun as mpiexec) on mpichDirs when $FTMPI_MPICH_TESTS names
// an unpacked test/mpi of MPICH 4.0.2 (bench/mpich-tests.sh --fetch prints
// one), and fails if a directory passes fewer tests than docs/conformance.md
// records in its summary table.
func TestMPICHSuite(t *testing.T) {
	src := os.Getenv("FTMPI_MPICH_TESTS")
	if src == "" {
		t.Skip("FTMPI_MPICH_TESTS is not set: to run MPICH's test suite, " +
			"export FTMPI_MPICH_TESTS=$(bench/mpich-tests.sh --fetch) (apt-get source mpich; see docs/conformance.md)")
	}
	if _, err := os.Stat(filepath.Join(src, "runtests.in")); err != nil {
		t.Fatalf("FTMPI_MPICH_TESTS=%s is not an unpacked test/mpi of MPICH: %v", src, err)
	}
	if testing.Short() {
		t.Skip("MPICH's test suite takes minutes; not with -short")
	}
	for _, tool := range []string{"bash", "perl", "make", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: MPICH's test suite needs it", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	want, err := conformanceBaseline(filepath.Join(root, "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := mpichDirs
	if d := os.Getenv("FTMPI_MPICH_DIRS"); d != "" {
		dirs = d
	}
	got, res := runMPICH(t, root, dirs)
	var short []string
	for _, d := range strings.Fields(dirs) {
		g, ok := got[d]
		if !ok {
			t.Errorf("%s: no result", d)
			continue
		}
		w, ok := want[d]
		if !ok {
			t.Logf("%s: %d passed (docs/conformance.md records no count)", d, g.passed)
			continue
		}
		if g.passed < w.passed {
			failed, _ := os.ReadFile(filepath.Join(res, d+".tests"))
			t.Logf("%s: %d passed, docs/conformance.md records %d; run again once (a test's timing under load); the tests:\n%s", d, g.passed, w.passed, failed)
			short = append(short, d)
		}
	}
	if len(short) == 0 {
		return
	}
	again, res := runMPICH(t, root, strings.Join(short, " "))
	for _, d := range short {
		if g := again[d]; g.passed < want[d].passed {
			failed, _ := os.ReadFile(filepath.Join(res, d+".tests"))
			t.Errorf("%s: %d passed twice in a row, docs/conformance.md records %d; the tests:\n%s", d, g.passed, want[d].passed, failed)
		}
	}
}

// runMPICH runs bench/mpich-tests.sh on dirs in a fresh work directory and
// returns its counts and its results directory.
func runMPICH(t *testing.T, root, dirs string) (map[string]mpichCount, string) {
	t.Helper()
	work := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "bench", "mpich-tests.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "WORK="+work, "DIRS="+dirs, "MPITEST_TIMEOUT=30")
	out, err := cmd.CombinedOutput()
	t.Logf("bench/mpich-tests.sh DIRS=%q:\n%s", dirs, out)
	if err != nil {
		t.Fatalf("bench/mpich-tests.sh: %v", err)
	}
	res := filepath.Join(work, "ftmpi-mpich-tests", "results")
	got, err := readSummary(filepath.Join(res, "summary.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	return got, res
}

type mpichCount struct{ passed, failed, skipped int }

// conformanceBaseline reads the table under "## Summary" in
// docs/conformance.md: | dir | passed | failed | skipped | ... |.
func conformanceBaseline(path string) (map[string]mpichCount, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]mpichCount{}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Summary"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		f := strings.Split(strings.Trim(line, "| "), "|")
		if len(f) < 4 {
			continue
		}
		var c mpichCount
		if _, err := fmt.Sscan(f[1]+" "+f[2]+" "+f[3], &c.passed, &c.failed, &c.skipped); err != nil {
			continue // the header and the rule
		}
		m[strings.Trim(strings.TrimSpace(f[0]), "`")] = c
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s: no counts in a table under ## Summary", path)
	}
	return m, nil
}

// readSummary reads bench/mpich-tests.sh's summary.tsv.
func readSummary(path string) (map[string]mpichCount, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]mpichCount{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		var d string
		var c mpichCount
		if _, err := fmt.Sscan(line, &d, &c.passed, &c.failed, &c.skipped); err != nil {
			return nil, fmt.Errorf("%s: %q: %v", path, line, err)
		}
		m[d] = c
	}
	return m, nil
}

// TestMPICHAnySourcePending: ULFM's pending wildcard receive is
// MPI_ERR_PROC_FAILED_PENDING in C, not MPI_ERR_PENDING (MPICH
// ft/anysource).
func TestMPICHAnySourcePending(t *testing.T) {
	bin := Compile(t, "testdata/mpich_anysource.c")
	r := runC(t, "3", []string{"--on-failure", "continue"}, bin)
	if want := "result: recv 75 (proc-failed 1) wait 76 (pending 1)"; !strings.Contains(r.Stdout, want) {
		t.Fatalf("stdout lacks %q (exit %d)\nstdout:\n%s\nstderr:\n%s", want, r.Code, r.Stdout, r.Stderr)
	}
}
