// Command xhostcmp is the driver of bench/xhost-compare.sh: ftmpi side by
// side with Open MPI 4.1 and MPICH 4.0 across namespace hosts (package
// nshosts: N hosts with sshd on a private bridge, one shared filesystem
// and clock), every launcher started on h1 over the same ssh. In one run,
// interleaved (the order of the launchers turns from round to round):
//
//   - p2p: 1 B latency and 1..16 MiB bandwidth between two ranks on h1
//     and h2 (ftmpi over TCP between hosts; Open MPI --mca pml ob1 --mca
//     btl tcp,self; MPICH UCX_TLS=tcp,self);
//   - start: job start at np 16 over 4 hosts (hello: init, barrier,
//     finalize), the launcher's wall time;
//   - crash, silent: a whole host (the last, 4 ranks) is lost while every
//     survivor waits in a receive from it: crashed (its processes
//     SIGKILLed; the kernel still resets connections) or silent (its link
//     cut both ways first). ftmpi: when the first and the last survivor
//     learned (ErrProcFailed). Open MPI 4.1 and MPICH have no ULFM: when
//     their launcher ended the job (or that it had not ended at the cap);
//   - replace (ftmpi only): kill → restored communicator at np 16, the 4
//     lost ranks replaced (revoke, shrink, spawn, merge, split).
//
// Every launch's value is one JSON line on stdout (and in -results); the
// markdown table of medians and ratios goes to -table and stdout at the
// end; progress on stderr. -summarize FILE... prints the table again.
//
// It needs root (namespaces), and must not run anything outside the
// hosts it makes and tears down.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/nshosts"
)

type config struct {
	build                 string
	impls                 []string
	parts                 []string
	rounds                int // p2p launches per impl
	runs                  int // repetitions inside a p2p launch
	startRuns             int
	crashRuns, silentRuns int
	replaceRuns           int
	hosts, slots          int
	cap                   time.Duration // no-ULFM launchers: wait at most this after the kill
	timeout               time.Duration // any launch
	hbTimeout             time.Duration
	results, table        string
	logDir                string
}

func main() {
	var c config
	impls := flag.String("impls", "ftmpi,openmpi,mpich", "launchers to compare (ftmpi first)")
	parts := flag.String("parts", "p2p,start,crash,silent,replace", "what to measure")
	flag.StringVar(&c.build, "build", "bench/build", "binaries: BUILD/ftmpi/{ftmpirun,ftmpi-bench,hello}, BUILD/{openmpi,mpich}/{latency,bw,hello,hostloss}")
	flag.IntVar(&c.rounds, "rounds", 5, "p2p: launches per launcher")
	flag.IntVar(&c.runs, "runs", 5, "p2p: repetitions inside a launch (its median is the launch's value)")
	flag.IntVar(&c.startRuns, "start-runs", 7, "job start: timed launches per launcher (after one untimed)")
	flag.IntVar(&c.crashRuns, "crash-runs", 5, "crashed host: launches per launcher")
	flag.IntVar(&c.silentRuns, "silent-runs", 3, "silent host: launches per launcher")
	flag.IntVar(&c.replaceRuns, "replace-runs", 5, "kill → restored communicator: launches (ftmpi)")
	flag.IntVar(&c.hosts, "hosts", 4, "namespace hosts")
	flag.IntVar(&c.slots, "slots", 4, "ranks per host for start, crash, silent, replace")
	flag.DurationVar(&c.cap, "cap", 10*time.Second, "crash, silent: how long after the kill a launcher without ULFM may take to end the job")
	flag.DurationVar(&c.timeout, "timeout", 120*time.Second, "limit of any launch")
	flag.DurationVar(&c.hbTimeout, "hb-timeout", 3*time.Second, "ftmpirun's agent heartbeat timeout (FTMPI_AGENT_HB_TIMEOUT)")
	flag.StringVar(&c.results, "results", "", "append every result line to this file too")
	flag.StringVar(&c.table, "table", "", "write the markdown table to this file too")
	flag.StringVar(&c.logDir, "logs", "", "keep every launch's stdout and stderr here")
	summarize := flag.Bool("summarize", false, "print the table of the result files named as arguments (no run)")
	flag.Parse()
	if *summarize {
		if err := summarizeFiles(flag.Args(), c.hbTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "xhostcmp:", err)
			os.Exit(1)
		}
		return
	}
	c.impls = strings.Split(*impls, ",")
	c.parts = strings.Split(*parts, ",")
	for _, i := range c.impls {
		if _, ok := implTitle[i]; !ok {
			fmt.Fprintf(os.Stderr, "xhostcmp: -impls: unknown launcher %q (want ftmpi, openmpi, mpich)\n", i)
			os.Exit(2)
		}
	}
	for _, p := range c.parts {
		switch p {
		case "p2p", "start", "crash", "silent", "replace":
		default:
			fmt.Fprintf(os.Stderr, "xhostcmp: -parts: unknown part %q (want p2p, start, crash, silent, replace)\n", p)
			os.Exit(2)
		}
	}
	if c.hosts < 2 || c.slots < 1 {
		fmt.Fprintln(os.Stderr, "xhostcmp: want -hosts >= 2 and -slots >= 1")
		os.Exit(2)
	}
	os.Exit(run(c))
}

