// Package ctlwire is the control protocol between a rank and the launcher
// (ftmpirun's head, or a per-host agent relaying for it): the message type
// Msg, its operations and event kinds, the key names of the bootstrap
// exchange, the spawn request, and the encoding of the parent list a
// spawned process is given. Both ends use it: package boot (the rank's
// client), package launch (the head and the agents) and package
// launch/policy (the head's pure policy, which reads and writes Msg).
//
// Each rank holds one stream connection (unix or TCP) to the launcher.
// With the job's secret the rank first runs the wireauth handshake
// (protocol wireauth.ProtoControl, from its process id to
// wireauth.Launcher); the launcher refuses a connection without it and a
// hello in the name of another process. Then both directions carry
// newline-delimited JSON objects of type Msg; event datagrams on the
// rank's event socket are sealed with the secret (wireauth.Key.Seal).
// Requests from the rank carry a non-zero ID; the launcher answers each
// request with exactly one message with the same Op and ID (or Op "error"
// with that ID). Messages with ID 0 sent by the launcher are unsolicited
// notifications (Op "event").
//
//	rank -> launcher                       launcher -> rank
//	hello    {job, rank, inc, pid, host}   hello    {}                      (first message; identifies the rank)
//	fence    {kv}                          fence    {kv: all keys, failed}  (put kv, wait for every rank, get all)
//	fence    {kv, kind: layout, host,      fence    {kv: {layout}, failed}  (a lazy start: the layout instead of every
//	          inc, cores}                                                    endpoint; a peer's is read by "endpoints")
//	finalize {}                            finalize {}                      (when every rank finalized or is gone)
//	abort    {code, reason}                abort    {}                      (ack; the launcher then kills the job)
//	suspect  {rank, reason}                suspect  {}                      (ack; the launcher SIGKILLs rank, which then fails)
//	reinit   {kind: enter|leave}           reinit   {epoch}                 (the rank entered / left MPI_Reinit)
//	rejoin   {epoch, kv}                   rejoin   {epoch, kv}             (fence of a Reinit epoch; a newer epoch in the reply means superseded)
//	spawn    {reason: SpawnRequest}        spawn    {kv | error, failed}    (collective over the parents; children started by the launcher)
//	name     {kind, reason, kv}            name     {kv | error, code}      (the name service of MPI_Publish_name and friends)
//	spare    {}                            spare    {}                      (a repair took this spare: it is a rank now)
//	endpoints {epoch, procs}               endpoints {epoch, kv, failed}    (a lazy start's lookup: the endpoints of procs in epoch)
//	hangdone {kind: started|written}       hangdone {}                      (the hang report an EventHang asked for)
//	                                       event    {kind, rank, inc, epoch, reason}
//	                                       error    {error}
//
// The protocol is per rank and carries no host-local state, so a per-host
// agent can relay it to the head unchanged. It is an internal protocol:
// both ends live in this module.
//
// The package only defines the protocol's vocabulary and its pure
// encodings. It must not do I/O, hold state, or import anything but the
// standard library: the launcher's policy imports it and must stay free of
// sockets, the rank's client and the authenticated wire.
package ctlwire

import (
	"errors"
	"strconv"
	"strings"
)

