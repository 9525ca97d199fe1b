package launch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/inject"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/ownerdir"
	"github.com/ftmpi/ftmpi/internal/rankenv"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// maxShortTmp is the longest TmpRoot used by default; unix socket paths
// must stay below 108 bytes.
const maxShortTmp = 40

// runOnce launches the job described by cfg once, waits for it and returns
// its exit code (see the package comment); st is this launch's part of the
// relaunch loop of Run (restart.go). It leaves no process, goroutine or
// temporary file behind. Its steps: check the configuration (prepareRun),
// find or build the program, make the job directory and the control
// listener, start the head and the agents (setupLocal or setupHosts),
// start the ranks (jobRun.start), wait for the end (jobRun.wait) and
// compute the exit code (jobRun.finish). The deferred clean-ups run in the
// reverse order of the steps.
func runOnce(cfg Config, st *launchState) int {
	out, ok := prepareRun(&cfg)
	if !ok {
		return ExitUsage
	}
	t0 := time.Now()
	path, code := resolveRunProgram(cfg, out)
	if code >= 0 {
		return code
	}
	if cfg.Verbose {
		out.logf("program %s (resolved in %v)", path, time.Since(t0).Round(time.Microsecond))
	}
	if cfg.OutputDir != "" {
		dir := filepath.Join(cfg.OutputDir, strconv.Itoa(st.restart+1)) // Open MPI's job number
		files, err := openRankFiles(dir, cfg.N, cfg.MergeStderr)
		if err != nil {
			out.logf("--output-filename: %v", err)
			return 1
		}
		out.files = files
		defer out.closeFiles()
	}
	tmpDir, err := makeJobDir(jobDirRoot(cfg.TmpRoot))
	if err != nil {
		out.logf("cannot create job directory: %v", err)
		return 1
	}
	defer ownerdir.Remove(tmpDir)
	job := newJobID()
	ln, control, err := listenControl(cfg.ControlNet, tmpDir)
	if err != nil {
		out.logf("cannot listen for control connections: %v", err)
		return 1
	}
	// The job's secret: every control and rank-to-rank connection proves
	// it knows it (package wireauth). Ranks get it through an inherited
	// pipe (hostagent.LocalAgent), never on a command line or in the environment.
	// Remote agents get it in their hello over ssh's standard input.
	key, err := wireauth.New()
	if err != nil {
		out.logf("%v", err)
		return 1
	}
	baseEnv := rankBaseEnv(cfg, st)
	var mh *multiHost
	if cfg.Hosts == nil {
		mh = setupLocal(cfg, st, out, job, path, tmpDir, ln, control, baseEnv, key)
		defer mh.h.close()
	} else {
		if mh, code = setupHosts(cfg, st, out, job, path, tmpDir, ln, control, baseEnv, workDir(cfg.Wdir), key); mh == nil {
			return code
		}
		defer mh.h.close()
		defer mh.closeAgents(10 * time.Second)
		if cfg.Verbose && cfg.Relay {
			defer func() {
				f := mh.h.relayCounts()
				out.logf("relay: %d connections, %d frames up (hello %d, fence %d, rejoin %d), %d down",
					f.conns, f.up, f.upOps["hello"], f.upOps["fence"], f.upOps["rejoin"], f.down)
			}()
		}
	}
	mh.h.trc.Store(cfg.trc)
	if cfg.Verbose {
		out.logf("job %s: %d ranks on %d hosts, control %s, tmp %s", job, cfg.N, len(mh.agents), control, tmpDir)
	}
	j := &jobRun{cfg: cfg, st: st, out: out, h: mh.h, mh: mh, t0: t0}
	defer j.start()()
	j.wait()
	return j.finish(job, path)
}