func summarizeFiles(files []string, hb time.Duration) error {
	if len(files) == 0 {
		return fmt.Errorf("-summarize: name the result files")
	}
	var recs []rec
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		recs = append(recs, parseRecs(b)...)
	}
	writeTable(os.Stdout, recs, hb)
	return nil
}

// parseRecs reads the xhost result lines of b (other lines are skipped).
func parseRecs(b []byte) []rec {
	var out []rec
	for _, l := range bytes.Split(b, []byte("\n")) {
		var r rec
		if !bytes.HasPrefix(l, []byte(`{"name":"xhost-`)) || json.Unmarshal(l, &r) != nil {
			continue
		}
		out = append(out, r)
	}
	return out
}

// runner holds a run's hosts, output and the launch count.
type runner struct {
	c       config
	h       *nshosts.Hosts
	out     *json.Encoder
	file    *os.File
	recs    []rec
	n       int // launches so far
	failed  []string
	skipped []string
	sshWrap string // ssh -F cfg as one executable (MPICH's -launcher-exec)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "# "+format+"\n", args...)
}

func load1() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func loadAll() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func run(c config) int {
	if err := nshosts.Available(); err != nil {
		fmt.Fprintln(os.Stderr, "xhostcmp:", err)
		return 1
	}
	loadBegin := loadAll()
	began := time.Now()
	logf("load average at the start: %s", loadBegin)
	r := &runner{c: c, out: json.NewEncoder(os.Stdout)}
	if c.results != "" {
		f, err := os.OpenFile(c.results, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xhostcmp:", err)
			return 1
		}
		defer f.Close()
		r.file = f
	}
	if c.logDir != "" {
		_ = os.MkdirAll(c.logDir, 0o755)
	}
	logf("bringing up %d namespace hosts with sshd", c.hosts)
	h, err := nshosts.Up(c.hosts, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "xhostcmp:", err)
		return 1
	}
	r.h = h
	sigs, over := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer close(over)
	defer signal.Stop(sigs)
	go func() { // interrupted: nothing may be left behind
		select {
		case s := <-sigs:
			logf("%v: tearing the hosts down", s)
			_ = h.Close()
			os.Exit(130)
		case <-over:
		}
	}()
	defer func() {
		if err := h.Close(); err != nil {
			logf("tearing the hosts down: %v", err)
		}
	}()
	r.sshWrap = filepath.Join(h.Dir, "ssh-wrap")
	if err := os.WriteFile(r.sshWrap, []byte("#!/bin/sh\nexec ssh -F "+h.SSHConfig+" \"$@\"\n"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "xhostcmp:", err)
		return 1
	}
	logf("hosts h1..h%d up (%s), namespaces %s-h*", c.hosts, h.Subnet4(), h.Prefix)
	for _, p := range c.parts {
		switch p {
		case "p2p":
			r.p2p()
		case "start":
			r.start()
		case "crash":
			r.hostLoss(false, false, c.crashRuns)
		case "silent":
			r.hostLoss(true, false, c.silentRuns)
		case "replace":
			r.hostLoss(false, true, c.replaceRuns)
		}
	}
	loadEnd := loadAll()
	var tb bytes.Buffer
	fmt.Fprintf(&tb, "# Across namespace hosts: ftmpi, Open MPI, MPICH (%s, %d cores)\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU())
	fmt.Fprintf(&tb, "%d namespace hosts with sshd on one machine, launchers started on h1 over ssh. Load average at the start: %s, at the end: %s. %d launches in %v.\n\n",
		c.hosts, loadBegin, loadEnd, r.n, time.Since(began).Round(time.Second))
	writeTable(&tb, r.recs, c.hbTimeout)
	os.Stdout.Write(tb.Bytes())
	if c.table != "" {
		if err := os.WriteFile(c.table, tb.Bytes(), 0o644); err != nil {
			logf("writing %s: %v", c.table, err)
		}
	}
	logf("load average at the end: %s; %d launches in %v", loadEnd, r.n, time.Since(began).Round(time.Second))
	for _, f := range r.skipped {
		logf("skipped: %s", f)
	}
	for _, f := range r.failed {
		logf("failed: %s", f)
	}
	if len(r.failed) > 0 {
		return 1
	}
	return 0
}

