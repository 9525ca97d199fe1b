package boot

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot/pmi"
	"github.com/ftmpi/ftmpi/internal/ownerdir"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// A process started by a foreign launcher (Slurm's srun --mpi=pmi2,
// MPICH's mpiexec.hydra) has no ftmpirun head: no FTMPI_* identity, no
// control connection, no job secret handed down. It finds itself through
// the PMI environment (FromPMIEnv), and the one start-up exchange goes
// through the launcher's PMI server: every process puts its endpoint (and
// rank 0 the job's secret) and fences; then, under hydra or without a
// readable layout, it gets everybody's (PMIJob.Exchange), and under srun
// (the layout published: Nodes) it gets only the secret and a peer's
// endpoint when it first needs it (Publish's PeerTable); either way it
// fences again (Settle) once its transports take connections. After that, PMI is used only for those gets, to
// finalize or to abort: no PMI fence is ever needed again, so no failure
// can hang one. What only a head can do is refused with NoHeadError.

// PMI keys of the start-up exchange.
const (
	pmiKeyAuth = "ftmpi-auth" // the job's secret, put by rank 0
	pmiKeyEp   = "ftmpi-ep-"  // + process id: the process's Endpoint (JSON)
	pmiDirPfx  = "ftmpi-pmi-" // the private socket directory of a process (os.TempDir)
	envSlurm   = "SLURM_STEP_ID"
	launchSrun = "srun (PMI)"
	// EnvPMIEndpoints chooses how a process started by a PMI launcher
	// reads its peers' endpoints: "lazy" (the default: each when first
	// needed, where the launcher publishes its layout and is not hydra)
	// or "all" (every endpoint at start, as under hydra). No MPI
	// counterpart.
	EnvPMIEndpoints = "FTMPI_PMI_ENDPOINTS"
	launchMPI       = "mpiexec (PMI)"
)

// PMIJob is a process's PMI connection, from FromPMIEnv to Finalize.
type PMIJob struct {
	pc       *pmi.Conn
	info     Info
	launcher string // "srun (PMI)" or "mpiexec (PMI)", for error messages
	usr1     chan os.Signal
	eager    bool       // FTMPI_PMI_ENDPOINTS=all: Nodes says nil
	mu       sync.Mutex // one PMI request at a time: a PeerTable's gets come from any goroutine
}

// ignoreUSR1 keeps hydra's failure signal from killing the process:
// with -disable-auto-cleanup, hydra's proxy sends SIGUSR1 to every
// process of the job when one dies (MPICH's ranks take it as a hint),
// and a Go program that does not catch SIGUSR1 dies of it. The ranks
// detect the failure themselves.
func (j *PMIJob) ignoreUSR1() {
	j.usr1 = make(chan os.Signal, 1)
	signal.Notify(j.usr1, syscall.SIGUSR1)
}

// checkSpares says whether spares (EnvSpares, set by the user under
// srun or mpiexec) of a start set of n processes leave at least one rank:
// the last spares processes wait as spare processes, CommWorld has the
// others (Info.WorldSize). Every process, spares included, takes part in
// the start-up exchange.
func checkSpares(n, spares int) error {
	if spares < 0 || spares >= n {
		return fmt.Errorf("boot: %s=%d must leave at least one of the %d processes in the world", EnvSpares, spares, n)
	}
	return nil
}

// FromPMIEnv recognises a process started by a PMI launcher (PMI_FD or
// PMI_PORT set, and no FTMPI_RANK: ftmpirun's own environment wins),
// opens the PMI connection and fills Info: rank and size from the
// server, Host from the machine's identity (hostname and boot id), a
// private socket directory, the transport and TCP address from
// FTMPI_TRANSPORT and FTMPI_LISTEN. ok false (nil error): not a PMI
// launch. Info.Auth stays nil: the secret comes with the exchange.
func FromPMIEnv() (info Info, job *PMIJob, ok bool, err error) {
	return fromPMI(os.LookupEnv, pmi.Dial)
}

// FromPMIWith is FromPMIEnv with the environment read through lookup and
// the PMI connection opened by dial: for tests that run a PMI job's
// processes against an in-process server (pmitest). It has no MPI
// counterpart.
func FromPMIWith(lookup func(string) (string, bool), dial func(pmi.Env) (*pmi.Conn, error)) (Info, *PMIJob, bool, error) {
	return fromPMI(lookup, dial)
}

