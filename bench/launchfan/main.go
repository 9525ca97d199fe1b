// Command launchfan measures job start over namespace hosts (issue 24
// item 3): ftmpirun with a flat launch (the head starts every agent over
// ssh), ftmpirun with a tree launch (--fanout K), and Open MPI's mpirun
// over the same ssh, at each host count, one rank per host, a trivial
// program (init, barrier, finalize). The measure is the launcher's wall
// time (start of the command to its exit on h1). Launches are
// interleaved: every round runs each launcher once, the order turned
// every round; the first round is a warm-up and not counted. The 1-minute
// load average is recorded before every launch.
//
// It needs root, sshd and nft (package internal/nshosts); bench/launch-fanout.sh
// builds the programs and runs it. stdout: one JSON line per launch, then
// the table (markdown) of medians. It must not run beside the test suite
// (it brings up as many namespace hosts as the largest size).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ftmpi/ftmpi/internal/nshosts"
)

type rec struct {
	Impl  string  `json:"impl"`
	Hosts int     `json:"hosts"`
	Round int     `json:"round"`
	MS    float64 `json:"ms"`
	// StartedMS (ftmpirun): from its start to every rank started, agents
	// up included (its -v line "N ranks started in D").
	StartedMS float64 `json:"started_ms,omitempty"`
	// CPUms: the launcher's CPU time and that of the children it waited
	// for (its ssh clients, the ranks of its own host).
	CPUms float64 `json:"cpu_ms"`
	// Relayed launches (FTMPI_RELAY=1): the connections relayed to the
	// head, the frames it received and sent for them, and the up frames
	// that carried hellos and fences (its -v line "relay: ...").
	Relayed    int     `json:"relayed,omitempty"`
	UpFrames   int     `json:"up_frames,omitempty"`
	DownFrames int     `json:"down_frames,omitempty"`
	HelloUp    int     `json:"hello_up,omitempty"`
	FenceUp    int     `json:"fence_up,omitempty"`
	PPN        int     `json:"ppn"`
	Load1      float64 `json:"load1"`
}

func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

func main() {
	build := flag.String("build", "bench/build/launchfan", "directory with ftmpirun, hello (ftmpi) and hello-openmpi")
	sizes := flag.String("sizes", "16,32", "host counts (one rank per host)")
	runs := flag.Int("runs", 5, "timed launches per launcher and size (after one warm-up)")
	fanout := flag.Int("fanout", 4, "the tree launch's --fanout")
	impls := flag.String("impls", "flat,tree,openmpi", "launchers: flat, tree (-fanout), tree:K, relay (flat, FTMPI_RELAY=1), relaytree (tree, relayed), openmpi")
	ppnFlag := flag.Int("ppn", 1, "ranks per host")
	limit := flag.Duration("timeout", 60*time.Second, "limit of one launch")
	flag.Parse()

	var ns []int
	maxN := 0
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 || n > 200 {
			fmt.Fprintf(os.Stderr, "launchfan: bad size %q (want 2..200)\n", s)
			os.Exit(2)
		}
		ns = append(ns, n)
		maxN = max(maxN, n)
	}
	if *runs < 1 || *fanout < 1 {
		fmt.Fprintln(os.Stderr, "launchfan: -runs and -fanout must be at least 1")
		os.Exit(2)
	}
	list := strings.Split(*impls, ",")
	for _, i := range list {
		if _, ok := treeK(i, *fanout); !ok && i != "flat" && i != "openmpi" && i != "relay" {
			fmt.Fprintf(os.Stderr, "launchfan: unknown launcher %q (want flat, tree, tree:K, relay, relaytree, openmpi)\n", i)
			os.Exit(2)
		}
	}
	if err := nshosts.Available(); err != nil {
		fmt.Fprintln(os.Stderr, "launchfan:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "# bringing up %d namespace hosts (load %.2f)\n", maxN, load1())
	h, err := nshosts.Up(maxN, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "launchfan:", err)
		os.Exit(1)
	}
	ppn = max(1, *ppnFlag)
	code := run(h, ns, list, *build, *runs, *fanout, *limit)
	if err := h.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "launchfan: teardown:", err)
		code = 1
	}
	os.Exit(code)
}

// ppn is the ranks per host (-ppn).
var ppn = 1

var relayRE = regexp.MustCompile(`relay: (\d+) connections, (\d+) frames up \(hello (\d+), fence (\d+), rejoin \d+\), (\d+) down`)