func (r *runner) emit(x rec) {
	r.recs = append(r.recs, x)
	_ = r.out.Encode(x)
	if r.file != nil {
		b, _ := json.Marshal(x)
		r.file.Write(append(b, '\n'))
	}
}

// failImpl is a failure of one of impl's launches. MPICH is compared
// where it works: its failures are listed as skips and do not fail the
// run (Debian's MPICH 4.0 over UCX's TCP transport has hung in
// MPI_Finalize with 4 ranks per namespace host).
func (r *runner) failImpl(impl, format string, args ...any) {
	if impl != "mpich" {
		r.fail(format, args...)
		return
	}
	s := fmt.Sprintf(format, args...)
	r.skipped = append(r.skipped, s)
	logf("SKIP: %s (MPICH is left out of this part)", s)
}

func (r *runner) fail(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.failed = append(r.failed, s)
	logf("FAILED: %s", s)
}

// order is the launchers of round k: turned by k, so that none always
// goes first.
func (r *runner) order(k int) []string {
	n := len(r.c.impls)
	out := make([]string, n)
	for i := range out {
		out[i] = r.c.impls[(i+k)%n]
	}
	return out
}

// hostList is "h1:S,h2:S,..." for the first n hosts.
func (r *runner) hostList(n, slots int) string {
	var p []string
	for i := 1; i <= n; i++ {
		p = append(p, fmt.Sprintf("%s:%d", r.h.Name(i), slots))
	}
	return strings.Join(p, ",")
}

// launch is what starts one job of impl over hosts on h1: the command
// and its environment.
func (r *runner) launch(impl, hosts string, np int, prog []string, ftArgs ...string) (string, []string, []string) {
	b := r.c.build
	switch impl {
	case "ftmpi":
		args := append([]string{"--host", hosts, "-n", strconv.Itoa(np), "--interface", r.h.Subnet4()}, ftArgs...)
		return filepath.Join(b, "ftmpi", "ftmpirun"), append(args, prog...),
			[]string{"FTMPI_SSH=" + r.h.SSH(), "FTMPI_AGENT_HB_TIMEOUT=" + r.c.hbTimeout.String()}
	case "openmpi":
		// --bind-to none: every "host" binds its ranks from core 0 on,
		// not knowing that they all share this machine's cores; bound,
		// two ranks of different hosts spin on one core.
		args := []string{"--allow-run-as-root", "--bind-to", "none", "--host", hosts, "-np", strconv.Itoa(np),
			"--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "eth0",
			"--mca", "oob_tcp_if_include", "eth0", "--mca", "plm_rsh_agent", r.h.SSH()}
		return "mpirun.openmpi", append(args, prog...), nil
	default: // mpich
		// -iface eth0: the proxies connect back to an address, not to
		// the machine's host name (which every namespace host shares and
		// none resolves).
		args := []string{"-iface", "eth0", "-launcher", "ssh", "-launcher-exec", r.sshWrap, "-hosts", hosts, "-n", strconv.Itoa(np)}
		return "mpiexec.hydra", append(args, prog...), []string{"UCX_TLS=tcp,self", "UCX_NET_DEVICES=eth0"}
	}
}