// prepareRun fills in cfg's defaults (output streams, kill grace) and
// checks it; ok=false: it printed the usage error. From its return on,
// cfg.N counts every process started: the ranks and, last, the spares
// (their environment says how many are spares).
func prepareRun(cfg *Config) (out *output, ok bool) {
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	out = &output{stdout: cfg.Stdout, stderr: cfg.Stderr, tag: cfg.TagOutput, stamp: cfg.Timestamp, merge: cfg.MergeStderr,
		broken: make(chan struct{})}
	if err := cfg.validate(); err != nil {
		usageError(cfg.Stderr, err)
		return nil, false
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	cfg.N += cfg.Spares
	return out, true
}

// resolveRunProgram finds (or builds) the program; code is -1 when it did,
// else ftmpirun's exit code, the error printed (a build's output too).
func resolveRunProgram(cfg Config, out *output) (path string, code int) {
	path, err := resolveProgram(cfg.Program, cfg.CacheDir)
	if err == nil {
		return path, -1
	}
	var ue *UsageError
	var be *BuildError
	switch {
	case errors.As(err, &ue):
		usageError(cfg.Stderr, err)
		return "", ExitUsage
	case errors.As(err, &be):
		if len(be.Output) > 0 {
			_, _ = cfg.Stderr.Write(be.Output)
		}
	}
	out.logf("%v", err)
	return "", 1
}

// jobDirRoot is where the job directory goes: --tmpdir, else the system's
// temporary directory unless its path is too long for unix sockets.
func jobDirRoot(root string) string {
	if root == "" {
		root = os.TempDir()
		if len(root) > maxShortTmp {
			root = "/tmp"
		}
	}
	return root
}

// newJobID is a random job id (16 hex digits).
func newJobID() string {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// listenControl opens the head's control listener: a unix socket in the
// job directory, or with --control-net tcp a loopback TCP port. control is
// its address as the ranks are told it (boot.EnvControl).
func listenControl(network, tmpDir string) (ln net.Listener, control string, err error) {
	if network == "tcp" {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, "", err
		}
		return ln, "tcp:" + ln.Addr().String(), nil
	}
	sock := filepath.Join(tmpDir, "ctl")
	if ln, err = net.Listen("unix", sock); err != nil {
		return nil, "", err
	}
	return ln, "unix:" + sock, nil
}

// rankBaseEnv is the environment every rank starts from: cfg.Env (or
// ftmpirun's own) filtered, with -x exports, phase injections and the
// trace directory.
func rankBaseEnv(cfg Config, st *launchState) []string {
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = withPhaseInjections(withExports(filterEnv(env), cfg.Export), cfg.Inject, st.restart)
	if cfg.trDir != "" {
		env = hostagent.SetEnv(env, envTrace, cfg.trDir)
	}
	return env
}

// workDir is the ranks' working directory on other hosts: --wdir, else
// ftmpirun's own.
func workDir(wdir string) string {
	if wdir == "" {
		wdir, _ = os.Getwd()
	}
	return wdir
}

// setupLocal starts the head and the one hostagent.LocalAgent of a job on this host
// alone and builds the ranks' specs (as setupHosts does for several
// hosts: every rank is placed on host 0).
func setupLocal(cfg Config, st *launchState, out *output, job, path, tmpDir string, ln net.Listener, control string,
	baseEnv []string, key *wireauth.Key) *multiHost {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	h := newHeadHosts(job, cfg.N, cfg.OnFailure, out, cfg.Verbose, nil, nil, cfg.Spares)
	h.quietLog = cfg.Hydra
	h.key = key
	h.killGrace = cfg.KillGrace
	h.serve(ln)
	la := hostagent.NewLocalAgent(host, h)
	la.Note = func(line string) { out.logf("%s", line) }
	h.addAgent(la)
	cores := runtime.NumCPU()
	env0 := withGoMaxProcs(baseEnv, cfg.N, cores)
	env0 = withHeartbeat(env0, cfg.N, cores)
	specs := make([]hostagent.RankSpec, cfg.N)
	for r := range specs {
		info := boot.Info{Job: job, Rank: r, Size: cfg.N, Control: control, Host: host, TmpDir: tmpDir, Transport: hostTransport(cfg.Transport, cfg.N, cores)}
		info.Restart = st.restart
		info.Spares = cfg.Spares
		info.Reinit = cfg.OnFailure == OnFailureReinit
		info.HostCores = cores // the one count every rank uses to choose collective algorithms
		env := make([]string, 0, len(env0)+8)
		env = append(append(env, env0...), info.Env()...)
		specs[r] = hostagent.RankSpec{Rank: r, Path: path, Args: cfg.Args, Env: env, Dir: cfg.Wdir, Auth: key,
			Bind: cfg.rankBind(), Slot: r, ReportBinding: cfg.ReportBindings}
	}
	return &multiHost{h: h, place: make([]int, cfg.N), specs: specs, agents: []hostagent.Agent{la}, groups: [][]hostagent.RankSpec{slices.Clone(specs)}}
}

// jobRun is one launch from the ranks' start to their end: the head, the
// agents (mh), and the launch's timeout.
type jobRun struct {
	cfg     Config
	st      *launchState
	out     *output
	h       *head
	mh      *multiHost
	t0      time.Time
	timeout <-chan time.Time // --timeout (nil: none, or fired)
}

// start arms the timeout and the fault injection, gives the head what it
// needs to respawn and spawn, starts every rank and hands stdin to its
// rank. It returns what ends them, to call when the job is over.
func (j *jobRun) start() (stop func()) {
	cfg, st, out, h := j.cfg, j.st, j.out, j.h
	stopTimer := func() bool { return false }
	if cfg.Timeout > 0 {
		t := time.NewTimer(cfg.Timeout)
		stopTimer, j.timeout = t.Stop, t.C
	}
	plan := st.plan(inject.Plan(cfg.Inject, cfg.N))
	if cfg.Verbose && len(plan) > 0 {
		out.logf("fault injection %s: %d events %v", cfg.Inject, len(plan), plan)
	}
	h.triggers = st.watch(cfg.Inject, cfg.N) // before any rank prints
	if cfg.Verbose && h.triggers != nil {
		out.logf("fault injection triggers: %v", h.triggers.w.Pending())
	}
	agent := j.mh.agents[j.mh.place[0]] // the agent of rank 0 (respawns and spawns of a one-host job)
	if cfg.OnFailure == OnFailureReinit {
		h.enableRespawn(agent, j.mh.specs, cfg.MaxRestarts)
	}
	tmpl := j.mh.specs[0]
	tmpl.Bind, tmpl.ReportBinding = "", false // a spawned process is not rank 0's twin
	h.enableSpawn(agent, tmpl, cfg.CacheDir)
	stopStdin := j.startRanks()
	stopInjector := h.startInjector(plan) // time 0 of the plan: every rank started
	h.armTriggers()
	if cfg.Verbose {
		out.logf("%d ranks started in %v", cfg.N, time.Since(j.t0).Round(time.Microsecond))
	}
	st.started(out, cfg.Verbose, cfg.N)
	// A teardown that began while ranks were still being started may have
	// missed some of them.
	if h.tearingDown() {
		h.signalAll(syscall.SIGKILL)
	}
	return func() {
		stopInjector()
		stopStdin()
		stopTimer()
	}
}

// startRanks starts every agent's ranks with stdin handed to its rank (a
// remote one's is forwarded by its agent); it returns what stops the
// forwarding.
func (j *jobRun) startRanks() (stop func()) {
	cfg := j.cfg
	in := cfg.Stdin
	if cfg.NoStdin {
		in = nil
	}
	stdin, stopStdin := rankStdin(in, j.st.restart)
	var remoteStdin *remoteAgent // the agent that forwards stdin to a rank on its host
	if stdin != nil {
		if g := withStdin(j.mh.groups, stdin, cfg.StdinRank); g >= 0 {
			remoteStdin, _ = j.mh.agents[g].(*remoteAgent)
		}
	}
	startAll(j.mh.agents, j.mh.groups)
	if remoteStdin == nil {
		stopStdin()
		return func() {}
	}
	// ftmpirun reads what it would have handed to the rank (closed at the
	// end: that ends a read of ftmpirun's own pipe).
	go remoteStdin.forwardStdin(cfg.StdinRank, stdin)
	return stopStdin
}

// wait runs the job until every process is gone: it turns ftmpirun's
// signals, the timeout, the stall ticker and a broken output into policy
// events.
func (j *jobRun) wait() {
	h := j.h
	signals := j.cfg.Signals
	broken := j.out.broken
	stall := time.NewTicker(policy.StallEvery) // a process stopped while the others wait in a fence
	defer stall.Stop()
	for {
		select {
		case <-h.allExited:
			return
		case <-stall.C:
			h.step(policy.Stall{})
		case sig := <-signals:
			j.signal(sig)
		case <-j.timeout:
			j.timeout = nil
			h.askHangReport("--timeout " + j.cfg.Timeout.String()) // what they wait in, before the kill
			h.timeout(j.st.timedOut(j.cfg.Timeout))
		case <-broken:
			// Nobody reads the output any more (ftmpirun ... | head -1):
			// end the job as a SIGPIPE would have ended ftmpirun, but
			// with its ranks and job directory cleaned up.
			broken = nil
			h.step(policy.Interrupt{Signal: syscall.SIGPIPE, Code: signalExitCode(syscall.SIGPIPE)})
		}
	}
}

// signal handles a signal to ftmpirun: SIGQUIT asks for a hang report, the
// job going on (hang.go); any other interrupts the job.
func (j *jobRun) signal(sig os.Signal) {
	h := j.h
	s, ok := sig.(syscall.Signal)
	if !ok {
		s = syscall.SIGTERM
	}
	if s != syscall.SIGQUIT {
		h.step(policy.Interrupt{Signal: s, Code: signalExitCode(sig)})
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if !h.askHangReport("SIGQUIT to ftmpirun") {
			j.out.logf("no hang report from the ranks within %v", hangReportWait)
		}
	}()
}

// finish waits for the agents and returns the job's exit code.
func (j *jobRun) finish(job, path string) int {
	for _, a := range j.mh.agents {
		a.Wait()
	}
	code := j.h.exitCode()
	if j.cfg.Hydra && code == 0 {
		if o := j.h.outcome(); o.Failed {
			code = o.Code // hydra: a failed rank makes the job fail
		}
	}
	j.st.finished(j.h, path)
	if j.cfg.Verbose {
		j.out.logf("job %s done in %v, exit code %d", job, time.Since(j.t0).Round(time.Microsecond), code)
	}
	return code
}

// withGoMaxProcs gives Go ranks a share of the host's cores: GOMAXPROCS =
// cores / ranks on the host (at least 1), unless the user set it. Fewer
// runtime threads per rank mean fewer thread wake-ups per message; measured
// on 2 cores: 1-byte latency 5.5 -> 4.4 us (Unix) and 8.7 -> 7.2 us (TCP)
// at np 2, Barrier 247 -> 182 us at np 8. Programs that are not Go ignore it.
func withGoMaxProcs(env []string, ranksOnHost, cores int) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return env
		}
	}
	return append(env, "GOMAXPROCS="+strconv.Itoa(max(1, cores/ranksOnHost)))
}

