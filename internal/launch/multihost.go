package launch

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// multiHost is a job over the hosts of --host/--hostfile or of the Slurm
// allocation it runs in: the head, one agent per host (the head's own
// host, if listed, by a hostagent.LocalAgent; every other by a remoteAgent over ssh,
// or srun in an allocation), the ranks' specs and their placement.
type multiHost struct {
	h       *head
	place   []int                  // host index of each rank
	specs   []hostagent.RankSpec   // by rank
	agents  []hostagent.Agent      // by host index
	groups  [][]hostagent.RankSpec // by host index: the ranks its agent starts
	remotes []*remoteAgent
	boots   []*bootProc // a tree launch's launch commands (stopped after the agents closed)
}

// closeAgents ends the remote agents' sessions, all at once, then stops
// the launch commands of a tree launch.
func (mh *multiHost) closeAgents(d time.Duration) {
	var wg sync.WaitGroup
	for _, ra := range mh.remotes {
		wg.Add(1)
		go func() { defer wg.Done(); ra.close(d) }()
	}
	wg.Wait()
	stopBoots(mh.boots)
}

// setupHosts starts the agents of a multi-host job and builds its specs.
// On failure it has logged why, cleaned up, and returns nil and the exit
// code. ln/control are the head's Unix control socket (for the ranks on
// its own host); ranks on other hosts dial a TCP listener on the head's
// address on the job's network (--interface). Its steps: place the ranks,
// open that listener (listenRemote), start the head, the remote agents
// (startRemotes) with the program preloaded if asked (preload), the local
// agent, and build every rank's spec (buildSpecs).
func setupHosts(cfg Config, st *launchState, out *output, job, path, tmpDir string, ln net.Listener, control string,
	baseEnv []string, wdir string, key *wireauth.Key) (*multiHost, int) {
	fail := func(format string, args ...any) (*multiHost, int) {
		out.logf(format, args...)
		ln.Close()
		return nil, 1
	}
	place, err := mapRanks(cfg.Hosts, cfg.N, cfg.MapBy, cfg.Oversubscribe)
	if err != nil {
		return fail("%v", err)
	}
	local, remote := splitHosts(cfg.Hosts)
	mh := &multiHost{place: place, agents: make([]hostagent.Agent, len(cfg.Hosts)), groups: make([][]hostagent.RankSpec, len(cfg.Hosts))}
	hosts := make([]policy.Host, len(cfg.Hosts))
	for i, hs := range cfg.Hosts {
		hosts[i] = policy.Host{Name: hs.Name, Slots: hs.Slots}
	}
	rl := remoteListen{}
	if len(remote) > 0 {
		if cfg.Transport == boot.TransportUnix {
			return fail("--transport unix cannot reach ranks on other hosts (%s)", cfg.Hosts[remote[0]].Name)
		}
		if rl, err = listenRemote(cfg, cfg.Hosts[remote[0]].Name); err != nil {
			return fail("%v", err)
		}
	}
	h := startHead(cfg, out, job, hosts, place, key, ln, rl.ln)
	mh.h = h
	vars := make([][]string, len(cfg.Hosts))
	cores := make([]int, len(cfg.Hosts))
	if len(remote) > 0 {
		if err := mh.startRemotes(cfg, remote, job, rl.ip, key, out); err != nil {
			h.close()
			out.logf("%v", err)
			return nil, 1
		}
		if h.hostPath, err = mh.preload(cfg, remote, path); err != nil {
			mh.closeAgents(5 * time.Second)
			h.close()
			out.logf("%v", err)
			return nil, 1
		}
		h.program = path
		mh.remoteVars(cfg, remote, rl.control, vars, cores, out)
	}
	if local >= 0 {
		la := hostagent.NewLocalAgent(cfg.Hosts[local].Name, h)
		la.Note = func(line string) { out.logf("%s", line) }
		h.addAgent(la)
		mh.agents[local] = la
		cores[local] = runtime.NumCPU()
		listen := ""
		if rl.ip.IsValid() {
			listen = rl.ip.String()
		}
		vars[local] = []string{boot.EnvHost + "=" + cfg.Hosts[local].Name, boot.EnvControl + "=" + control,
			boot.EnvHostCores + "=" + strconv.Itoa(cores[local]), boot.EnvTmpDir + "=" + tmpDir, boot.EnvListen + "=" + listen}
	}
	h.hostAgents, h.hostVars = mh.agents, vars
	mh.buildSpecs(cfg, st, job, path, baseEnv, wdir, key, vars, cores)
	return mh, 0
}

// splitHosts returns the index of the first host of hosts that is this
// one (-1: none) and the indexes of all others.
func splitHosts(hosts []HostSlots) (local int, remote []int) {
	local = -1
	for i, hs := range hosts {
		if local < 0 && isLocalHost(hs.Name) {
			local = i
		} else {
			remote = append(remote, i)
		}
	}
	return local, remote
}

// remoteListen is the head's control listener for the ranks on other
// hosts: on ip, the head's address on the job's network; control is its
// address as the ranks are told it.
type remoteListen struct {
	ip      netip.Addr
	ln      net.Listener
	control string
}