func fromPMI(lookup func(string) (string, bool), dial func(pmi.Env) (*pmi.Conn, error)) (info Info, job *PMIJob, ok bool, err error) {
	if _, set := lookup(EnvRank); set {
		return Info{}, nil, false, nil
	}
	env, ok, err := pmi.FromEnv(lookup)
	if err != nil || !ok {
		return Info{}, nil, false, err
	}
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	launcher := launchMPI
	if get(envSlurm) != "" {
		launcher = launchSrun
	}
	spares := 0
	if v := get(EnvSpares); v != "" {
		if spares, err = strconv.Atoi(v); err != nil {
			return Info{}, nil, false, fmt.Errorf("boot: %s=%q is not an integer", EnvSpares, v)
		}
	}
	switch v := get(EnvReinit); v {
	case "", "0":
	case "1":
		info.Reinit = true // MPI_Reinit without a head: spares are the new incarnations
	default:
		return Info{}, nil, false, fmt.Errorf("boot: %s=%q must be 0 or 1", EnvReinit, v)
	}
	eager := false
	switch v := get(EnvPMIEndpoints); v {
	case "", "lazy":
	case "all":
		eager = true
	default:
		return Info{}, nil, false, fmt.Errorf("boot: %s=%q must be lazy or all", EnvPMIEndpoints, v)
	}
	info.Transport = get(EnvTransport)
	switch info.Transport {
	case "":
		info.Transport = TransportAuto
	case TransportAuto, TransportUnix, TransportTCP, TransportShm:
	default:
		return Info{}, nil, false, fmt.Errorf("boot: %s=%q must be auto, unix, tcp or shm", EnvTransport, info.Transport)
	}
	if v := get(EnvListen); v != "" {
		if net.ParseIP(v) == nil {
			return Info{}, nil, false, fmt.Errorf("boot: %s=%q is not an IP address", EnvListen, v)
		}
		info.Listen = v
	}
	pc, err := dial(env)
	if err != nil {
		return Info{}, nil, false, fmt.Errorf("boot: started by %s: %w", launcher, err)
	}
	if err = checkSpares(pc.Size(), spares); err != nil {
		pc.Close()
		return Info{}, nil, false, err
	}
	info.Size, info.Universe, info.Spares = pc.Size(), pc.Size(), spares
	info.Rank, info.Proc = pc.Rank(), pc.Rank()
	info.Job = pc.KVSName()
	info.Host = HostID()
	if info.Listen == "" && info.Transport != TransportUnix {
		info.Listen = hostAddr()
	}
	if info.Transport != TransportTCP {
		// Owned (package ownerdir): the directory of a process killed
		// before it could remove it is swept by the next one started here.
		dir, err := ownerdir.Make(os.TempDir(), pmiDirPfx)
		if err != nil {
			pc.Close()
			return Info{}, nil, false, fmt.Errorf("boot: socket directory: %w", err)
		}
		info.TmpDir = dir
	}
	job = &PMIJob{pc: pc, info: info, launcher: launcher, eager: eager}
	if launcher == launchMPI {
		job.ignoreUSR1()
	}
	return info, job, true, nil
}

// HostID identifies the machine: its hostname, its boot id and its
// network namespace (where Linux tells them), so that two containers with
// one hostname, or two namespace "hosts" of one kernel, are told apart:
// processes with one HostID use the local transports, others TCP.
func HostID() string {
	h, _ := os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		h += "/" + strings.TrimSpace(string(b))
	}
	if ns, err := os.Readlink("/proc/self/ns/net"); err == nil {
		h += "/" + ns
	}
	return h
}

// hostAddr is the address other hosts reach this one at: the first
// non-loopback address of an interface that is up (IPv4 first), else
// loopback (a machine alone). FTMPI_LISTEN overrides it.
func hostAddr() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	var v6 string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			if ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
			if v6 == "" {
				v6 = ipn.IP.String()
			}
		}
	}
	return v6
}

// Info is what the process learnt at start.
func (j *PMIJob) Info() Info { return j.info }

// Launcher names the launcher for messages ("srun (PMI)", "mpiexec (PMI)").
func (j *PMIJob) Launcher() string { return j.launcher }

