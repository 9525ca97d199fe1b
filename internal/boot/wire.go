package boot

import "strconv"

// Control protocol between a Client and the launcher.
//
// Each rank holds one stream connection (unix or TCP) to the launcher.
// With the job's secret (Info.Auth) the rank first runs the wireauth
// handshake (protocol wireauth.ProtoControl, from its process id to
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
//	finalize {}                            finalize {}                      (when every rank finalized or is gone)
//	abort    {code, reason}                abort    {}                      (ack; the launcher then kills the job)
//	suspect  {rank, reason}                suspect  {}                      (ack; the launcher SIGKILLs rank, which then fails)
//	reinit   {kind: enter|leave}           reinit   {epoch}                 (the rank entered / left MPI_Reinit)
//	rejoin   {epoch, kv}                   rejoin   {epoch, kv}             (fence of a Reinit epoch; a newer epoch in the reply means superseded)
//	spawn    {reason: SpawnRequest}        spawn    {kv | error, failed}    (collective over the parents; children started by the launcher)
//	                                       event    {kind, rank, inc, epoch, reason}
//	                                       error    {error}
//
// The protocol is per rank and carries no host-local state, so a per-host
// agent can relay it to the head unchanged.
//
// This is an internal protocol: both ends live in this module.

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
	OpEvent    = "event"
	OpError    = "error"
)

// Event kinds.
const (
	EventFailed = "failed" // a rank died after initializing and before finalizing
	EventReinit = "reinit" // a rank died and was respawned: every process rolls back to epoch Msg.Epoch (--on-failure reinit)
	// EventHang asks for a hang report (ftmpirun's --timeout, SIGQUIT):
	// the lowest live rank gathers every rank's calls, writes the report
	// and answers OpHangDone; Msg.Reason says why.
	EventHang = "hang"
	// Kinds of OpHangDone: the report is being made, or written.
	HangStarted = "started"
	HangWritten = "written"
	// EventActivate takes a spare (to it alone): it becomes incarnation
	// Msg.Incarnation of rank Msg.Rank and joins Reinit epoch Msg.Epoch
	// (--on-failure reinit with spares: a spare instead of a respawn).
	EventActivate = "activate"
	// EventRelease ends a waiting spare (to it alone): every rank has
	// finalized or is gone; it finalizes and exits 0.
	EventRelease = "release"
)

// Kinds of the reinit request.
const (
	ReinitEnter = "enter"
	ReinitLeave = "leave"
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
}

// EndpointKey is the key under which Exchange publishes the endpoint of rank.
func EndpointKey(rank int) string { return "ep/" + strconv.Itoa(rank) }

// EpochEndpointKey is the key under which Rejoin publishes the endpoint of
// rank for a Reinit epoch.
func EpochEndpointKey(epoch, rank int) string {
	return "ep/" + strconv.Itoa(epoch) + "/" + strconv.Itoa(rank)
}
