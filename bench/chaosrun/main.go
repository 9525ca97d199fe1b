// Command chaosrun is the bookkeeping of bench/chaos.sh (issue 11, "chaos
// at scale"): it runs fault-tolerant examples under ftmpirun --chaos
// (random SIGKILLs and SIGSTOPs), classifies every run and prints the
// counts as JSON lines.
//
// The faults of a run (-window, the default) are k SIGKILLs or SIGSTOPs
// (--inject specs, replayable by the seed) at times drawn in a window
// scaled to the example's failure-free run length at that np: the shortest
// of -calibrate failure-free runs (which must agree on the result), then of
// every run that ended correct with no fault injected (a load that eased
// makes later runs shorter than the calibration: 2 of 5 jacobi runs ended
// before their first fault in a sample calibrated at load 40); so every
// example gets its faults however short it is. -window "" uses
// ftmpirun --chaos with the absolute -mttf and -from instead. A run in
// which ftmpirun injected nothing is reported (runs_without_fault).
//
// Each run ends in exactly one outcome:
//
//	correct  exit 0 and the failure-free run's result: line
//	clean    a non-zero exit, no wrong result line, a message on stderr;
//	         classified by cause from the launcher's and the ranks' stderr
//	wrong    a result: line that differs from the failure-free one, or
//	         exit 0 without the result line
//	hang     the run did not end within -timeout (ftmpirun's own --timeout,
//	         a backstop, is longer), or ftmpirun itself had to be killed
//
// A hang keeps its evidence before anything is killed (evidence.go): in a
// directory of -keep named after the run, procs.txt (every process's
// state, wchan and threads' kernel stacks), rank-R.txt (rank R's stderr
// and its goroutine stacks: every rank is sent SIGQUIT, a stopped one
// continued so that it can print them) and launcher.txt (ftmpirun's lines,
// and its stacks if it was still running once its ranks were gone). The
// runs use --tag-output, so that each line names its rank.
//
// and, independently, orphan: a process holding the run's FTMPI_TESTMARK
// still alive a second after ftmpirun exited (it is then SIGKILLed, so
// that it cannot disturb the next runs). The stderr of every run that is
// not correct, and of every orphan, is kept in -keep.
//
// Runs go round-robin (every example at every np due in that round, then
// the next round), so that whenever the run is stopped (-deadline) every
// example has the same count at each np. One JSON line per run goes to
// -out as it ends; at the end (and with -summarize FILE, for a file of
// such lines, at any time) one JSON line per (example, np) gives the
// counts and the clean errors per class.
//
// It only runs programs and reads /proc; it decides nothing about the
// runtime and must not need anything beyond the standard library.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// example is how one fault-tolerant example is run.
type example struct {
	name     string   // also the binary's name in -bin
	policy   []string // ftmpirun flags choosing the failure policy
	args     []string // program arguments
	perRun   bool     // cof: a fresh -dir per run
	relaunch bool     // --restart-on-failure=max
}

var examples = []example{
	{name: "refinement", policy: []string{"--on-failure", "continue"}},
	{name: "masterworker", policy: []string{"--on-failure", "continue"}, args: []string{"-tasks", "300"}},
	{name: "jacobi", policy: []string{"--on-failure", "continue"}, args: []string{"-ft", "-n", "64", "-ckpt", "500"}},
	{name: "runthrough", policy: []string{"--on-failure", "continue"}, args: []string{"-example", "bcast", "-n", "30", "-delay", "20ms"}},
	{name: "libcompose", policy: []string{"--on-failure", "continue"}, args: []string{"-steps", "200"}},
	{name: "reinit-async", policy: []string{"--on-failure", "reinit"}},
	{name: "reinit-sync", policy: []string{"--on-failure", "reinit"}},
	{name: "cof", perRun: true, relaunch: true},
}