// Heartbeat settings of the ranks (mpi.EnvHBPeriod, mpi.EnvHBTimeout).
const (
	envHBPeriod  = "FTMPI_HB_PERIOD"
	envHBTimeout = "FTMPI_HB_TIMEOUT"
)

// hbFreeLoad is the number of ranks per core up to which the detector's
// default heartbeat settings are kept.
const hbFreeLoad = 8

// withHeartbeat makes the ranks' failure detector and connection set-up
// load-aware: with more than hbFreeLoad ranks per core on the host, a rank
// can wait for a processor far longer than the default heartbeat timeout
// (1 s) while being perfectly alive (at 500 ranks per core, scheduling
// rounds take seconds), and every heartbeat wakes a process that competes
// for the same cores. So the period and the timeout are scaled by ranks
// per core / hbFreeLoad: at -n 1000 on 2 cores, 6.25 s and 62.5 s. A hang
// is then detected later; an oversubscribed host has nothing better to
// offer (the launcher refuses suspicions of processes it sees alive
// anyway). Unless the user set either variable. The connection set-up's
// bound (FTMPI_CONNECT_TIMEOUT, 30 s) is scaled the same way: a process
// that got the job's address table early dials one still starting, which
// answers once it has the table itself (at -n 1000 on 2 cores, more than
// 30 s later: the set-up failed and the job hung, issue 24).
func withHeartbeat(env []string, ranksOnHost, cores int) []string {
	cores = max(1, cores)
	load := (ranksOnHost + cores - 1) / cores
	if load <= hbFreeLoad {
		return env
	}
	// Scaled with the load, within the ranks' bounds (rankenv): beyond
	// about 48,000 ranks per core the scaled period would pass 10m.
	scale := func(d, most time.Duration) string { return scaleBound(d, load, most).String() }
	set := func(name string) bool {
		return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	}
	out := env
	if !set(envHBPeriod) && !set(envHBTimeout) {
		out = append(out, envHBPeriod+"="+scale(detector.DefaultPeriod, rankenv.MaxHBPeriod),
			envHBTimeout+"="+scale(detector.DefaultTimeout, rankenv.MaxHBTimeout))
	}
	if !set(rankenv.ConnectTimeout) {
		out = append(out, rankenv.ConnectTimeout+"="+scale(defaultConnectTimeout, rankenv.MaxConnectTimeout))
	}
	return out
}

