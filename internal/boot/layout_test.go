package boot

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/boot/pmi/pmitest"
)

// PMI_process_mapping as hydra and Slurm write it: blocks of nodes with
// so many consecutive processes each, taken in turn until every process
// is placed; malformed mappings are errors that quote them.
func TestParseProcessMapping(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want []int
	}{
		{"(vector,(0,1,4))", 4, []int{0, 0, 0, 0}},
		{"(vector,(0,2,2))", 4, []int{0, 0, 1, 1}},
		{"(vector,(0,2,1))", 4, []int{0, 1, 0, 1}},            // round-robin: the blocks are taken again
		{"(vector,(0,1,3),(1,2,1))", 5, []int{0, 0, 0, 1, 2}}, // uneven (Slurm's --distribution=block)
		{" ( vector , (2,1,2) ) ", 3, []int{2, 2, 2}},
		{"(vector,(0,4,2))", 3, []int{0, 0, 1}}, // more room than processes
	} {
		got, err := ParseProcessMapping(c.s, c.n)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseProcessMapping(%q, %d) = %v, %v; want %v", c.s, c.n, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "vector,(0,1,4)", "(list,(0,1,4))", "(vector)", "(vector,(0,1))", "(vector,(0,0,4))",
		"(vector,(0,1,0))", "(vector,(-1,1,4))", "(vector,(0,1,4),)", "(vector,(0,1,4)(1,1,4))", "(vector,(0,1,x))",
		"(vector,(0,1,4)", "(vector,(16777215,2,1))", "(vector,(0,1,99999999999999999999))"} {
		if got, err := ParseProcessMapping(bad, 4); err == nil || !strings.Contains(err.Error(), "PMI_process_mapping") {
			t.Errorf("ParseProcessMapping(%q) = %v, %v; want an error naming it", bad, got, err)
		}
	}
	if _, err := ParseProcessMapping("(vector,(0,1,4))", 0); err == nil {
		t.Error("no process to place: no error")
	}
}

// Nodes reads the launcher's layout through PMI-1 (a get, as hydra's proxy
// answers it) and PMI-2 (info-getjobattr, as Slurm answers it); nil when
// the launcher publishes none or one that cannot be read (every endpoint
// is then read at start), and nil under hydra whatever it publishes or
// with FTMPI_PMI_ENDPOINTS=all; another value of that is an error.
func TestPMINodes(t *testing.T) {
	const n = 4
	for _, c := range []struct {
		mapping string
		srun    bool
		want    []int
	}{
		{"(vector,(0,2,2))", true, []int{0, 0, 1, 1}},
		{"", true, nil},
		{"(vector,(0,2", true, nil},
		{"(vector,(0,2,2))", false, nil},    // hydra: read every endpoint at start
		{"(vector,(0,2,2)) all", true, nil}, // FTMPI_PMI_ENDPOINTS=all
	} {
		for _, v := range []string{"1", "2"} {
			name := fmt.Sprintf("PMI-%s %q srun %v", v, c.mapping, c.srun)
			s := pmitest.New(n)
			s.Errorf = t.Errorf
			mapping, all := strings.CutSuffix(c.mapping, " all")
			s.Mapping = mapping
			var wg sync.WaitGroup
			errs := make([]error, n)
			for r := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = func() error {
						extra := []string{"FTMPI_PMI", v}
						if c.srun {
							extra = append(extra, "SLURM_STEP_ID", "0")
						}
						if all {
							extra = append(extra, "FTMPI_PMI_ENDPOINTS", "all")
						}
						_, job, ok, err := fromPMI(pmiLookup(r, n, extra...), fakeDial(s, r))
						if err != nil || !ok {
							return fmt.Errorf("ok %v err %v", ok, err)
						}
						defer job.Close()
						nodes, err := job.Nodes()
						if err != nil || !slices.Equal(nodes, c.want) {
							return fmt.Errorf("Nodes() = %v, %v; want %v", nodes, err, c.want)
						}
						return nil
					}()
				}()
			}
			wg.Wait()
			s.Wait()
			for r, err := range errs {
				if err != nil {
					t.Errorf("%s: process %d: %v", name, r, err)
				}
			}
		}
	}
	s := pmitest.New(1)
	_, _, _, err := fromPMI(pmiLookup(0, 1, "FTMPI_PMI_ENDPOINTS", "some"), fakeDial(s, 0))
	if err == nil || !strings.Contains(err.Error(), "FTMPI_PMI_ENDPOINTS") {
		t.Fatalf("FTMPI_PMI_ENDPOINTS=some: %v", err)
	}
}
