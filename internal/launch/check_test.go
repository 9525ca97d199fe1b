package launch

import (
	"slices"
	"strings"
	"testing"
)

// TestParseArgsCheck: --check exports FTMPI_CHECK=1 to every rank (the
// checking mode of package mpi) and is in --help.
func TestParseArgsCheck(t *testing.T) {
	cfg, err := ParseArgs([]string{"--check", "-n", "2", "prog"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Check || !slices.Contains(cfg.Export, "FTMPI_CHECK=1") {
		t.Errorf("--check: Check %v, Export %q; want FTMPI_CHECK=1 exported", cfg.Check, cfg.Export)
	}
	cfg, err = ParseArgs([]string{"-n", "2", "prog"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Check || slices.ContainsFunc(cfg.Export, func(s string) bool { return strings.HasPrefix(s, "FTMPI_CHECK") }) {
		t.Errorf("no --check: Check %v, Export %q", cfg.Check, cfg.Export)
	}
	if !strings.Contains(usageText, "\n  --check ") {
		t.Error("--check is not in the usage text")
	}
}