func run(h *nshosts.Hosts, ns []int, list []string, build string, runs, fanout int, limit time.Duration) int {
	var all []rec
	failed := 0
	enc := json.NewEncoder(os.Stdout)
	for _, n := range ns {
		var hl []string
		for i := 1; i <= n; i++ {
			hl = append(hl, h.Name(i)+":"+strconv.Itoa(ppn))
		}
		hosts := strings.Join(hl, ",")
		for k := 0; k <= runs; k++ {
			for j := range list {
				impl := list[(j+k)%len(list)]
				name, args, env := launch(h, impl, hosts, n*ppn, build, fanout)
				l := load1()
				ctx, cancel := context.WithTimeout(context.Background(), limit)
				cmd := h.CommandContext(ctx, 1, name, args...)
				cmd.Env = append(os.Environ(), env...)
				cmd.Dir = os.TempDir()
				t0 := time.Now()
				out, err := cmd.CombinedOutput()
				ms := float64(time.Since(t0).Microseconds()) / 1000
				cancel()
				if err == nil && impl != "openmpi" && !strings.Contains(string(out), fmt.Sprintf("result: ranks=%d", n*ppn)) {
					err = fmt.Errorf("no result line")
				}
				if err != nil {
					failed++
					fmt.Fprintf(os.Stderr, "# FAILED %s at %d hosts, round %d: %v\n%s\n", impl, n, k, err, tail(string(out)))
				} else if k > 0 {
					r := rec{Impl: impl, Hosts: n, Round: k, MS: ms, Load1: l, PPN: ppn}
					if ps := cmd.ProcessState; ps != nil {
						r.CPUms = float64((ps.UserTime() + ps.SystemTime()).Microseconds()) / 1000
					}
					if m := relayRE.FindStringSubmatch(string(out)); m != nil {
						v := func(i int) int { x, _ := strconv.Atoi(m[i]); return x }
						r.Relayed, r.UpFrames, r.HelloUp, r.FenceUp, r.DownFrames = v(1), v(2), v(3), v(4), v(5)
					}
					if m := startedRE.FindStringSubmatch(string(out)); m != nil {
						if d, err := time.ParseDuration(m[1]); err == nil {
							r.StartedMS = float64(d.Microseconds()) / 1000
						}
					}
					all = append(all, r)
					_ = enc.Encode(r)
				}
				fmt.Fprintf(os.Stderr, "# %s %d hosts round %d: %.0f ms (load %.2f)\n", impl, n, k, ms, l)
				if left := h.WaitNoJob(10 * time.Second); left != nil {
					fmt.Fprintf(os.Stderr, "# processes left after %s: %v\n", impl, left)
				}
			}
		}
	}
	table(all, ns, list, fanout)
	if failed > 0 {
		return 1
	}
	return 0
}

func launch(h *nshosts.Hosts, impl, hosts string, n int, build string, fanout int) (string, []string, []string) {
	switch impl {
	case "openmpi":
		return "mpirun.openmpi", []string{"--allow-run-as-root", "--bind-to", "none", "--host", hosts, "-np", strconv.Itoa(n),
			"--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "eth0",
			"--mca", "oob_tcp_if_include", "eth0", "--mca", "plm_rsh_agent", h.SSH(), build + "/hello-openmpi"}, nil
	default:
		k := 1 << 20 // flat: the head starts every agent
		if t, ok := treeK(impl, fanout); ok {
			k = t
		}
		relay := "0"
		if impl == "relay" || impl == "relaytree" {
			relay = "1"
		}
		return build + "/ftmpirun", []string{"-v", "--host", hosts, "-n", strconv.Itoa(n), "--interface", h.Subnet4(),
			"--fanout", strconv.Itoa(k), build + "/hello"}, []string{"FTMPI_SSH=" + h.SSH(), "FTMPI_RELAY=" + relay}
	}
}

// treeK is the fan-out of launcher impl ("tree": fanout, "tree:K": K).
func treeK(impl string, fanout int) (int, bool) {
	if impl == "tree" || impl == "relaytree" {
		return fanout, true
	}
	if v, ok := strings.CutPrefix(impl, "tree:"); ok {
		k, err := strconv.Atoi(v)
		return k, err == nil && k >= 1
	}
	return 0, false
}