// listenRemote opens the head's TCP control listener on the interface of
// --interface, else on the address that reaches first (a remote host).
func listenRemote(cfg Config, first string) (remoteListen, error) {
	toward := ""
	if cfg.Interface == "" {
		addrs, err := net.LookupHost(first)
		if err != nil || len(addrs) == 0 {
			return remoteListen{}, fmt.Errorf("cannot resolve host %s (%v): check its name in --host/--hostfile", first, err)
		}
		toward = addrs[0]
	}
	ip, err := interfaceAddr(cfg.Interface, toward)
	if err != nil {
		return remoteListen{}, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return remoteListen{}, fmt.Errorf("cannot listen for control connections on %s: %v", ip, err)
	}
	return remoteListen{ip: ip, ln: ln, control: "tcp:" + ln.Addr().String()}, nil
}

// startHead makes the job's head and serves its control listeners (nil
// ones skipped): every control connection, local or remote, proves the
// job's secret.
func startHead(cfg Config, out *output, job string, hosts []policy.Host, place []int, key *wireauth.Key, lns ...net.Listener) *head {
	h := newHeadHosts(job, cfg.N, cfg.OnFailure, out, cfg.Verbose, hosts, place, cfg.Spares)
	h.quietLog = cfg.Hydra
	h.key = key
	h.killGrace = cfg.KillGrace
	for _, ln := range lns {
		if ln != nil {
			h.serve(ln)
		}
	}
	return h
}

// startRemotes starts the agents of the remote hosts, all at once (through
// a tree when useTree says so), and records them in mh. On failure the
// started ones are closed and the error names the first host that failed.
func (mh *multiHost) startRemotes(cfg Config, remote []int, job string, headIP netip.Addr, key *wireauth.Key, out *output) error {
	h := mh.h
	self := cfg.AgentPath
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("cannot find ftmpirun's own path for the remote agents: %v", err)
		}
	}
	// The job's secret travels in the hello over the agent's ssh standard
	// input (encrypted by ssh, never on a command line).
	var secret bytes.Buffer
	if key != nil {
		_, _ = key.WriteTo(&secret)
	}
	hello := agentwire.Msg{Type: agentwire.THello, Version: agentwire.Version, Job: job, Secret: hex.EncodeToString(secret.Bytes()),
		HBPeriod: int64(cfg.AgentHBPeriod), HBTimeout: int64(cfg.AgentHBTimeout), Interface: cfg.Interface, HeadAddr: headIP.String(),
		Relay: cfg.Relay}
	if useTree(cfg, len(remote)) {
		agents, boots, err := startTree(cfg, remote, hello, headIP, self, h, key, out.logf)
		if err != nil {
			return err
		}
		mh.boots = boots
		for i, ra := range agents {
			mh.agents[i] = ra
		}
	}
	errs := make([]error, len(cfg.Hosts))
	var wg sync.WaitGroup
	for _, i := range remote {
		if mh.agents[i] != nil {
			continue // attached through the tree
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			hm := hello
			hm.Host = cfg.Hosts[i].Name
			ra, err := startRemote(hm.Host, agentArgv(cfg, hm.Host, self), hm, h, func(reason string, pids map[int]int) { h.hostLost(i, reason, pids) })
			if err != nil {
				errs[i] = err
				return
			}
			mh.agents[i] = ra
		}(i)
	}
	wg.Wait()
	for _, i := range remote {
		if ra, ok := mh.agents[i].(*remoteAgent); ok && ra != nil {
			mh.remotes = append(mh.remotes, ra)
		}
	}
	for _, i := range remote {
		if errs[i] != nil {
			mh.closeAgents(5 * time.Second)
			return fmt.Errorf("cannot start the agent on host %s: %v", cfg.Hosts[i].Name, errs[i])
		}
	}
	return nil
}

// preload copies the program to every remote host with --preload-binary,
// all at once, and returns where it is on each (by host index; "": not
// copied). Without the flag every entry is "".
func (mh *multiHost) preload(cfg Config, remote []int, path string) ([]string, error) {
	hostPath := make([]string, len(cfg.Hosts))
	if !cfg.PreloadBinary {
		return hostPath, nil
	}
	perrs := make([]error, len(cfg.Hosts))
	var pw sync.WaitGroup
	for _, i := range remote {
		pw.Add(1)
		go func(i int) {
			defer pw.Done()
			hostPath[i], perrs[i] = mh.agents[i].(*remoteAgent).preload(path)
		}(i)
	}
	pw.Wait()
	for _, i := range remote {
		if perrs[i] != nil {
			return nil, fmt.Errorf("cannot preload %s on host %s: %v", path, cfg.Hosts[i].Name, perrs[i])
		}
	}
	return hostPath, nil
}