// prog is impl's program name in the build directory with its args.
func (r *runner) prog(impl, name string, args ...string) []string {
	if impl == "ftmpi" {
		return append([]string{filepath.Join(r.c.build, "ftmpi", name)}, args...)
	}
	return append([]string{filepath.Join(r.c.build, impl, name)}, args...)
}

// cleanup makes sure nothing of the last job is left on any host (Open
// MPI's daemons of an aborted job, say): what is left after 3 s is killed.
func (r *runner) cleanup(after string) {
	for i := 1; i <= r.h.N; i++ {
		_ = r.h.Heal(i)
	}
	if left := r.h.WaitNoJob(3 * time.Second); left != nil {
		logf("left on the hosts after %s (killed): %v", after, left)
		for i := 1; i <= r.h.N; i++ {
			_ = r.h.KillExcept(i)
		}
		if left := r.h.WaitNoJob(5 * time.Second); left != nil {
			r.fail("processes left on the hosts after %s: %v", after, left)
		}
	}
}

// results reads the JSON result lines of a finished p2p job.
func results(j *job) []rec {
	var out []rec
	for _, l := range strings.Split(j.out(), "\n") {
		var x rec
		if strings.HasPrefix(l, `{"name":`) && json.Unmarshal([]byte(l), &x) == nil {
			out = append(out, x)
		}
	}
	return out
}

// p2p: latency and bandwidth between a rank on h1 and one on h2.
func (r *runner) p2p() {
	c := r.c
	bad := map[string]bool{}
	hosts := r.hostList(2, 1)
	logf("=== p2p: 1 B latency and 1..16 MiB bandwidth between h1 and h2, %d rounds, %d repetitions per launch", c.rounds, c.runs)
	for k := 0; k < c.rounds; k++ {
		for _, impl := range r.order(k) {
			for _, b := range []struct{ name, min, max, out string }{
				{"latency", "1", "1", mLatency},
				{"bw", strconv.Itoa(1 << 20), strconv.Itoa(16 << 20), mBW},
			} {
				if bad[impl] {
					continue
				}
				var prog []string
				if impl == "ftmpi" {
					prog = r.prog(impl, "ftmpi-bench", "-bench", b.name, "-min", b.min, "-max", b.max, "-runs", strconv.Itoa(c.runs), "-bytes", strconv.Itoa(128<<20))
				} else {
					prog = r.prog(impl, b.name, "-impl", impl, "-transport", "tcp", "-min", b.min, "-max", b.max, "-runs", strconv.Itoa(c.runs))
				}
				name, args, env := r.launch(impl, hosts, 2, prog)
				l1 := load1()
				label := fmt.Sprintf("%s %s round %d", impl, b.name, k+1)
				logf("p2p round %d/%d: %s %s (load %.2f)", k+1, c.rounds, impl, b.name, l1)
				j, err := r.startJob(label, name, args, env)
				if err != nil {
					r.failImpl(impl, "%s: %v", label, err)
					bad[impl] = true
					continue
				}
				if !j.wait(c.timeout) || j.err != nil {
					r.failImpl(impl, "%s: %v %s", label, j.err, j.tail())
					bad[impl] = true
					r.cleanup(label)
					continue
				}
				got := results(j)
				if len(got) == 0 {
					r.failImpl(impl, "%s: no result lines: %s", label, j.tail())
					bad[impl] = true
				}
				for _, x := range got {
					r.emit(rec{Name: b.out, Impl: impl, Transport: "tcp", NP: 2, Size: x.Size, Median: x.Median, Unit: x.Unit,
						Runs: x.Runs, Round: k + 1, Load1: l1})
				}
				r.cleanup(label)
			}
		}
	}
}