// Run is one run's record (a line of -out).
type Run struct {
	Example string   `json:"example"`
	NP      int      `json:"np"`
	Seed    uint64   `json:"seed"`
	Chaos   string   `json:"chaos"`
	Inject  []string `json:"inject,omitempty"` // the faults (-window): ftmpirun --inject specs
	Planned int      `json:"planned"`          // faults planned (-window), or max= of --chaos
	Exit    int      `json:"exit"`
	Ms      int64    `json:"ms"`
	Outcome string   `json:"outcome"` // correct, clean, wrong, hang
	Class   string   `json:"class,omitempty"`
	Result  string   `json:"result,omitempty"`
	Stops   int      `json:"stops"`
	Kills   int      `json:"kills"`
	Orphans []string `json:"orphans,omitempty"`
	Stderr  string   `json:"stderr,omitempty"` // kept file
	// Evidence is the directory of a hang's evidence, Stacks the number of
	// ranks that printed goroutine stacks into it.
	Evidence string `json:"evidence,omitempty"`
	Stacks   int    `json:"stacks,omitempty"`
}

// Summary is the line per (example, np).
type Summary struct {
	Name    string         `json:"name"`
	Example string         `json:"example"`
	NP      int            `json:"np"`
	Runs    int            `json:"runs"`
	Chaos   string         `json:"chaos"`
	Correct int            `json:"correct"`
	Clean   int            `json:"clean_error"`
	Wrong   int            `json:"wrong"`
	Hangs   int            `json:"hangs"`
	Orphans int            `json:"orphans"`
	Faulted int            `json:"runs_with_faults"`   // runs in which at least one fault was injected
	NoFault int            `json:"runs_without_fault"` // runs in which none was
	Stacked int            `json:"hangs_with_stacks"`  // hangs whose evidence has goroutine stacks of ranks
	Stops   int            `json:"stops_injected"`
	Kills   int            `json:"kills_injected"`
	MeanMs  int64          `json:"mean_ms"`
	Classes map[string]int `json:"clean_by_class,omitempty"`
}