// remoteVars gives the head every remote agent and fills in, per remote
// host, the cores its agent counted and the rank variables that differ by
// host (host id, control address, cores, job directory, listen address).
func (mh *multiHost) remoteVars(cfg Config, remote []int, tcpControl string, vars [][]string, cores []int, out *output) {
	for _, i := range remote {
		ra := mh.agents[i].(*remoteAgent)
		mh.h.addAgent(ra)
		cores[i] = ra.ready.Cores
		control := tcpControl
		if ra.ready.Control != "" { // the agent relays its ranks' control connections (relay.go)
			control = ra.ready.Control
			ra.relay.Store(mh.h.newRelayLink(ra.w))
		}
		vars[i] = []string{boot.EnvHost + "=" + cfg.Hosts[i].Name, boot.EnvControl + "=" + control,
			boot.EnvHostCores + "=" + strconv.Itoa(cores[i]), boot.EnvTmpDir + "=" + ra.ready.TmpDir,
			boot.EnvListen + "=" + ra.ready.Listen}
		if cfg.Verbose {
			out.logf("agent on %s: pid %d, %d cores, address %s", cfg.Hosts[i].Name, ra.ready.Pid, cores[i], ra.ready.Listen)
		}
	}
}

// buildSpecs makes every rank's spec (mh.specs) and groups them by host
// (mh.groups): the base environment scaled to the ranks on the host, the
// rank's identity and the host's variables.
func (mh *multiHost) buildSpecs(cfg Config, st *launchState, job, path string, baseEnv []string, wdir string, key *wireauth.Key,
	vars [][]string, cores []int) {
	onHost := make([]int, len(cfg.Hosts))
	for _, hi := range mh.place {
		onHost[hi]++
	}
	hostPath := mh.h.hostPath
	mh.specs = make([]hostagent.RankSpec, cfg.N)
	for r := range mh.specs {
		hi := mh.place[r]
		env := withGoMaxProcs(baseEnv, onHost[hi], cores[hi])
		env = withHeartbeat(env, onHost[hi], cores[hi])
		info := boot.Info{Job: job, Rank: r, Size: cfg.N, Transport: cfg.Transport, Restart: st.restart,
			Reinit: cfg.OnFailure == OnFailureReinit, Spares: cfg.Spares}
		env = append(append([]string(nil), env...), info.Env()...)
		for _, kv := range vars[hi] {
			name, val, _ := hostagent.CutEnv(kv)
			env = hostagent.SetEnv(env, name, val)
		}
		p := path
		if hostPath != nil && hostPath[hi] != "" {
			p = hostPath[hi]
		}
		mh.specs[r] = hostagent.RankSpec{Rank: r, Path: p, Args: cfg.Args, Env: env, Dir: wdir, Auth: key,
			Bind: cfg.rankBind(), Slot: len(mh.groups[hi]), ReportBinding: cfg.ReportBindings}
		mh.groups[hi] = append(mh.groups[hi], mh.specs[r])
	}
}

// startAll starts each agent's ranks, all agents at once, and returns when
// every rank has been started or has failed to start.
func startAll(agents []hostagent.Agent, groups [][]hostagent.RankSpec) {
	var wg sync.WaitGroup
	for i, a := range agents {
		if len(groups[i]) == 0 {
			continue
		}
		wg.Add(1)
		go func(a hostagent.Agent, specs []hostagent.RankSpec) { defer wg.Done(); a.Start(specs) }(a, groups[i])
	}
	wg.Wait()
}

// withExports applies -x: "VAR=value" sets VAR; "VAR" passes ftmpirun's
// own value (nothing if it has none).
func withExports(env, exports []string) []string {
	for _, x := range exports {
		name, val, ok := hostagent.CutEnv(x)
		if !ok {
			v, set := os.LookupEnv(name)
			if !set {
				continue
			}
			val = v
		}
		env = hostagent.SetEnv(env, name, val)
	}
	return env
}

// agentArgv is the command that starts the agent on host: the launch agent
// (--launch-agent, $FTMPI_SSH) run as CMD HOST COMMAND; else, inside a
// Slurm allocation, one srun step on that node (srunAgentArgs); else ssh.
func agentArgv(cfg Config, host, self string) []string {
	launch := strings.Fields(cfg.LaunchAgent)
	if len(launch) == 0 && cfg.SlurmJob != "" {
		return srunAgentArgs(host, self)
	}
	if len(launch) == 0 {
		launch = []string{"ssh"}
	}
	return append(append(launch, host), shellQuote(self)+" "+AgentCommand)
}

// srunAgentArgs starts the agent as a step of one task on host, inside the
// allocation (SLURM_JOB_ID is in ftmpirun's environment): sharing the
// node's CPUs with every other step (--overlap; without --exact the step
// has all of them), bound to none (the ranks inherit the agent's
// affinity), without PMI (the agent is no MPI process), the step kept
// when a task fails (-K0: the agent decides), and unbuffered: slurmstepd
// otherwise holds output until a newline, and agentwire frames are binary.
// The hello still travels on the step's standard input (srun forwards its
// own to the one task).
func srunAgentArgs(host, self string) []string {
	return []string{"srun", "--nodes=1", "--ntasks=1", "--nodelist=" + host, "--overlap", "--cpu-bind=none",
		"--mpi=none", "--kill-on-bad-exit=0", "--unbuffered", "--quiet", "--job-name=ftmpi-agent", self, AgentCommand}
}
