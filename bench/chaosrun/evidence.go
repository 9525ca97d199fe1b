package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A run that does not end within -timeout is a hang, and its evidence is
// kept before anything is killed (collectEvidence): a snapshot of every
// process of the run in /proc (state, wchan, the kernel stack of each
// thread), then every rank's goroutine stacks (SIGQUIT makes a Go program
// print them on stderr, which ftmpirun forwards tagged with the rank; a
// stopped rank is continued so that it can), then ftmpirun's own (SIGQUIT
// once the ranks are gone, if it has not ended by itself). splitEvidence
// then writes them per rank into the run's directory under -keep.

// proc is one process of a run.
type proc struct {
	pid  int
	rank string // FTMPI_RANK, "" for ftmpirun
	cmd  string
}

// runProcs lists the processes holding mark in their environment.
func runProcs(mark string) []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	needle := []byte("FTMPI_TESTMARK=" + mark + "\x00")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		p := proc{pid: pid}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("FTMPI_RANK=")); ok {
				p.rank = string(v)
			}
		}
		cmdline, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		p.cmd = strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
		out = append(out, p)
	}
	return out
}

// procState is the state letter of pid ("" if it is gone).
func procState(pid int) string {
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
		return string(stat[i+2 : i+3])
	}
	return ""
}

// snapshot describes the processes as /proc shows them: per process its
// state and wchan, per thread its state, wchan and kernel stack.
func snapshot(ps []proc) string {
	var b strings.Builder
	for _, p := range ps {
		dir := "/proc/" + strconv.Itoa(p.pid)
		who := "ftmpirun"
		if p.rank != "" {
			who = "rank " + p.rank
		}
		wchan, _ := os.ReadFile(dir + "/wchan")
		fmt.Fprintf(&b, "== %s pid %d state %s wchan %s: %s\n", who, p.pid, procState(p.pid), wchan, p.cmd)
		tasks, _ := os.ReadDir(dir + "/task")
		for _, t := range tasks {
			td := dir + "/task/" + t.Name()
			tid, _ := strconv.Atoi(t.Name())
			tw, _ := os.ReadFile(td + "/wchan")
			stack, _ := os.ReadFile(td + "/stack")
			fmt.Fprintf(&b, "  thread %d state %s wchan %s\n", tid, taskState(td), tw)
			for _, l := range strings.Split(strings.TrimSpace(string(stack)), "\n") {
				if l != "" {
					fmt.Fprintf(&b, "    %s\n", l)
				}
			}
		}
	}
	return b.String()
}

func taskState(td string) string {
	stat, _ := os.ReadFile(td + "/stat")
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
		return string(stat[i+2 : i+3])
	}
	return "?"
}

// waitGone waits until none of pids is alive (or a zombie), at most d.
func waitGone(pids []int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		alive := false
		for _, pid := range pids {
			if s := procState(pid); s != "" && s != "Z" {
				alive = true
			}
		}
		if !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling /proc, with a deadline
	}
}

// collectEvidence is called when the run of ftmpirun pid (holding mark)
// has not ended in time: it returns the /proc snapshot, having made every
// rank and then ftmpirun print their goroutine stacks (see above). exited
// is closed when ftmpirun has been reaped; the caller kills it after.
func collectEvidence(mark string, launcher int, exited <-chan struct{}, grace time.Duration) string {
	ps := runProcs(mark)
	snap := snapshot(ps)
	var ranks []int
	for _, p := range ps {
		if p.pid == launcher || p.rank == "" {
			continue
		}
		ranks = append(ranks, p.pid)
		_ = syscall.Kill(p.pid, syscall.SIGQUIT)
		_ = syscall.Kill(p.pid, syscall.SIGCONT) // a stopped rank dumps once continued
	}
	if !waitGone(ranks, grace) {
		snap += "# some ranks did not end within " + grace.String() + " of SIGQUIT\n"
	}
	select {
	case <-exited:
		snap += "# ftmpirun ended by itself once its ranks were gone (no stacks of it)\n"
		return snap
	case <-time.After(2 * time.Second): // let ftmpirun forward the ranks' last output
	}
	_ = syscall.Kill(launcher, syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(grace):
		snap += "# ftmpirun did not end within " + grace.String() + " of SIGQUIT\n"
	}
	return snap
}

var rankTag = regexp.MustCompile(`^\[([0-9]+)\] `)

// splitEvidence writes a hung run's evidence into dir: procs.txt (the
// snapshot), rank-R.txt (rank R's stderr lines, its stacks among them),
// launcher.txt (ftmpirun's own lines, its stacks if it printed them). It
// returns how many ranks printed goroutine stacks.
func splitEvidence(dir, snap, stderr string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	per := map[string]*strings.Builder{}
	file := func(name string) *strings.Builder {
		if per[name] == nil {
			per[name] = &strings.Builder{}
		}
		return per[name]
	}
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if l == "" {
			continue
		}
		if m := rankTag.FindStringSubmatch(l); m != nil {
			file("rank-" + m[1] + ".txt").WriteString(l[len(m[0]):])
		} else {
			file("launcher.txt").WriteString(l)
		}
	}
	file("procs.txt").WriteString(snap)
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	stacks := 0
	for _, n := range names {
		body := per[n].String()
		if strings.HasPrefix(n, "rank-") && hasStacks(body) {
			stacks++
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			return stacks, err
		}
	}
	return stacks, nil
}

var goroutineHeader = regexp.MustCompile(`(?m)^goroutine [0-9]+ (gp=\S+ m=\S+ mp=\S+ )?\[`)

// hasStacks tells whether text holds a Go goroutine dump.
func hasStacks(text string) bool { return goroutineHeader.MatchString(text) }