// startLimit bounds a job-start launch (a hello takes a second or two
// even on a loaded machine).
const startLimit = 30 * time.Second

// start: job start at np hosts×slots, the launcher's wall time.
func (r *runner) start() {
	c := r.c
	np := c.hosts * c.slots
	hosts := r.hostList(c.hosts, c.slots)
	logf("=== job start: np %d over %d hosts, 1 untimed + %d timed launches per launcher", np, c.hosts, c.startRuns)
	bad := map[string]bool{}
	for k := 0; k <= c.startRuns; k++ {
		for _, impl := range r.order(k) {
			if bad[impl] {
				continue
			}
			name, args, env := r.launch(impl, hosts, np, r.prog(impl, "hello"))
			l1 := load1()
			label := fmt.Sprintf("%s start round %d", impl, k)
			if k == 0 {
				logf("start: %s warm-up launch (load %.2f)", impl, l1)
			} else {
				logf("start %d/%d: %s (load %.2f)", k, c.startRuns, impl, l1)
			}
			j, err := r.startJob(label, name, args, env)
			if err != nil {
				r.failImpl(impl, "%s: %v", label, err)
				bad[impl] = true
				continue
			}
			if !j.wait(min(c.timeout, startLimit)) || j.err != nil {
				r.failImpl(impl, "%s: %v (limit %v) %s", label, j.err, min(c.timeout, startLimit), j.tail())
				bad[impl] = true
				r.cleanup(label)
				continue
			}
			ms := float64(j.ended.Sub(j.began).Nanoseconds()) / 1e6
			if k > 0 {
				r.emit(rec{Name: mStart, Impl: impl, Transport: "tcp", NP: np, Median: ms, Unit: "ms", Runs: 1, Round: k, Load1: l1})
			}
			r.cleanup(label)
		}
	}
}