func main() {
	bin := flag.String("bin", "bench/build/chaos", "directory with ftmpirun and the example binaries")
	names := flag.String("examples", "", "comma-separated examples (default: all eight)")
	nps := flag.String("nps", "8", "np:every,... : run np every that many rounds (e.g. 8:1,4:3,16:3)")
	runs := flag.Int("runs", 1000, "rounds (runs per example at an np due every round)")
	deadline := flag.String("deadline", "", "start no round after this time (RFC 3339, or a duration from now)")
	mttf := flag.Duration("mttf", time.Second, "chaos mttf")
	maxK := flag.String("max", "4:2,8:3,16:3", "np:max faults per run")
	stop := flag.Float64("stop", 0.5, "chaos stop= (share of SIGSTOPs)")
	from := flag.Duration("from", time.Second, "chaos from= (no fault before), with -window \"\"")
	calib := flag.Int("calibrate", 2, "failure-free runs per example and np measuring its length (-window)")
	win := flag.String("window", "0.1:0.9", "LO:HI: the faults fall in [LO*T, HI*T], T the failure-free run's length; \"\": --chaos with -mttf and -from")
	seed0 := flag.Uint64("seed0", 1, "seed of the first round")
	timeout := flag.Duration("timeout", 60*time.Second, "a run not ended after this is a hang (its stacks are kept)")
	out := flag.String("out", "", "append one JSON line per run here")
	keep := flag.String("keep", "", "directory for the stderr of runs that are not correct")
	summarize := flag.String("summarize", "", "only print the summary of this file of run lines")
	md := flag.Bool("md", false, "with -summarize: a Markdown table instead of JSON lines")
	flag.Parse()

	if *summarize != "" {
		f, err := os.Open(*summarize)
		if err != nil {
			fatalf("%v", err)
		}
		var all []Run
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r Run
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Example != "" {
				if r.Outcome == "clean" && r.Stderr != "" {
					r.Class = reclassify(r.Stderr, r.Class)
				}
				all = append(all, r)
			}
		}
		if *md {
			printMarkdown(os.Stdout, all)
		} else {
			printSummary(os.Stdout, all)
		}
		return
	}

	sel := examples
	if *names != "" {
		sel = nil
		for _, n := range strings.Split(*names, ",") {
			found := false
			for _, e := range examples {
				if e.name == n {
					sel, found = append(sel, e), true
				}
			}
			if !found {
				fatalf("unknown example %q", n)
			}
		}
	}
	type npEvery struct{ np, every int }
	var plan []npEvery
	for _, item := range strings.Split(*nps, ",") {
		a, b, ok := strings.Cut(item, ":")
		np, err1 := strconv.Atoi(a)
		every, err2 := 1, error(nil)
		if ok {
			every, err2 = strconv.Atoi(b)
		}
		if err1 != nil || err2 != nil || np < 2 || every < 1 {
			fatalf("bad -nps item %q (want NP or NP:EVERY)", item)
		}
		plan = append(plan, npEvery{np, every})
	}
	maxOf := map[int]int{}
	for _, item := range strings.Split(*maxK, ",") {
		a, b, _ := strings.Cut(item, ":")
		np, err1 := strconv.Atoi(a)
		k, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil {
			fatalf("bad -max item %q (want NP:K)", item)
		}
		maxOf[np] = k
	}
	var scaled *window
	if *win != "" {
		w, err := parseWindow(*win)
		if err != nil {
			fatalf("%v", err)
		}
		scaled = &w
	}
	var until time.Time
	if *deadline != "" {
		if d, err := time.ParseDuration(*deadline); err == nil {
			until = time.Now().Add(d)
		} else if t, err := time.Parse(time.RFC3339, *deadline); err == nil {
			until = t
		} else {
			fatalf("bad -deadline %q", *deadline)
		}
	}
	var outF io.Writer = io.Discard
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fatalf("%v", err)
		}
		defer f.Close()
		outF = f
	}
	if *keep != "" {
		if err := os.MkdirAll(*keep, 0o755); err != nil {
			fatalf("%v", err)
		}
	}
	tmp, err := os.MkdirTemp("", "chaosrun-")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(tmp)

	r := &runner{bin: *bin, timeout: *timeout, keep: *keep, tmp: tmp, want: map[string]string{}, calib: max(1, *calib)}
	var all []Run
	for round := 0; round < *runs; round++ {
		if !until.IsZero() && time.Now().After(until) {
			fmt.Fprintf(os.Stderr, "chaosrun: deadline reached after %d rounds\n", round)
			break
		}
		seed := *seed0 + uint64(round)
		for _, pe := range plan {
			if round%pe.every != 0 {
				continue
			}
			k := maxOf[pe.np]
			if k == 0 {
				k = 2
			}
			chaos := fmt.Sprintf("seed=%d,mttf=%v,max=%d,stop=%g,from=%v", seed, *mttf, k, *stop, *from)
			for _, e := range sel {
				var faults []string
				plan := chaos
				if scaled != nil {
					length := r.calibrate(e, pe.np)
					faults = scaledFaults(seed, pe.np, k, length, *scaled, *stop)
					plan = fmt.Sprintf("seed=%d,window=%g:%g,max=%d,stop=%g", seed, scaled.Lo, scaled.Hi, k, *stop)
				}
				run := r.run(e, pe.np, seed, plan, faults, k)
				all = append(all, run)
				if run.Outcome == "correct" && run.Stops+run.Kills == 0 {
					r.shorter(e, pe.np, time.Duration(run.Ms)*time.Millisecond)
				}
				line, _ := json.Marshal(run)
				fmt.Fprintf(outF, "%s\n", line)
				if run.Outcome != "correct" || len(run.Orphans) > 0 {
					fmt.Fprintf(os.Stderr, "chaosrun: %s np %d seed %d: %s (exit %d) %s %v\n", e.name, pe.np, seed, run.Outcome, run.Exit, run.Class, run.Orphans)
				}
				if run.Stops+run.Kills == 0 {
					fmt.Fprintf(os.Stderr, "chaosrun: %s np %d seed %d: no fault injected (%d planned: %s; the run took %dms)\n",
						e.name, pe.np, seed, run.Planned, strings.Join(faults, " "), run.Ms)
				}
			}
		}
	}
	printSummary(os.Stdout, all)
}

type runner struct {
	bin, keep, tmp string
	timeout        time.Duration
	want           map[string]string        // example/np -> failure-free result line
	length         map[string]time.Duration // example/np -> failure-free run's length
	calib          int                      // failure-free runs measuring it
}

// backstop is how much longer than -timeout ftmpirun's own --timeout is:
// chaosrun collects a hang's evidence first (collectEvidence).
const backstop = 30 * time.Second

