// Package boot is how a rank learns who it is and where its peers are.
//
// A rank started by ftmpirun finds its identity (job, rank, size, host,
// incarnation) in environment variables (see the Env* constants and
// FromEnv). It then dials the launcher's control endpoint (Connect),
// publishes its own endpoint and receives everybody's (Exchange, a
// PMI-style put + fence + get), and at the end takes part in the
// Finalize fence. Abort asks the launcher to tear the job down, Suspect
// asks it to kill a peer this rank believes has failed (fail-stop
// enforcement), and Events delivers launcher notifications such as the
// failure of a rank.
//
// The package must not carry messages between ranks: it only talks to the
// launcher. A program started without ftmpirun (FromEnv reports ok=false)
// runs as a singleton and needs no Client at all.
package boot

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// Env variable names set by ftmpirun for each rank.
const (
	EnvJob         = "FTMPI_JOB"         // job id (random hex)
	EnvRank        = "FTMPI_RANK"        // rank in 0..Size-1
	EnvSize        = "FTMPI_SIZE"        // number of ranks
	EnvControl     = "FTMPI_CONTROL"     // "unix:/path/to/sock" or "tcp:127.0.0.1:port": the control endpoint of the launcher
	EnvHost        = "FTMPI_HOST"        // id of the host/agent the rank runs on (ranks with equal Host may use unix sockets)
	EnvHostCores   = "FTMPI_HOST_CORES"  // cores of that host as the launcher counts them (the same for every rank of the host; 0 or unset: not told)
	EnvTmpDir      = "FTMPI_TMPDIR"      // per-job directory, created by the launcher, removed when the job ends (ranks put unix sockets there)
	EnvTransport   = "FTMPI_TRANSPORT"   // "auto" (default: shared memory on one host, TCP to others), "unix", "tcp" (force TCP even on one host) or "shm"
	EnvIncarnation = "FTMPI_INCARNATION" // 0 for the first start of a rank; later respawns increase it
	EnvEpoch       = "FTMPI_EPOCH"       // Reinit epoch a respawned rank joins (0 at the first start)
	EnvReinit      = "FTMPI_REINIT"      // "1" when the launcher respawns failed ranks for MPI_Reinit (--on-failure reinit)
	EnvProc        = "FTMPI_PROC"        // process id in the job: the rank for the first processes, >= their count for spawned ones (default: the rank)
	EnvUniverse    = "FTMPI_UNIVERSE"    // number of process ids in use when the process started (default: the size)
	EnvListen      = "FTMPI_LISTEN"      // IP address the rank's TCP listener binds (the host's address on the job's network; unset: 127.0.0.1)
	EnvParent      = "FTMPI_PARENT"      // spawned processes: "PAIR,PAIR;PROC,PROC,...": the context pairs of the intercommunicator to the parents and the parents' process ids in rank order
	EnvAppNum      = "FTMPI_APPNUM"      // spawned processes of MPI_Comm_spawn_multiple: the index of their command (MPI_APPNUM; unset: 0)
	EnvSpares      = "FTMPI_SPARES"      // K: the last K processes of the start set (ranks Size-K..Size-1) are spares that wait inside MPI_Init until a repair takes them; CommWorld has Size-K ranks (unset: 0)
)

// EnvRestart is set by ftmpirun --restart-on-failure: 0 for the first
// launch of the job, k for its k-th relaunch after a failure
// (Checkpoint-on-Failure; the ranks restart from their checkpoints).
const EnvRestart = "FTMPI_RESTART"

// Transport values accepted in EnvTransport.
const (
	TransportAuto = "auto"
	TransportUnix = "unix"
	TransportTCP  = "tcp"
	TransportShm  = "shm"
)