// NoHeadError is the error of op (an MPI call or a launcher mode) that
// needs ftmpirun's head, which a process started by launcher does not
// have. The one text of every such refusal.
func NoHeadError(op, launcher string) error {
	return fmt.Errorf("%s is not available when started by %s: start with ftmpirun or use spare processes", op, launcher)
}

// Exchange publishes self and returns every process's endpoint, by
// process id, and the job's secret: Publish, then a get of every
// endpoint (n gets: a process that does not need every peer at once uses
// Publish's table instead). Settle is its closing fence, as Publish's: the
// caller installs the secret and its peers first. It fails (never hangs)
// when a process does not reach the fence within the fence deadline or
// the launcher gives up on the job.
func (j *PMIJob) Exchange(self Endpoint) ([]Endpoint, *wireauth.Key, error) {
	t, key, err := j.Publish(self)
	if err != nil {
		return nil, nil, err
	}
	eps, err := t.All()
	if err != nil {
		return nil, nil, err
	}
	return eps, key, nil
}

// Publish is the start-up exchange without its gets: rank 0 makes the
// job's secret and puts it beside its endpoint, every process puts its
// endpoint, one fence, then the get of the secret. It returns the secret
// and the job's endpoint table, whose Get makes the one PMI get of a
// peer's endpoint when that peer is first asked for (issue 24 item 2).
// Every process of the job published before the fence ended (a process
// that died before it fails the fence, within its deadline, as in
// Exchange), so a later get finds the endpoint even of a peer that died
// since; reaching it is then the transport's failure, as with Exchange's
// table. A get after the start-up is a PMI request that may be
// outstanding when this process dies (see Settle about
// hydra). Settle is its closing fence. It fails (never hangs) as Exchange
// does.
func (j *PMIJob) Publish(self Endpoint) (*PeerTable, *wireauth.Key, error) {
	self.Rank = j.info.Proc
	if self.Host == "" {
		self.Host = j.info.Host
	}
	b, err := json.Marshal(self)
	if err != nil {
		return nil, nil, fmt.Errorf("boot: encode endpoint: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.info.Proc == 0 {
		key, err := wireauth.New()
		if err != nil {
			return nil, nil, fmt.Errorf("boot: %w", err)
		}
		if err := j.pc.PutLong(pmiKeyAuth, key.Bytes()); err != nil {
			return nil, nil, j.fail(err)
		}
	}
	if err := j.pc.PutLong(pmiKeyEp+strconv.Itoa(j.info.Proc), b); err != nil {
		return nil, nil, j.fail(err)
	}
	if err := j.pc.Fence(); err != nil {
		return nil, nil, j.fail(err)
	}
	kb, found, err := j.pc.GetLong(pmiKeyAuth)
	if err != nil {
		return nil, nil, j.fail(err)
	}
	if !found {
		return nil, nil, j.fail(fmt.Errorf("rank 0 published no job secret (is it an ftmpi program?)"))
	}
	key, err := wireauth.FromBytes(kb)
	if err != nil {
		return nil, nil, j.fail(fmt.Errorf("the job secret of rank 0: %w", err))
	}
	return newPeerTable(j.info.Universe, j.getEndpoint), key, nil
}

// Nodes returns the launcher's node of every process, by process id
// (PMI_process_mapping), for a start-up that reads a peer's endpoint only
// when it first needs it (Publish): nil (and no error) when every endpoint
// must be read at start instead (Exchange), which is when the launcher
// publishes no mapping or one this package cannot read (correct either
// way, only slower), and always under hydra. Hydra's proxy (MPICH 4.0.2)
// crashes, and takes the whole job down, when it answers a PMI request of
// a process that died with the request outstanding (it writes the answer
// to the descriptor it closed when it reaped the process: "unable to
// forward PMI response"; boot: TestPMIExchangeEndsAfterEveryGet), and
// with FTMPI_PMI_ENDPOINTS=all. A get
// made on first need is made at any time after Init, so a process killed
// then (what a fault-tolerant program must survive) could take the job
// down with it; Exchange's gets all end before the closing fence, before
// any process leaves Init. Slurm's step daemon has no such fault: a dead
// process's get is dropped with its connection. It has no MPI
// counterpart.
func (j *PMIJob) Nodes() ([]int, error) {
	if j.launcher == launchMPI || j.eager {
		return nil, nil
	}
	j.mu.Lock()
	v, found, err := j.pc.JobAttr(pmiKeyMapping)
	j.mu.Unlock()
	if err != nil {
		return nil, j.fail(err)
	}
	if !found {
		return nil, nil
	}
	nodes, err := ParseProcessMapping(v, j.info.Universe)
	if err != nil {
		return nil, nil // read every endpoint instead
	}
	return nodes, nil
}

// Settle is the closing fence of a Publish or an Exchange, called once
// this process takes connections: the job's secret and its peers
// installed in its transports. A process released from it dials at once,
// and a peer released later (descheduled, on a loaded host) must take the
// handshake meanwhile, not hold it until it has the secret or its peers
// (at 1,000 tasks under srun on 2 cores, past the dialler's connect
// deadline: the peer was declared failed). It is also why an Exchange's
// gets are safe under hydra: no process leaves the start-up before every
// process has its answers, so a process that fails once any process left
// Init has no PMI request outstanding (hydra 4.0.2's proxy crashes when it
// answers a request of a process that died meanwhile, a write to the
// descriptor it closed, and takes the whole job down with it: a spare
// killed while it still read endpoints did that). It has no MPI
// counterpart.
func (j *PMIJob) Settle() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.pc.Fence(); err != nil {
		return j.fail(err)
	}
	return nil
}