// shmCrowdedLoad is the number of ranks per core above which "auto"
// (the default transport) means Unix sockets rather than shared memory on
// the launcher's host (hostTransport).
const shmCrowdedLoad = 128

// hostTransport is the transport the ranks of a host get: transport as
// asked, but "auto" with more than shmCrowdedLoad ranks per core is
// "unix". So crowded, shared memory costs more than it saves (issue 24,
// 2 cores): ftmpirun -n 500 of bench/scaleulfm started in 11-13 s over
// shared memory and 7.7 s over Unix sockets (17.5 against 20-22 s of CPU),
// and -n 2000 started over Unix sockets in 67 s and survived its kill but
// had not started in 600 s over shared memory (ranks waiting in a
// shared-memory collective: at np 64 they took 1.8 of the 2 cores). An
// explicit "shm" keeps shared memory.
func hostTransport(transport string, ranksOnHost, cores int) string {
	cores = max(1, cores)
	if transport == boot.TransportAuto && (ranksOnHost+cores-1)/cores > shmCrowdedLoad {
		return boot.TransportUnix
	}
	return transport
}

// defaultConnectTimeout is the ranks' default bound on a connection's
// set-up (mpi.DefaultConfig's ConnectTimeout).
const defaultConnectTimeout = 30 * time.Second