// Info is what a rank knows about itself before talking to anybody.
type Info struct {
	Job         string // job id
	Restart     int    // how many times ftmpirun relaunched the job before this launch (EnvRestart)
	Rank, Size  int    // 0 <= Rank < Size
	Control     string // control endpoint of the launcher ("unix:PATH" or "tcp:HOST:PORT")
	Host        string // host/agent id; ranks with equal Host share a machine
	HostCores   int    // cores of the host as the launcher counts them (0: not told); published in the Endpoint so every rank knows every host's
	TmpDir      string // per-job directory for unix sockets (may be empty)
	Transport   string // "auto", "unix", "tcp" or "shm"
	Incarnation int    // 0 on first start, increased by respawns
	Proc        int    // process id in the job (= Rank unless spawned): the address of this process for every other one
	Universe    int    // process ids 0..Universe-1 existed when the process started (= Size unless spawned)
	ParentPairs []int  // spawned processes: the context pairs of the intercommunicator to the parents
	ParentProcs []int  // spawned processes: the parents' process ids, in their rank order
	Epoch       int    // Reinit epoch to join at start (0 at the first start)
	Reinit      bool   // the launcher respawns failed ranks (--on-failure reinit)
	Listen      string // IP address for the rank's TCP listener (EnvListen; "": loopback)
	// Spares is how many of the start set's processes are spares
	// (EnvSpares): the last ones, Rank >= Size-Spares. They take part in
	// the endpoint exchange and then wait inside Init for an activation
	// (IsSpare); CommWorld has WorldSize ranks.
	Spares int
	// Auth is the job's secret, read by FromEnv from the descriptor the
	// launcher handed over (wireauth.EnvFD); nil: none was. Connect and
	// the socket transport authenticate every connection with it. It is
	// never part of Env.
	Auth *wireauth.Key
}

// FromEnv reads Info from the environment. ok=false (and a nil error) when
// EnvRank is unset: the program was not started by ftmpirun and runs as a
// singleton. Malformed values give an error naming the variable.
//
// The job's secret is read from its inherited descriptor (wireauth.EnvFD)
// and the descriptor closed, so FromEnv reads it once per process: a
// second call finds the descriptor gone and fails.
func FromEnv() (info Info, ok bool, err error) {
	info, ok, err = fromLookup(os.LookupEnv)
	if !ok || err != nil {
		return info, ok, err
	}
	if info.Auth, err = wireauth.Inherit(os.Getenv(wireauth.EnvFD)); err != nil {
		return Info{}, false, fmt.Errorf("boot: %w", err)
	}
	return info, true, nil
}

func fromLookup(lookup func(string) (string, bool)) (info Info, ok bool, err error) {
	rankStr, present := lookup(EnvRank)
	if !present {
		return Info{}, false, nil
	}
	get := func(name string) string { v, _ := lookup(name); return strings.TrimSpace(v) }
	atoi := func(name, v string, min int) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("boot: %s=%q is not an integer", name, v)
		}
		if n < min {
			return 0, fmt.Errorf("boot: %s=%d must be >= %d", name, n, min)
		}
		return n, nil
	}
	if info.Rank, err = atoi(EnvRank, strings.TrimSpace(rankStr), 0); err != nil {
		return Info{}, false, err
	}
	sizeStr, present := lookup(EnvSize)
	if !present {
		return Info{}, false, fmt.Errorf("boot: %s is set but %s is missing", EnvRank, EnvSize)
	}
	if info.Size, err = atoi(EnvSize, strings.TrimSpace(sizeStr), 1); err != nil {
		return Info{}, false, err
	}
	if info.Rank >= info.Size {
		return Info{}, false, fmt.Errorf("boot: %s=%d out of range for %s=%d", EnvRank, info.Rank, EnvSize, info.Size)
	}
	if v := get(EnvIncarnation); v != "" {
		if info.Incarnation, err = atoi(EnvIncarnation, v, 0); err != nil {
			return Info{}, false, err
		}
	}
	info.Proc, info.Universe = info.Rank, info.Size
	if v := get(EnvProc); v != "" {
		if info.Proc, err = atoi(EnvProc, v, 0); err != nil {
			return Info{}, false, err
		}
	}
	if v := get(EnvUniverse); v != "" {
		if info.Universe, err = atoi(EnvUniverse, v, 1); err != nil {
			return Info{}, false, err
		}
	}
	if info.Proc >= info.Universe || info.Universe < info.Size {
		return Info{}, false, fmt.Errorf("boot: %s=%d, %s=%d and %s=%d are inconsistent", EnvProc, info.Proc, EnvUniverse, info.Universe, EnvSize, info.Size)
	}
	if v := get(EnvParent); v != "" {
		if info.ParentPairs, info.ParentProcs, err = parseParent(v); err != nil {
			return Info{}, false, err
		}
	}
	if v := get(EnvEpoch); v != "" {
		if info.Epoch, err = atoi(EnvEpoch, v, 0); err != nil {
			return Info{}, false, err
		}
	}
	switch v := get(EnvReinit); v {
	case "", "0":
	case "1":
		info.Reinit = true
	default:
		return Info{}, false, fmt.Errorf("boot: %s=%q must be 0 or 1", EnvReinit, v)
	}
	if v := get(EnvSpares); v != "" {
		if info.Spares, err = atoi(EnvSpares, v, 0); err != nil {
			return Info{}, false, err
		}
		if info.Spares > info.Size {
			return Info{}, false, fmt.Errorf("boot: %s=%d is more than %s=%d processes", EnvSpares, info.Spares, EnvSize, info.Size)
		}
	}
	info.Job = get(EnvJob)
	info.Control = get(EnvControl)
	if info.Control != "" {
		if _, _, err := splitControl(info.Control); err != nil {
			return Info{}, false, err
		}
	}
	info.Host = get(EnvHost)
	if v := get(EnvHostCores); v != "" {
		if info.HostCores, err = atoi(EnvHostCores, v, 0); err != nil {
			return Info{}, false, err
		}
	}
	if v := get(EnvRestart); v != "" {
		if info.Restart, err = atoi(EnvRestart, v, 0); err != nil {
			return Info{}, false, err
		}
	}
	info.TmpDir = get(EnvTmpDir)
	if v := get(EnvListen); v != "" {
		if net.ParseIP(v) == nil {
			return Info{}, false, fmt.Errorf("boot: %s=%q is not an IP address", EnvListen, v)
		}
		info.Listen = v
	}
	info.Transport = get(EnvTransport)
	switch info.Transport {
	case "":
		info.Transport = TransportAuto
	case TransportAuto, TransportUnix, TransportTCP, TransportShm:
	default:
		return Info{}, false, fmt.Errorf("boot: %s=%q must be auto, unix, tcp or shm", EnvTransport, info.Transport)
	}
	return info, true, nil
}

