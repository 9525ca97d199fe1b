package ctest

import (
	"strings"
	"testing"
)

// TestOpenMPIULFMProgramUnchanged compiles bench/c/ulfm_ft.c, a program
// written for Open MPI 5's ULFM (it refuses to compile without
// OMPI_HAVE_MPI_EXT_FTMPI from <mpi-ext.h>, and uses the MPIX_ calls), as
// it is, and runs its failure measurements: a rank SIGKILLs itself while
// the others wait in MPI_Recv from it; the survivors see the failure,
// revoke, shrink, agree, acknowledge, and (replace) spawn a C child,
// merge and split back to the old ranks. Every measurement line must come
// out.
func TestOpenMPIULFMProgramUnchanged(t *testing.T) {
	bin := Compile(t, "../../bench/c/ulfm_ft.c")
	for _, c := range []struct {
		mode  string
		lines []string
	}{
		{"ft", []string{"ft_allreduce8", "ft_agree", "ft_shrink"}},
		{"detect", []string{"ft_detect_max", "ft_revoke_shrink_max", "ft_agree_after_failure_max", "ft_agree_new_comm_max"}},
		{"replace", []string{"ft_replace_detect_max", "ft_replace_shrink_max", "ft_replace_spawn_max", "ft_replace_merge_max", "ft_replace_split_max", "ft_replace_total_max"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			args := []string{"-bench", c.mode, "-impl", "ftmpi-c"}
			if c.mode == "ft" {
				args = append(args, "-runs", "2", "-iters", "20")
			}
			r := runC(t, "4", []string{"--on-failure", "continue"}, bin, args...)
			for _, name := range c.lines {
				if !strings.Contains(r.Stdout, `{"name":"`+name+`","impl":"ftmpi-c"`) {
					t.Errorf("no %s line", name)
				}
			}
			if c.mode != "ft" && !strings.Contains(r.Stderr, "rank 3") {
				t.Errorf("no failure of rank 3 reported")
			}
			if t.Failed() {
				t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}