// evidenceGrace bounds each step of collectEvidence.
const evidenceGrace = 10 * time.Second

// cmdArgs is ftmpirun's command line; chaos is --chaos's argument (-window
// "") and faults --inject specs; neither: the failure-free run.
func (r *runner) cmdArgs(e example, np int, dir string, chaos string, faults []string, k int) []string {
	args := []string{"-n", strconv.Itoa(np), "--timeout", (r.timeout + backstop).String(), "--tag-output"}
	args = append(args, e.policy...)
	if e.relaunch && (chaos != "" || len(faults) > 0) {
		args = append(args, "--restart-on-failure="+strconv.Itoa(k))
	}
	switch {
	case len(faults) > 0:
		for _, f := range faults {
			args = append(args, "--inject", f)
		}
	case chaos != "":
		args = append(args, "--chaos", chaos)
	}
	args = append(args, filepath.Join(r.bin, e.name))
	args = append(args, e.args...)
	if e.perRun {
		args = append(args, "-dir", dir)
	}
	return args
}

// expected runs the example once without faults (cached per np).
func (r *runner) expected(e example, np int) string {
	key := e.name + "/" + strconv.Itoa(np)
	if w, ok := r.want[key]; ok {
		return w
	}
	w, length := "", time.Duration(0)
	for i := 0; i < max(1, r.calib); i++ {
		dir := filepath.Join(r.tmp, "ref-"+key+"-"+strconv.Itoa(i))
		cmd := exec.Command(filepath.Join(r.bin, "ftmpirun"), r.cmdArgs(e, np, dir, "", nil, 0)...)
		start := time.Now()
		out, err := cmd.Output()
		took := time.Since(start)
		got := resultLine(out)
		if err != nil || got == "" || (w != "" && got != w) {
			fatalf("failure-free run %d of %s at np %d: %v, result %q (before: %q)", i, e.name, np, err, got, w)
		}
		w = got
		if length == 0 || took < length {
			length = took
		}
	}
	fmt.Fprintf(os.Stderr, "chaosrun: %s np %d failure-free in %v (shortest of %d): %s\n", e.name, np, length.Round(time.Millisecond), max(1, r.calib), w)
	r.want[key] = w
	if r.length == nil {
		r.length = map[string]time.Duration{}
	}
	r.length[key] = length
	return w
}

// shorter records a failure-free run of the example at np that took d: the
// length the faults are scaled to is the shortest seen.
func (r *runner) shorter(e example, np int, d time.Duration) {
	key := e.name + "/" + strconv.Itoa(np)
	if l, ok := r.length[key]; ok && d > 0 && d < l {
		fmt.Fprintf(os.Stderr, "chaosrun: %s np %d: a run without faults took %v, the length faults are scaled to (was %v)\n",
			e.name, np, d, l.Round(time.Millisecond))
		r.length[key] = d
	}
}

// calibrate is the length of the example's failure-free run at np (the
// run of expected).
func (r *runner) calibrate(e example, np int) time.Duration {
	r.expected(e, np)
	return r.length[e.name+"/"+strconv.Itoa(np)]
}

// resultLine is the last "result:" line of out, without its rank tag.
func resultLine(out []byte) string {
	last := ""
	for _, l := range strings.Split(string(out), "\n") {
		if m := rankTag.FindString(l); m != "" {
			l = l[len(m):]
		}
		if strings.HasPrefix(l, "result:") {
			last = l
		}
	}
	return last
}

