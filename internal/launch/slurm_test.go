package launch

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// slurmEnv sets the variables salloc gives its command.
func slurmEnv(t *testing.T, nodes, cpus string) {
	t.Setenv("SLURM_JOB_ID", "42")
	t.Setenv("SLURM_JOB_NODELIST", nodes)
	t.Setenv("SLURM_JOB_CPUS_PER_NODE", cpus)
	t.Setenv("SLURM_TASKS_PER_NODE", "1")
	t.Setenv("SLURM_NTASKS", "")
	t.Setenv(EnvSSH, "")
}

func TestParseArgsSlurmAllocation(t *testing.T) {
	slurmEnv(t, "n[1-3]", "4(x2),2")
	cfg, err := ParseArgs([]string{"prog"})
	if err != nil {
		t.Fatal(err)
	}
	want := []HostSlots{{"n1", 4}, {"n2", 4}, {"n3", 2}}
	if !reflect.DeepEqual(cfg.Hosts, want) || cfg.N != 10 || cfg.SlurmJob != "42" {
		t.Fatalf("hosts %v, n %d, job %q", cfg.Hosts, cfg.N, cfg.SlurmJob)
	}
	if got := agentArgv(cfg, "n2", "/bin/ftmpirun"); got[0] != "srun" || !contains(got, "--nodelist=n2") || !contains(got, "--overlap") ||
		!contains(got, "--unbuffered") || got[len(got)-2] != "/bin/ftmpirun" || got[len(got)-1] != AgentCommand {
		t.Fatalf("agent command %q", got)
	}
	// --host wins over the allocation; --launch-agent over srun.
	cfg, err = ParseArgs([]string{"--host", "a:2", "--launch-agent", "ssh -p 2222", "prog"})
	if err != nil || cfg.SlurmJob != "" || len(cfg.Hosts) != 1 {
		t.Fatalf("--host inside an allocation: %+v %v", cfg.Hosts, err)
	}
	if got := agentArgv(cfg, "a", "/bin/ftmpirun"); strings.Join(got, " ") != "ssh -p 2222 a '/bin/ftmpirun' "+AgentCommand {
		t.Fatalf("ssh agent command %q", got)
	}
	t.Setenv(EnvSSH, "myssh")
	cfg, err = ParseArgs([]string{"-n", "2", "prog"})
	if err != nil || cfg.SlurmJob != "42" || agentArgv(cfg, "n1", "x")[0] != "myssh" {
		t.Fatalf("$FTMPI_SSH inside an allocation: %v %q", err, agentArgv(cfg, "n1", "x"))
	}
	// Too few slots, and a broken environment: clear usage errors.
	_, err = ParseArgs([]string{"-n", "11", "prog"})
	var ue *UsageError
	if !asUsage(err, &ue) || !strings.Contains(err.Error(), "Slurm job 42 (slots from SLURM_JOB_CPUS_PER_NODE): 11 ranks asked but only 10 slots") {
		t.Fatalf("-n 11 in 10 slots: %v", err)
	}
	if _, err := ParseArgs([]string{"-n", "11", "--oversubscribe", "prog"}); err != nil {
		t.Fatalf("--oversubscribe: %v", err)
	}
	t.Setenv("SLURM_JOB_CPUS_PER_NODE", "4(x2)")
	_, err = ParseArgs([]string{"prog"})
	if !asUsage(err, &ue) || !strings.Contains(err.Error(), "inside Slurm job 42: SLURM_JOB_NODELIST=\"n[1-3]\" gives 3 nodes") {
		t.Fatalf("mismatched counts: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fakeSrun writes an srun that runs its command on this machine and
// records its arguments in dir/srun-HOST.args (HOST from --nodelist).
func fakeSrun(t *testing.T) (bindir, dir string) {
	dir = t.TempDir()
	script := `#!/bin/sh
host=
for a in "$@"; do case $a in --nodelist=*) host=${a#--nodelist=};; esac; done
echo "$@" > ` + dir + `/srun-$host.args
while [ $# -gt 0 ]; do case $1 in --*) shift;; *) break;; esac; done
exec "$@"
`
	if err := os.WriteFile(filepath.Join(dir, "srun"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, dir
}

// TestSlurmAllocationFakeSrun: ftmpirun inside an "allocation" of three
// nodes (this host and two that do not exist) starts the agents of the two
// others with srun, one step per node, and runs the ring over them; the
// hello (with the job's secret) goes over srun's standard input.
func TestSlurmAllocationFakeSrun(t *testing.T) {
	bindir, dir := fakeSrun(t)
	ring := filepath.Join(t.TempDir(), "ring")
	if err := jobtest.Build([]string{ring}, []string{"../../examples/ring"}); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bindir + ":" + os.Getenv("PATH"), "SLURM_JOB_ID=42", "SLURM_JOB_NODELIST=localhost,fake[2-3]",
		"SLURM_JOB_CPUS_PER_NODE=1,2,1", "SLURM_TASKS_PER_NODE=1(x3)", EnvSSH + "="}
	r := runEnv(t, 60*time.Second, env, "--interface", "lo", "--tag-output", ring)
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "[0] result: ranks=4 token=6 ok") {
		t.Fatalf("ring over the allocation:\n%s\n%s", r.stdout, r.stderr)
	}
	for _, h := range []string{"fake2", "fake3"} {
		b, err := os.ReadFile(filepath.Join(dir, "srun-"+h+".args"))
		if err != nil || !strings.Contains(string(b), "--nodes=1 --ntasks=1 --nodelist="+h+" --overlap") {
			t.Fatalf("srun for %s: %q %v", h, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "srun-localhost.args")); err == nil {
		t.Fatal("srun started an agent for ftmpirun's own host")
	}
}