// IsSpare reports whether this process is a spare: one of the last Spares
// processes of its start set. A start set of spares only (Spares == Size:
// the processes a repair spawned when no spare was left) has no ranks.
func (info Info) IsSpare() bool { return info.Spares > 0 && info.Rank >= info.Size-info.Spares }

// WorldSize is the number of ranks of the start set: Size without the
// spares.
func (info Info) WorldSize() int { return info.Size - info.Spares }

// splitControl splits "unix:PATH" or "tcp:HOST:PORT" into a net network and address.
func splitControl(s string) (network, addr string, err error) {
	network, addr, found := strings.Cut(s, ":")
	if !found || addr == "" || (network != "unix" && network != "tcp") {
		return "", "", fmt.Errorf("boot: %s=%q must be unix:PATH or tcp:HOST:PORT", EnvControl, s)
	}
	return network, addr, nil
}

// Env returns the environment variables ("NAME=value") describing info, as
// the launcher sets them for a rank.
func (info Info) Env() []string {
	if info.Universe == 0 { // not set: the process id is the rank
		info.Proc, info.Universe = info.Rank, info.Size
	}
	return []string{
		EnvJob + "=" + info.Job,
		EnvRestart + "=" + strconv.Itoa(info.Restart),
		EnvRank + "=" + strconv.Itoa(info.Rank),
		EnvSize + "=" + strconv.Itoa(info.Size),
		EnvControl + "=" + info.Control,
		EnvHost + "=" + info.Host,
		EnvHostCores + "=" + strconv.Itoa(info.HostCores),
		EnvTmpDir + "=" + info.TmpDir,
		EnvTransport + "=" + info.Transport,
		EnvIncarnation + "=" + strconv.Itoa(info.Incarnation),
		EnvEpoch + "=" + strconv.Itoa(info.Epoch),
		EnvReinit + "=" + reinitFlag(info.Reinit),
		EnvProc + "=" + strconv.Itoa(info.Proc),
		EnvUniverse + "=" + strconv.Itoa(info.Universe),
		EnvParent + "=" + ctlwire.FormatParent(info.ParentPairs, info.ParentProcs),
		EnvListen + "=" + info.Listen,
		EnvSpares + "=" + strconv.Itoa(info.Spares),
	}
}

func reinitFlag(on bool) string {
	if on {
		return "1"
	}
	return "0"
}

func parseParent(v string) (pairs, procs []int, err error) {
	if pairs, procs, err = ctlwire.ParseParent(v); err != nil {
		return nil, nil, fmt.Errorf("boot: %s=%q must be PAIR,PAIR;PROC,PROC,...", EnvParent, v)
	}
	return pairs, procs, nil
}