// Operations of the control protocol.
const (
	OpHello    = "hello"
	OpFence    = "fence"
	OpFinalize = "finalize"
	OpAbort    = "abort"
	OpSuspect  = "suspect"  // rank: the suspected rank (not the sender)
	OpReinit   = "reinit"   // kind: ReinitEnter or ReinitLeave
	OpRejoin   = "rejoin"   // epoch, kv: the rank's endpoint for that epoch
	OpSpawn    = "spawn"    // reason: a JSON SpawnRequest; reply kv: the children's endpoints, or error + failed
	OpSpare    = "spare"    // a spare that a repair of the ranks took (MPIX_Comm_replace): it is a rank now
	OpHangDone = "hangdone" // the rank that makes the hang reports wrote the one an EventHang asked for
	OpName     = "name"     // the name service (MPI_Publish_name, MPI_Lookup_name, MPI_Unpublish_name): kind a Name* value
	// OpEndpoints is a lazy start's lookup (issue 24 item 2): Procs are
	// the process ids whose endpoints of Epoch the rank needs (at most
	// MaxLookup); the reply's KV holds each published one under its key
	// (EndpointKey, EpochEndpointKey), Failed those the launcher cannot
	// give (gone, or never published), and Epoch the launcher's current
	// one (another than asked: superseded, nothing answered).
	OpEndpoints = "endpoints"
	OpEvent     = "event"
	OpError     = "error"
)

// Event kinds (Msg.Kind of an OpEvent).
const (
	EventFailed = "failed" // a rank died after initializing and before finalizing
	EventReinit = "reinit" // a rank died and was respawned: every process rolls back to epoch Msg.Epoch (--on-failure reinit)
	// EventHang asks for a hang report (ftmpirun's --timeout, SIGQUIT):
	// the lowest live rank gathers every rank's calls, writes the report
	// and answers OpHangDone; Msg.Reason says why.
	EventHang = "hang"
	// EventActivate takes a spare (to it alone): it becomes incarnation
	// Msg.Incarnation of rank Msg.Rank and joins Reinit epoch Msg.Epoch
	// (--on-failure reinit with spares: a spare instead of a respawn).
	EventActivate = "activate"
	// EventRelease ends a waiting spare (to it alone): every rank has
	// finalized or is gone; it finalizes and exits 0.
	EventRelease = "release"
)

// Kinds of OpHangDone: the report is being made, or written.
const (
	HangStarted = "started"
	HangWritten = "written"
)

// Kinds of the reinit request.
const (
	ReinitEnter = "enter"
	ReinitLeave = "leave"
)

// The name service of MPI_Publish_name, MPI_Lookup_name and
// MPI_Unpublish_name: a request is a Msg with Op OpName, Kind one of the
// Name* kinds, Reason the service name and, for publish and unpublish,
// KV[NamePortKey] the port; the reply carries KV[NamePortKey] (lookup) or
// Error with Code NameCodeUnknown or NameCodeService.
const (
	NamePublish   = "publish"
	NameLookup    = "lookup"
	NameUnpublish = "unpublish"
	NamePortKey   = "port" // the key of the port name in a name-service message
)

// Reply codes of a refused name-service request.
const (
	NameCodeUnknown = 1 // lookup of a name nobody published
	NameCodeService = 2 // publish of a published name, unpublish of another's or an unknown one, a bad request
)