func (r *runner) run(e example, np int, seed uint64, chaos string, faults []string, k int) Run {
	want := r.expected(e, np)
	mark := fmt.Sprintf("chaosrun-%d-%s-%d-%d", os.Getpid(), e.name, np, seed)
	dir := filepath.Join(r.tmp, mark)
	defer os.RemoveAll(dir)
	// After -timeout the run is a hang: its evidence is collected, then
	// ftmpirun is killed. ftmpirun's own --timeout (with the ranks'
	// stacks: FTMPI_TIMEOUT_DUMP) and the context are backstops.
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout+backstop+2*evidenceGrace+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.bin, "ftmpirun"), r.cmdArgs(e, np, dir, chaos, faults, k)...)
	cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+mark, "FTMPI_TIMEOUT_DUMP=1", "GOTRACEBACK=all")
	cmd.WaitDelay = evidenceGrace
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	run := Run{Example: e.name, NP: np, Seed: seed, Chaos: chaos, Inject: faults, Planned: len(faults)}
	if len(faults) == 0 {
		run.Planned = k
	}
	var err error
	snap, hung := "", false
	if err = cmd.Start(); err == nil {
		exited := make(chan struct{})
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(r.timeout):
			hung = true
			snap = collectEvidence(mark, cmd.Process.Pid, exited, evidenceGrace)
			_ = cmd.Process.Kill()
			<-exited
		}
		err = <-waited
	}
	run.Ms = time.Since(start).Milliseconds()
	run.Exit = cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		run.Exit = -1
	} else if err != nil && run.Exit == 0 {
		run.Exit = -2
	}
	run.Orphans = orphans(mark)
	errText := stderr.String()
	run.Stops = strings.Count(errText, "ftmpirun: injected stop of")
	run.Kills = strings.Count(errText, "ftmpirun: injected kill of")
	got := resultLine(stdout.Bytes())
	switch {
	case hung || run.Exit == 124 || run.Exit == -1:
		run.Outcome = "hang"
	case got != "" && got != want:
		run.Outcome, run.Result = "wrong", got
	case run.Exit == 0 && got == want:
		run.Outcome = "correct"
	case run.Exit == 0:
		run.Outcome, run.Result = "wrong", "(no result line)"
	case strings.TrimSpace(errText) == "":
		run.Outcome, run.Class = "wrong", "non-zero exit without a message"
	default:
		run.Outcome, run.Class = "clean", classify(errText, got == want)
	}
	if (run.Outcome != "correct" || len(run.Orphans) > 0) && r.keep != "" {
		name := fmt.Sprintf("%s-np%d-seed%d", e.name, np, seed)
		p := filepath.Join(r.keep, name+".err")
		body := fmt.Sprintf("# ftmpirun %s\n# exit %d outcome %s class %q orphans %v\n%s\n# stdout:\n%s",
			strings.Join(r.cmdArgs(e, np, "DIR", chaos, faults, k), " "), run.Exit, run.Outcome, run.Class, run.Orphans, errText, stdout.String())
		if os.WriteFile(p, []byte(body), 0o644) == nil {
			run.Stderr = p
		}
		if run.Outcome == "hang" {
			ev := filepath.Join(r.keep, name)
			n, err := splitEvidence(ev, snap, errText)
			if err != nil {
				fmt.Fprintf(os.Stderr, "chaosrun: %s: %v\n", ev, err)
			}
			run.Evidence, run.Stacks = ev, n
		}
	}
	return run
}

// orphans returns the processes holding mark in their environment a
// second after the run (checked twice: a process being reaped may linger
// a moment), and SIGKILLs them.
func orphans(mark string) []string {
	find := func() []int {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		needle := []byte("FTMPI_TESTMARK=" + mark + "\x00")
		for _, d := range ents {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
			if err == nil && bytes.Contains(env, needle) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	if len(find()) == 0 {
		return nil
	}
	time.Sleep(time.Second)
	var out []string
	for _, pid := range find() {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		state := ""
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
			state = string(stat[i+2 : i+3])
		}
		out = append(out, fmt.Sprintf("%d %s state %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "), state))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return out
}

// classes are the causes of clean errors, first match wins; the text
// searched is the whole stderr of the run.
var classes = []struct {
	re    *regexp.Regexp
	class string
}{
	{regexp.MustCompile(`restart limit reached`), "reinit: restart limit reached (--max-restarts)"},
	{regexp.MustCompile(`returned from MPI_Reinit: no rollback location`), "reinit: failure after a rank returned from Reinit (seed 000 1.4.2)"},
	{regexp.MustCompile(`before rank [0-9]+ called MPI_Reinit: no rollback location`), "reinit: failure before a rank called Reinit (seed 000 1.4.2)"},
	{regexp.MustCompile(`a spawned process cannot be respawned`), "reinit: a spawned process failed"},
	{regexp.MustCompile(`after [0-9]+ relaunches \(--restart-on-failure`), "cof: relaunches used up (--restart-on-failure)"},
	{regexp.MustCompile(`non-FT|not fault[- ]tolerant|FT-capable`), "a killed rank was rank 0 of a non-FT-capable part"},
}

// reclassify classifies again the stderr kept in file (the classes may
// have been refined since the run), or keeps class if the file is gone.
func reclassify(file, class string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return class
	}
	text := string(b)
	// Header: two "# " lines; then stderr; then "\n# stdout:\n" and stdout.
	for i := 0; i < 2; i++ {
		if _, rest, ok := strings.Cut(text, "\n"); ok && strings.HasPrefix(text, "# ") {
			text = rest
		}
	}
	if i := strings.LastIndex(text, "\n# stdout:\n"); i >= 0 {
		text = text[:i]
	}
	return classify(text, strings.HasPrefix(class, "correct result, non-zero exit: "))
}