// getEndpoint is the PMI get of process p's endpoint (PeerTable's fetch).
func (j *PMIJob) getEndpoint(p int) (Endpoint, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var ep Endpoint
	v, found, err := j.pc.GetLong(pmiKeyEp + strconv.Itoa(p))
	if err != nil {
		return ep, j.fail(fmt.Errorf("no endpoint of process %d (did it end before the fence?): %w", p, err))
	}
	if !found {
		return ep, j.fail(fmt.Errorf("process %d published no endpoint (is it an ftmpi program?)", p))
	}
	if err := json.Unmarshal(v, &ep); err != nil {
		return ep, j.fail(fmt.Errorf("bad endpoint of process %d: %w", p, err))
	}
	ep.Rank = p
	return ep, nil
}

func (j *PMIJob) fail(err error) error {
	return fmt.Errorf("boot: start-up exchange through %s: %w", j.launcher, err)
}

// Finalize ends the PMI connection (PMI finalize: not a fence) and
// removes the process's socket directory.
func (j *PMIJob) Finalize() error {
	j.mu.Lock()
	err := j.pc.Finalize()
	j.mu.Unlock()
	j.RemoveDir()
	if err != nil {
		return fmt.Errorf("boot: finalize with %s: %w", j.launcher, err)
	}
	return nil
}

// Abort asks the launcher to end the whole job with code. It first waits
// (at most 2 s) until the launcher has read what the process wrote to its
// standard output and error: hydra kills the job on the abort, and a
// report still in the pipe (a hang report, the reason printed before
// MPI_Abort) would be lost.
func (j *PMIJob) Abort(code int, reason string) error {
	awaitRead([]int{1, 2}, 2*time.Second)
	j.RemoveDir() // first: the launcher kills the process
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.pc.Abort(code, reason, j.launcher == launchMPI)
}

// Close ends the PMI connection after a failed Init (or after Finalize)
// and removes the socket directory. It finalizes briefly first: a process
// that leaves PMI without finalize is a crash to hydra, which then
// SIGKILLs every process of the job, and may do so before it forwarded
// the error the process printed.
func (j *PMIJob) Close() {
	j.mu.Lock()
	j.pc.FinalizeWithin(time.Second)
	j.mu.Unlock()
	j.RemoveDir()
}

// RemoveDir removes the process's socket directory (its sockets stop
// accepting connections): at Finalize, Abort, Close, and before a process
// ends itself (fail-stop without a head).
func (j *PMIJob) RemoveDir() {
	if j.usr1 != nil {
		signal.Stop(j.usr1)
	}
	if j.info.TmpDir != "" {
		ownerdir.Remove(j.info.TmpDir)
	}
}

// RemovePeerDir removes the socket directory of a process of this host
// that failed (it cannot remove it itself), given the path of one of its
// sockets. Only a directory this bootstrap makes is removed.
func RemovePeerDir(sockPath string) {
	dir := sockPath[:max(0, strings.LastIndexByte(sockPath, '/'))]
	if dir == "" || !strings.HasPrefix(dir[strings.LastIndexByte(dir, '/')+1:], pmiDirPfx) {
		return
	}
	ownerdir.Remove(dir)
}