var startedRE = regexp.MustCompile(`ftmpirun: \d+ ranks started in (\S+)`)

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// table prints the medians (min-max) in ms by size and launcher, and the
// load averages seen.
func table(all []rec, ns []int, list []string, fanout int) {
	label := map[string]string{"flat": "ftmpirun, flat", "relay": "ftmpirun, flat, relayed", "openmpi": "Open MPI 4.1 mpirun"}
	for _, i := range list {
		if k, ok := treeK(i, fanout); ok {
			label[i] = fmt.Sprintf("ftmpirun, tree (--fanout %d)", k)
			if i == "relaytree" {
				label[i] += ", relayed"
			}
		}
	}
	fmt.Printf("\n")
	tableHeader(fmt.Sprintf("hosts (%d rank(s) each)", ppn), list, label, "load (1 min)")
	for _, n := range ns {
		fmt.Printf("| %d |", n)
		lo, hi := 1e9, -1.0
		for _, i := range list {
			var v []float64
			for _, r := range all {
				if r.Hosts == n && r.Impl == i {
					v = append(v, r.MS)
					lo, hi = min(lo, r.Load1), max(hi, r.Load1)
				}
			}
			if len(v) == 0 {
				fmt.Printf(" - |")
				continue
			}
			s := append([]float64(nil), v...)
			sort.Float64s(s)
			fmt.Printf(" %.0f (%.0f-%.0f, %d runs) |", median(v), s[0], s[len(s)-1], len(v))
		}
		if hi < 0 {
			fmt.Printf(" - |\n")
			continue
		}
		fmt.Printf(" %.2f-%.2f |\n", lo, hi)
	}
	fmt.Printf("\nftmpirun, launch -> every rank started (agents up, ranks forked), medians (min-max), ms:\n\n| hosts |")
	var ft []string
	for _, i := range list {
		if i != "openmpi" {
			ft = append(ft, i)
			fmt.Printf(" %s |", label[i])
		}
	}
	fmt.Printf("\n|---|")
	for range ft {
		fmt.Printf("---|")
	}
	fmt.Printf("\n")
	for _, n := range ns {
		fmt.Printf("| %d |", n)
		for _, i := range ft {
			var v []float64
			for _, r := range all {
				if r.Hosts == n && r.Impl == i && r.StartedMS > 0 {
					v = append(v, r.StartedMS)
				}
			}
			if len(v) == 0 {
				fmt.Printf(" - |")
				continue
			}
			s := append([]float64(nil), v...)
			sort.Float64s(s)
			fmt.Printf(" %.0f (%.0f-%.0f) |", median(v), s[0], s[len(s)-1])
		}
		fmt.Printf("\n")
	}
	fmt.Printf("\nCPU time of the launcher and the children it waited for (ssh clients, its host's ranks), medians, ms;" +
		" relayed: connections at the head relayed / frames up (with hellos, with fences) / frames down, medians:\n\n")
	tableHeader("hosts", list, label, "")
	for _, n := range ns {
		fmt.Printf("| %d |", n)
		for _, i := range list {
			var cpu, conns, up, hello, fence, down []float64
			for _, r := range all {
				if r.Hosts == n && r.Impl == i {
					cpu = append(cpu, r.CPUms)
					if r.UpFrames > 0 {
						conns, up, down = append(conns, float64(r.Relayed)), append(up, float64(r.UpFrames)), append(down, float64(r.DownFrames))
						hello, fence = append(hello, float64(r.HelloUp)), append(fence, float64(r.FenceUp))
					}
				}
			}
			if len(cpu) == 0 {
				fmt.Printf(" - |")
				continue
			}
			fmt.Printf(" %.0f", median(cpu))
			if len(up) > 0 {
				fmt.Printf("; %.0f / %.0f (%.0f, %.0f) / %.0f", median(conns), median(up), median(hello), median(fence), median(down))
			}
			fmt.Printf(" |")
		}
		fmt.Printf("\n")
	}
}

// tableHeader prints a Markdown table's header: the first column, one a
// launcher (by its label), and an extra last column unless extra is "".
func tableHeader(first string, list []string, label map[string]string, extra string) {
	fmt.Printf("| %s |", first)
	for _, i := range list {
		fmt.Printf(" %s |", label[i])
	}
	if extra != "" {
		fmt.Printf(" %s |", extra)
	}
	fmt.Printf("\n|---|")
	for range list {
		fmt.Printf("---|")
	}
	if extra != "" {
		fmt.Printf("---|")
	}
	fmt.Printf("\n")
}