var digits = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ms|µs|s)?`)

// classify names the cause of a clean error: a known pattern, else the
// last launcher line (or last line) with numbers replaced by N.
func classify(stderr string, resultOK bool) string {
	for _, c := range classes {
		if c.re.MatchString(stderr) {
			return c.class
		}
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "ftmpirun:") && !strings.Contains(lines[i], "injected") {
			last = lines[i]
			break
		}
	}
	c := digits.ReplaceAllString(last, "N")
	if resultOK {
		c = "correct result, non-zero exit: " + c
	}
	return c
}

func printSummary(w io.Writer, all []Run) {
	for _, s := range summaries(all) {
		line, _ := json.Marshal(s)
		fmt.Fprintf(w, "%s\n", line)
	}
}

// printMarkdown prints the summaries as the table of docs/benchmarks.md.
func printMarkdown(w io.Writer, all []Run) {
	fmt.Fprintln(w, "| example | np | runs | with faults | without | kills | stops | correct | clean error | wrong | hangs | orphans | mean run (s) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range summaries(all) {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | **%d** | %d | %d | %d | %d | %.1f |\n", s.Example, s.NP, s.Runs, s.Faulted, s.NoFault,
			s.Kills, s.Stops, s.Correct, s.Clean, s.Wrong, s.Hangs, s.Orphans, float64(s.MeanMs)/1000)
	}
	classes := map[string]int{}
	for _, s := range summaries(all) {
		for c, n := range s.Classes {
			classes[fmt.Sprintf("%s np %d: %s", s.Example, s.NP, c)] += n
		}
	}
	var keys []string
	for k := range classes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "\n- %s: %d", k, classes[k])
	}
	if len(keys) > 0 {
		fmt.Fprintln(w)
	}
}

// summaries groups the runs by example and np (sorted by example, then np).
func summaries(all []Run) []*Summary {
	by := map[string]*Summary{}
	var keys []string
	for _, r := range all {
		key := fmt.Sprintf("%s/%03d", r.Example, r.NP)
		s := by[key]
		if s == nil {
			chaos := r.Chaos
			if i := strings.Index(chaos, ","); i >= 0 {
				chaos = "seed=S" + chaos[i:]
			}
			s = &Summary{Name: "chaos_at_scale", Example: r.Example, NP: r.NP, Chaos: chaos, Classes: map[string]int{}}
			by[key] = s
			keys = append(keys, key)
		}
		s.Runs++
		s.MeanMs += r.Ms
		s.Stops += r.Stops
		s.Kills += r.Kills
		if r.Stops+r.Kills > 0 {
			s.Faulted++
		} else {
			s.NoFault++
		}
		switch r.Outcome {
		case "correct":
			s.Correct++
		case "clean":
			s.Clean++
			s.Classes[r.Class]++
		case "wrong":
			s.Wrong++
		case "hang":
			s.Hangs++
			if r.Stacks > 0 {
				s.Stacked++
			}
		}
		if len(r.Orphans) > 0 {
			s.Orphans++
		}
	}
	sort.Strings(keys)
	out := make([]*Summary, len(keys))
	for i, k := range keys {
		out[i] = by[k]
		out[i].MeanMs /= int64(out[i].Runs)
	}
	return out
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chaosrun: "+format+"\n", args...)
	os.Exit(2)
}
