package launch

import (
	"bytes"
	"encoding/hex"
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
	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// multiHost is a job over the hosts of --host/--hostfile or of the Slurm
// allocation it runs in: the head, one agent per host (the head's own
// host, if listed, by a LocalAgent; every other by a remoteAgent over ssh,
// or srun in an allocation), the ranks' specs and their placement.
type multiHost struct {
	h       *head
	place   []int        // host index of each rank
	specs   []RankSpec   // by rank
	agents  []Agent      // by host index
	groups  [][]RankSpec // by host index: the ranks its agent starts
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
// address on the job's network (--interface).
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
	local := -1
	var remote []int
	for i, hs := range cfg.Hosts {
		if local < 0 && isLocalHost(hs.Name) {
			local = i
		} else {
			remote = append(remote, i)
		}
	}
	mh := &multiHost{place: place, agents: make([]Agent, len(cfg.Hosts)), groups: make([][]RankSpec, len(cfg.Hosts))}
	hosts := make([]policy.Host, len(cfg.Hosts))
	for i, hs := range cfg.Hosts {
		hosts[i] = policy.Host{Name: hs.Name, Slots: hs.Slots}
	}
	vars := make([][]string, len(cfg.Hosts))
	cores := make([]int, len(cfg.Hosts))
	var tcpControl string
	var headIP netip.Addr
	var tcpLn net.Listener
	if len(remote) > 0 {
		if cfg.Transport == boot.TransportUnix {
			return fail("--transport unix cannot reach ranks on other hosts (%s)", cfg.Hosts[remote[0]].Name)
		}
		toward := ""
		if cfg.Interface == "" {
			name := cfg.Hosts[remote[0]].Name
			addrs, err := net.LookupHost(name)
			if err != nil || len(addrs) == 0 {
				return fail("cannot resolve host %s (%v): check its name in --host/--hostfile", name, err)
			}
			toward = addrs[0]
		}
		headIP, err = interfaceAddr(cfg.Interface, toward)
		if err != nil {
			return fail("%v", err)
		}
		tcpLn, err = net.Listen("tcp", net.JoinHostPort(headIP.String(), "0"))
		if err != nil {
			return fail("cannot listen for control connections on %s: %v", headIP, err)
		}
		tcpControl = "tcp:" + tcpLn.Addr().String()
	}
	h := newHeadHosts(job, cfg.N, cfg.OnFailure, out, cfg.Verbose, hosts, place, cfg.Spares)
	h.quietLog = cfg.Hydra
	h.key = key // every control connection, local or remote, proves the job's secret
	h.killGrace = cfg.KillGrace
	h.serve(ln)
	if tcpLn != nil {
		h.serve(tcpLn)
	}
	mh.h = h

	// The remote agents, all at once.
	if len(remote) > 0 {
		self := cfg.AgentPath
		if self == "" {
			if self, err = os.Executable(); err != nil {
				h.close()
				return fail("cannot find ftmpirun's own path for the remote agents: %v", err)
			}
		}
		// The job's secret travels in the hello over the agent's ssh
		// standard input (encrypted by ssh, never on a command line).
		var secret bytes.Buffer
		if key != nil {
			_, _ = key.WriteTo(&secret)
		}
		hello := agentwire.Msg{Type: agentwire.THello, Version: agentwire.Version, Job: job, Secret: hex.EncodeToString(secret.Bytes()),
			HBPeriod: int64(cfg.AgentHBPeriod), HBTimeout: int64(cfg.AgentHBTimeout), Interface: cfg.Interface, HeadAddr: headIP.String()}
		errs := make([]error, len(cfg.Hosts))
		var wg sync.WaitGroup
		if useTree(cfg, len(remote)) {
			agents, boots, err := startTree(cfg, remote, hello, headIP, self, h, key, out.logf)
			if err != nil {
				h.close()
				out.logf("%v", err)
				return nil, 1
			}
			mh.boots = boots
			for i, ra := range agents {
				mh.agents[i] = ra
			}
		}
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
				h.close()
				out.logf("cannot start the agent on host %s: %v", cfg.Hosts[i].Name, errs[i])
				return nil, 1
			}
		}
		hostPath := make([]string, len(cfg.Hosts))
		if cfg.PreloadBinary {
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
					mh.closeAgents(5 * time.Second)
					h.close()
					out.logf("cannot preload %s on host %s: %v", path, cfg.Hosts[i].Name, perrs[i])
					return nil, 1
				}
			}
		}
		h.hostPath, h.program = hostPath, path
		for _, i := range remote {
			ra := mh.agents[i].(*remoteAgent)
			h.addAgent(ra)
			cores[i] = ra.ready.Cores
			vars[i] = []string{boot.EnvHost + "=" + cfg.Hosts[i].Name, boot.EnvControl + "=" + tcpControl,
				boot.EnvHostCores + "=" + strconv.Itoa(cores[i]), boot.EnvTmpDir + "=" + ra.ready.TmpDir,
				boot.EnvListen + "=" + ra.ready.Listen}
			if cfg.Verbose {
				out.logf("agent on %s: pid %d, %d cores, address %s", cfg.Hosts[i].Name, ra.ready.Pid, cores[i], ra.ready.Listen)
			}
		}
	}
	if local >= 0 {
		la := NewLocalAgent(cfg.Hosts[local].Name, h)
		la.note = func(line string) { out.logf("%s", line) }
		h.addAgent(la)
		mh.agents[local] = la
		cores[local] = runtime.NumCPU()
		listen := ""
		if headIP.IsValid() {
			listen = headIP.String()
		}
		vars[local] = []string{boot.EnvHost + "=" + cfg.Hosts[local].Name, boot.EnvControl + "=" + control,
			boot.EnvHostCores + "=" + strconv.Itoa(cores[local]), boot.EnvTmpDir + "=" + tmpDir, boot.EnvListen + "=" + listen}
	}
	h.hostAgents, h.hostVars = mh.agents, vars

	onHost := make([]int, len(cfg.Hosts))
	for _, hi := range place {
		onHost[hi]++
	}
	mh.specs = make([]RankSpec, cfg.N)
	for r := range mh.specs {
		hi := place[r]
		env := withGoMaxProcs(baseEnv, onHost[hi], cores[hi])
		env = withHeartbeat(env, onHost[hi], cores[hi])
		info := boot.Info{Job: job, Rank: r, Size: cfg.N, Transport: cfg.Transport, Restart: st.restart,
			Reinit: cfg.OnFailure == OnFailureReinit, Spares: cfg.Spares}
		env = append(append([]string(nil), env...), info.Env()...)
		for _, kv := range vars[hi] {
			name, val, _ := cutEnv(kv)
			env = setEnv(env, name, val)
		}
		p := path
		if h.hostPath != nil && h.hostPath[hi] != "" {
			p = h.hostPath[hi]
		}
		mh.specs[r] = RankSpec{Rank: r, Path: p, Args: cfg.Args, Env: env, Dir: wdir, Auth: key,
			Bind: cfg.BindTo, Slot: len(mh.groups[hi]), ReportBinding: cfg.ReportBindings}
		mh.groups[hi] = append(mh.groups[hi], mh.specs[r])
	}
	return mh, 0
}

// startAll starts each agent's ranks, all agents at once, and returns when
// every rank has been started or has failed to start.
func startAll(agents []Agent, groups [][]RankSpec) {
	var wg sync.WaitGroup
	for i, a := range agents {
		if len(groups[i]) == 0 {
			continue
		}
		wg.Add(1)
		go func(a Agent, specs []RankSpec) { defer wg.Done(); a.Start(specs) }(a, groups[i])
	}
	wg.Wait()
}

// withExports applies -x: "VAR=value" sets VAR; "VAR" passes ftmpirun's
// own value (nothing if it has none).
func withExports(env, exports []string) []string {
	for _, x := range exports {
		name, val, ok := cutEnv(x)
		if !ok {
			v, set := os.LookupEnv(name)
			if !set {
				continue
			}
			val = v
		}
		env = setEnv(env, name, val)
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