// Msg is one control-protocol message. Unused fields are omitted.
type Msg struct {
	Op          string            `json:"op"`
	ID          uint64            `json:"id,omitempty"`
	Job         string            `json:"job,omitempty"`
	Rank        int               `json:"rank"`
	Incarnation int               `json:"inc,omitempty"`
	Epoch       int               `json:"epoch,omitempty"`
	Pid         int               `json:"pid,omitempty"`
	Host        string            `json:"host,omitempty"`
	Code        int               `json:"code,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Fatal       bool              `json:"fatal,omitempty"` // OpAbort: a fatal error under MPI_ERRORS_ARE_FATAL, not the program's MPI_Abort
	Kind        string            `json:"kind,omitempty"`
	KV          map[string]string `json:"kv,omitempty"`
	Failed      []int             `json:"failed,omitempty"`
	Error       string            `json:"error,omitempty"`
	Cores       int               `json:"cores,omitempty"` // a lazy fence or rejoin: the cores of the rank's host
	Procs       []int             `json:"procs,omitempty"` // OpEndpoints: the process ids looked up
}

// EndpointKey is the key under which a rank publishes its endpoint in the
// bootstrap fence (OpFence).
func EndpointKey(rank int) string { return "ep/" + strconv.Itoa(rank) }

// EpochEndpointKey is the key under which a rank publishes its endpoint
// for a Reinit epoch (OpRejoin).
func EpochEndpointKey(epoch, rank int) string {
	return "ep/" + strconv.Itoa(epoch) + "/" + strconv.Itoa(rank)
}

// SpawnRequest is one process's part of a collective spawn
// (MPI_Comm_spawn), carried JSON-encoded in the Reason of an OpSpawn: every
// parent sends one with the same Key and Procs; the root's carries the
// command. A parent that failed locally (its context-id agreement, say)
// still sends one, with Error set, so that every parent gets the same
// outcome.
type SpawnRequest struct {
	Key string // identifies the collective call: the same at every parent
	// Procs are the process ids of the parents, in rank order: in the
	// root's request, and optional in the others' (which name the root's
	// process instead, RootProc), so that the launcher reads the list
	// once, not once a parent (n^2 bytes at the head otherwise).
	Procs []int `json:",omitempty"`
	// RootProc is the root's process id, in a request without Procs: the
	// launcher fails the spawn if the root is gone before its request.
	RootProc int      `json:",omitempty"`
	Root     bool     // this is the root's request: Command, Args and MaxProcs count
	Command  string   // executable; "" means the job's own program
	Args     []string // argv[1:]
	MaxProcs int      // number of processes to start
	Dir      string   `json:",omitempty"` // the children's working directory ("": the launcher's)
	// Apps (at the root, MPI_Comm_spawn_multiple): the commands, each with
	// its arguments, number of processes and directory; MaxProcs is then
	// their sum, and Command, Args and Dir are not used. The children are
	// numbered in the order of Apps, each knowing its command's index
	// (the rank's environment: boot.EnvAppNum).
	Apps   []SpawnApp `json:",omitempty"`
	Pairs  []int      // the context pairs of the intercommunicator (2)
	Error  string     // non-empty: this parent cannot take part; the spawn fails everywhere
	Failed []int      // with Error: the parents this one knows failed (its Error is a process failure)
	// Spares (at the root): the new processes are spares (boot.EnvSpares =
	// MaxProcs): they wait inside Init for an activation (MPIX_Comm_replace
	// when no spare of the job is left) instead of running as a spawned
	// world.
	Spares bool `json:",omitempty"`
}

// SpawnApp is one command of a SpawnRequest's Apps.
type SpawnApp struct {
	Command  string
	Args     []string `json:",omitempty"`
	MaxProcs int
	Dir      string `json:",omitempty"`
}

// FormatParent encodes the parent list a spawned process is given (the
// value of boot.EnvParent): "PAIR,PAIR;PROC,PROC,...", the context pairs
// of the intercommunicator to the parents and the parents' process ids in
// rank order; "" when there is no parent.
func FormatParent(pairs, procs []int) string {
	if len(procs) == 0 {
		return ""
	}
	return joinInts(pairs) + ";" + joinInts(procs)
}

// ErrParent is the error of ParseParent for a value that is not
// "PAIR,PAIR;PROC,PROC,...".
var ErrParent = errors.New("ctlwire: parent list must be PAIR,PAIR;PROC,PROC,...")

// ParseParent decodes a non-empty FormatParent value: exactly two pairs
// and at least one process id, all non-negative integers. Anything else
// is ErrParent.
func ParseParent(v string) (pairs, procs []int, err error) {
	a, b, ok := strings.Cut(v, ";")
	if !ok {
		return nil, nil, ErrParent
	}
	for _, part := range []struct {
		s   string
		dst *[]int
	}{{a, &pairs}, {b, &procs}} {
		for _, f := range strings.Split(part.s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 0 {
				return nil, nil, ErrParent
			}
			*part.dst = append(*part.dst, n)
		}
	}
	if len(pairs) != 2 {
		return nil, nil, ErrParent
	}
	return pairs, procs, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