// hostLoss: the last host is lost while every survivor waits in a
// receive from one of its ranks. silent: its link is cut both ways
// before its processes are killed. replace: ftmpi only, the lost ranks
// are replaced.
func (r *runner) hostLoss(silent, replace bool, runs int) {
	c := r.c
	np := c.hosts * c.slots
	hosts := r.hostList(c.hosts, c.slots)
	victim := c.hosts
	what := "crashed host"
	first, last, abort := mCrashFirst, mCrashLast, mCrashAbort
	if silent {
		what = "silent host"
		first, last, abort = mSilentFirst, mSilentLast, mSilentAbort
	}
	impls := r.c.impls
	if replace {
		what = "host lost, ranks replaced"
		impls = []string{"ftmpi"}
		if !contains(r.c.impls, "ftmpi") {
			return
		}
	}
	logf("=== %s: np %d over %d hosts, h%d (%d ranks) lost, %d launches per launcher", what, np, c.hosts, victim, c.slots, runs)
	bad := map[string]bool{}
	for k := 0; k < runs; k++ {
		n := len(impls)
		for i := range impls {
			impl := impls[(i+k)%n]
			if bad[impl] {
				continue
			}
			var prog []string
			var ftArgs []string
			if impl == "ftmpi" {
				prog = r.prog(impl, "ftmpi-bench", "-bench", "hostloss", "-victims", strconv.Itoa(c.slots))
				if replace {
					prog = append(prog, "-replace")
				}
				ftArgs = []string{"--on-failure", "continue"}
			} else {
				prog = r.prog(impl, "hostloss", "-impl", impl, "-victims", strconv.Itoa(c.slots))
			}
			name, args, env := r.launch(impl, hosts, np, prog, ftArgs...)
			l1 := load1()
			label := fmt.Sprintf("%s %s %d", impl, strings.ReplaceAll(what, " ", "-"), k+1)
			logf("%s %d/%d: %s (load %.2f)", what, k+1, runs, impl, l1)
			j, err := r.startJob(label, name, args, env)
			if err != nil {
				r.failImpl(impl, "%s: %v", label, err)
				bad[impl] = true
				continue
			}
			if !j.waitLine("xhost: armed", c.timeout) {
				j.wait(time.Second)
				r.failImpl(impl, "%s: never armed: %v %s", label, j.err, j.tail())
				bad[impl] = true
				r.cleanup(label)
				continue
			}
			t0 := time.Now()
			if silent {
				if err := r.h.Isolate(victim); err != nil {
					r.failImpl(impl, "%s: cutting h%d: %v", label, victim, err)
				}
			}
			if err := r.h.KillExcept(victim); err != nil {
				r.failImpl(impl, "%s: killing h%d: %v", label, victim, err)
			}
			limit := c.timeout
			if impl != "ftmpi" {
				limit = c.cap
			}
			ended := j.wait(limit)
			if silent {
				_ = r.h.Heal(victim) // only now: a healed link would turn silence into resets
			}
			ms := func(t time.Time) float64 { return float64(t.Sub(t0).Nanoseconds()) / 1e6 }
			base := rec{Impl: impl, Transport: "tcp", NP: np, Unit: "ms", Runs: 1, Round: k + 1, Load1: l1}
			if impl == "ftmpi" {
				var line struct {
					Name       string `json:"name"`
					FirstNS    int64  `json:"first_ns"`
					LastNS     int64  `json:"last_ns"`
					RestoredNS int64  `json:"restored_ns"`
				}
				okLine := false
				for _, l := range strings.Split(j.out(), "\n") {
					if strings.HasPrefix(l, `{"name":"xhost-hostloss"`) && json.Unmarshal([]byte(l), &line) == nil {
						okLine = true
					}
				}
				if !ended || !okLine || (replace && line.RestoredNS == 0) {
					r.failImpl(impl, "%s: ended %v, result line %v: %v %s", label, ended, okLine, j.err, j.tail())
					bad[impl] = true
					r.cleanup(label)
					continue
				}
				if replace {
					x := base
					x.Name, x.Median = mReplaceTotal, ms(time.Unix(0, line.RestoredNS))
					r.emit(x)
				} else {
					x := base
					x.Name, x.Median = first, ms(time.Unix(0, line.FirstNS))
					r.emit(x)
					x.Name, x.Median = last, ms(time.Unix(0, line.LastNS))
					r.emit(x)
				}
				r.cleanup(label)
				continue
			}
			// No ULFM: did any survivor's receive return, and when did the
			// launcher end the job?
			returned, lastRet := 0, int64(0)
			for _, l := range strings.Split(j.out(), "\n") {
				var x struct {
					Rank   int   `json:"rank"`
					UnixNS int64 `json:"unix_ns"`
				}
				if strings.HasPrefix(l, `{"name":"xhost-recv-returned"`) && json.Unmarshal([]byte(l), &x) == nil && x.Rank < np-c.slots {
					returned++
					lastRet = max(lastRet, x.UnixNS)
				}
			}
			note := fmt.Sprintf("the receive returned at %d of %d survivors", returned, np-c.slots)
			if returned == 0 {
				note = "no survivor's receive returned"
			}
			x := base
			x.Name, x.Note = abort, note
			if ended {
				x.Median = ms(j.ended)
				code := -1
				if j.cmd.ProcessState != nil {
					code = j.cmd.ProcessState.ExitCode()
				}
				x.Note += fmt.Sprintf("; the launcher exited with %d", code)
			} else {
				x.Median, x.Censored = float64(c.cap.Milliseconds()), true
				x.Note += fmt.Sprintf("; the job still ran %v after the loss (killed)", c.cap)
			}
			r.emit(x)
			if returned == np-c.slots {
				y := base
				y.Name, y.Median = last, ms(time.Unix(0, lastRet))
				r.emit(y)
			}
			r.cleanup(label)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
