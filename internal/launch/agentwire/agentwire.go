// Package agentwire is the protocol between ftmpirun's head and a remote
// agent (ftmpirun in agent mode on another host, started over ssh): framed
// messages on the ssh session's standard input (head to agent) and standard
// output (agent to head).
//
// A frame is a 4-byte big-endian length n (1 <= n <= MaxFrame), then n
// bytes: one type byte and a JSON body. The first frame the head sends is
// Hello: it carries the protocol version, the job, the agent's host id, the
// heartbeat settings, the network interface, and Secret, the per-job
// secret of the authenticated wire in hex (the agent
// reads it before anything else, so the secret never appears on a command
// line or in ps). The agent answers Ready, then both sides exchange the
// other messages in any order; each side sends Ping every heartbeat period
// and declares the other lost after the heartbeat timeout without any frame.
//
// The decoder is defensive: a length out of range, an unknown type, a body
// that is not the type's JSON, or a field out of range (a negative rank, a
// signal outside 1..64, ...) is an error naming what was wrong, never a
// panic; FuzzDecode checks it. The package must do no I/O of its own beyond
// the reader and writer it is given, and must not know of processes.
package agentwire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Version is the protocol version carried by Hello.
const Version = 1

// MaxFrame bounds a frame's length (a forwarded output line is at most
// 1 MiB, base64 in JSON).
const MaxFrame = 4 << 20

// Type is a message type.
type Type uint8

// Message types. Head to agent: Hello (first), Start, Signal, SignalAll,
// Check, Bye, File, Stdin. Agent to head: Ready (first), Started, Output,
// Exited, State, FileDone, StdinAck (one per Stdin: the head sends the
// next piece only then, so a rank that does not read holds up nothing but
// its own input), AgentErr (tree launch: an agent it was to start could
// not be started, or its launch command ended).
// Both ways: Ping.
//
// Tree launch (Hello.Attach set): the agent reads Hello from its standard
// input as always, then dials the head at Attach over TCP, proves the
// job's secret (package wireauth, ProtoAgent, its Node as identity) and
// speaks every other message on that connection, Ready (with Host and
// Node) first; its standard input and output are no longer used. It then
// starts the agents of its subtree (Hello.Tree) with the launch command
// (Hello.Launch HOST 'Hello.Self' AGENT), each with a Hello of its own.
const (
	THello Type = iota + 1
	TReady
	TStart
	TStarted
	TSignal
	TSignalAll
	TCheck
	TState
	TOutput
	TExited
	TPing
	TBye
	TFile     // head to agent: a piece of a file to keep in the agent's job directory (--preload-binary)
	TFileDone // agent to head: the file is complete (Path), or Error
	TStdin    // head to agent: the next piece (Data) of a rank's stdin; Final: its end
	TStdinAck // agent to head: the piece is written; Final: the rank's stdin is closed, send no more
	TAgentErr // agent to head (tree launch): the agent of Host (Node) could not be started (Error)
	TCtlUp    // agent to head (Hello.Relay): its ranks' control lines and closes, in order (Ctl)
	TCtlDown  // head to agent (Hello.Relay): lines for its ranks' control connections, and closes (Ctl)
	tEnd
)

var typeNames = [...]string{THello: "hello", TReady: "ready", TStart: "start", TStarted: "started",
	TSignal: "signal", TSignalAll: "signal-all", TCheck: "check", TState: "state", TOutput: "output",
	TExited: "exited", TPing: "ping", TBye: "bye", TFile: "file", TFileDone: "file-done", TStdin: "stdin", TStdinAck: "stdin-ack", TAgentErr: "agent-error",
	TCtlUp: "ctl-up", TCtlDown: "ctl-down"}

func (t Type) String() string {
	if t > 0 && t < tEnd {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", int(t))
}

// Spec is one rank to start (launch.RankSpec on the wire). Env holds the
// variables the head sets; the agent adds them to its own environment.
type Spec struct {
	Rank int      `json:"rank"`
	Inc  int      `json:"inc,omitempty"`
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// Bind, Slot and Report: launch.RankSpec's Bind, Slot and
	// ReportBinding (--bind-to, --report-bindings).
	Bind   string `json:"bind,omitempty"`
	Slot   int    `json:"slot,omitempty"`
	Report bool   `json:"report,omitempty"`
	// Stdin: the rank's stdin is a pipe the agent fills with the head's
	// Stdin messages (ftmpirun's stdin, forwarded to rank 0).
	Stdin bool `json:"stdin,omitempty"`
}

// Node is one agent of a tree launch: its host, its host index, and the
// agents it starts in turn.
type Node struct {
	Host  string `json:"host"`
	Index int    `json:"index"`
	Kids  []Node `json:"kids,omitempty"`
}

// maxTree bounds the agents of a Hello's subtree.
const maxTree = 1 << 20

// checkTree checks a subtree: names, indexes in range, at most maxTree
// agents, no index twice.
func checkTree(kids []Node, seen map[int]bool) error {
	for _, k := range kids {
		if k.Host == "" || strings.ContainsAny(k.Host, " \t'\"$`;&|<>\x00") {
			return fmt.Errorf("tree: bad host name %q", k.Host)
		}
		if k.Index < 0 || k.Index >= maxRank || seen[k.Index] {
			return fmt.Errorf("tree: host %s: index %d out of range or repeated", k.Host, k.Index)
		}
		seen[k.Index] = true
		if len(seen) > maxTree {
			return fmt.Errorf("tree: more than %d agents", maxTree)
		}
		if err := checkTree(k.Kids, seen); err != nil {
			return err
		}
	}
	return nil
}

// CtlLine is one entry of a relayed control frame (TCtlUp, TCtlDown):
// a line of the rank's control connection Conn (a number the agent gives
// each connection its Unix control socket accepted; never reused within a
// session), or its close. Up, the first entry of a connection has Open
// set and Proc, the process id its wireauth handshake proved (-1: the job
// has no secret); a close follows everything forwarded of its connection.
// Down, a close asks the agent to close the rank's connection. Line is one
// control message (a JSON line, package ctlwire) with its newline.
type CtlLine struct {
	Conn  uint32 `json:"c"`
	Open  bool   `json:"o,omitempty"`
	Proc  int    `json:"p,omitempty"`
	Line  string `json:"l,omitempty"`
	Close bool   `json:"x,omitempty"`
}

// maxCtl bounds the entries of a relayed control frame.
const maxCtl = 1 << 20

// checkCtl checks a relayed control frame's entries: each a line or a
// close, lines single and newline-ended, Open only going up.
func checkCtl(ctl []CtlLine, up bool) error {
	if len(ctl) == 0 || len(ctl) > maxCtl {
		return fmt.Errorf("%d control entries, want 1 to %d", len(ctl), maxCtl)
	}
	for _, e := range ctl {
		switch {
		case e.Conn == 0:
			return errors.New("control entry of connection 0")
		case e.Open && !up:
			return fmt.Errorf("connection %d: an open going down", e.Conn)
		case !e.Open && e.Proc != 0:
			return fmt.Errorf("connection %d: a process id without an open", e.Conn)
		case e.Proc < -1 || e.Proc >= maxRank:
			return fmt.Errorf("connection %d: process id %d out of range", e.Conn, e.Proc)
		case e.Close == (e.Line != ""):
			return fmt.Errorf("connection %d: want a line or a close", e.Conn)
		case e.Open && e.Close:
			return fmt.Errorf("connection %d: opened and closed in one entry", e.Conn)
		case e.Line != "" && strings.IndexByte(e.Line, '\n') != len(e.Line)-1:
			return fmt.Errorf("connection %d: a line not ended by its only newline", e.Conn)
		}
	}
	return nil
}

// Msg is one message; which fields mean something depends on Type.
type Msg struct {
	Type Type `json:"-"`

	// Hello.
	Version   int    `json:"version,omitempty"`
	Job       string `json:"job,omitempty"`
	Host      string `json:"host,omitempty"`
	Secret    string `json:"secret,omitempty"`     // the job's secret in hex (authenticated wire); "": none
	HBPeriod  int64  `json:"hb_period,omitempty"`  // nanoseconds
	HBTimeout int64  `json:"hb_timeout,omitempty"` // nanoseconds
	Interface string `json:"iface,omitempty"`      // --interface: a name or a CIDR ("" : the route to HeadAddr)
	HeadAddr  string `json:"head,omitempty"`       // the head's IP on the job's network
	TmpRoot   string `json:"tmp,omitempty"`        // where the agent makes its job directory ("": /tmp)
	// Tree launch: Attach is the head's address for agents (IP:port; "":
	// the agent speaks over its standard input and output); Node the
	// agent's host index (its identity on the attach connection; Ready and
	// AgentErr carry it too); Tree the agents it starts, each with its own
	// subtree; Launch and Self how (Launch HOST 'Self' AGENT).
	Attach string   `json:"attach,omitempty"`
	Node   int      `json:"node,omitempty"`
	Tree   []Node   `json:"tree,omitempty"`
	Launch []string `json:"launch,omitempty"`
	Self   string   `json:"self,omitempty"`
	// Relay: the agent serves its ranks' control connections on a Unix
	// socket (Ready.Control) and relays them to the head as CtlUp and
	// CtlDown frames, holding the collective phases' requests until all
	// its ranks sent theirs (launch's relay.go).
	Relay bool `json:"relay,omitempty"`

	// Ready.
	Pid    int    `json:"pid,omitempty"`
	Cores  int    `json:"cores,omitempty"`
	TmpDir string `json:"tmpdir,omitempty"`
	Listen string `json:"listen,omitempty"` // the agent host's IP on the job's network
	Error  string `json:"error,omitempty"`  // Ready: the agent cannot run the job
	// Control (Ready, Hello.Relay): the control address of the ranks on
	// the agent's host ("unix:PATH", the agent's socket).
	Control string `json:"control,omitempty"`

	// CtlUp, CtlDown.
	Ctl []CtlLine `json:"ctl,omitempty"`

	// Start, Started. Pids (Started): the process id of each rank of the
	// Start, in its order (0: that one could not be started).
	Seq   uint64 `json:"seq,omitempty"`
	Specs []Spec `json:"specs,omitempty"`
	Pids  []int  `json:"pids,omitempty"`

	// Signal, SignalAll, Check, State, Output, Exited.
	Rank   int    `json:"rank,omitempty"`
	Inc    int    `json:"inc,omitempty"` // Signal: -1 means any incarnation
	Sig    int    `json:"sig,omitempty"`
	Token  uint64 `json:"token,omitempty"`
	State  string `json:"state,omitempty"`
	Alive  bool   `json:"alive,omitempty"`
	Stderr bool   `json:"stderr,omitempty"`
	Line   []byte `json:"line,omitempty"`
	Status int    `json:"status,omitempty"`
	// StartErr: Exited of a rank that could not be started.
	StartErr string `json:"start_err,omitempty"`

	// File, FileDone: File is a base name; Data the next piece; Final the
	// last one (the agent then makes it executable and answers FileDone
	// with its Path).
	File  string `json:"file,omitempty"`
	Data  []byte `json:"data,omitempty"`
	Final bool   `json:"final,omitempty"`
	Path  string `json:"path,omitempty"`
}

// Encode appends the frame of m to b.
func Encode(b []byte, m Msg) ([]byte, error) {
	if m.Type == 0 || m.Type >= tEnd {
		return b, fmt.Errorf("agentwire: encode: unknown %v", m.Type)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return b, fmt.Errorf("agentwire: encode %v: %w", m.Type, err)
	}
	n := 1 + len(body)
	if n > MaxFrame {
		return b, fmt.Errorf("agentwire: encode %v: %d bytes over the %d-byte limit", m.Type, n, MaxFrame)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, byte(m.Type))
	return append(b, body...), nil
}

// Write writes the frame of m to w in one call.
func Write(w io.Writer, m Msg) error {
	b, err := Encode(nil, m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ErrFrame is wrapped by every decoding error.
var ErrFrame = errors.New("agentwire: bad frame")

// Read reads one frame from r and decodes it. io.EOF means the stream
// ended between frames; a stream cut inside a frame is
// io.ErrUnexpectedEOF.
func Read(r *bufio.Reader) (Msg, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Msg{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 1 || n > MaxFrame {
		return Msg{}, fmt.Errorf("%w: length %d out of range 1..%d", ErrFrame, n, MaxFrame)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Msg{}, err
	}
	return Decode(buf)
}

// Decode decodes a frame's contents (the type byte and the body, without
// the length) and checks its fields.
func Decode(b []byte) (Msg, error) {
	if len(b) < 1 {
		return Msg{}, fmt.Errorf("%w: empty", ErrFrame)
	}
	t := Type(b[0])
	if t == 0 || t >= tEnd {
		return Msg{}, fmt.Errorf("%w: unknown message type %d", ErrFrame, b[0])
	}
	var m Msg
	dec := json.NewDecoder(bytes.NewReader(b[1:]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Msg{}, fmt.Errorf("%w: %v body: %v", ErrFrame, t, err)
	}
	if dec.More() {
		return Msg{}, fmt.Errorf("%w: %v body: data after the JSON value", ErrFrame, t)
	}
	m.Type = t
	// One form for "none": an empty list decodes like an absent one.
	if len(m.Line) == 0 {
		m.Line = nil
	}
	if len(m.Data) == 0 {
		m.Data = nil
	}
	if len(m.Specs) == 0 {
		m.Specs = nil
	}
	if len(m.Pids) == 0 {
		m.Pids = nil
	}
	if len(m.Ctl) == 0 {
		m.Ctl = nil
	}
	for i := range m.Specs {
		if len(m.Specs[i].Args) == 0 {
			m.Specs[i].Args = nil
		}
		if len(m.Specs[i].Env) == 0 {
			m.Specs[i].Env = nil
		}
	}
	if err := m.check(); err != nil {
		return Msg{}, fmt.Errorf("%w: %v: %v", ErrFrame, t, err)
	}
	return m, nil
}

// maxRank bounds process ids on the wire.
const maxRank = 1 << 24

func (m *Msg) check() error {
	rank := func() error {
		if m.Rank < 0 || m.Rank >= maxRank {
			return fmt.Errorf("rank %d out of range", m.Rank)
		}
		return nil
	}
	sig := func() error {
		if m.Sig < 1 || m.Sig > 64 {
			return fmt.Errorf("signal %d out of range 1..64", m.Sig)
		}
		return nil
	}
	switch m.Type {
	case THello:
		if m.Version != Version {
			return fmt.Errorf("protocol version %d, want %d", m.Version, Version)
		}
		if m.Job == "" || m.Host == "" {
			return errors.New("job or host missing")
		}
		if m.HBPeriod <= 0 || m.HBTimeout <= m.HBPeriod {
			return fmt.Errorf("heartbeat period %d and timeout %d: want 0 < period < timeout", m.HBPeriod, m.HBTimeout)
		}
		if m.Node < 0 || m.Node >= maxRank {
			return fmt.Errorf("node %d out of range", m.Node)
		}
		if len(m.Tree) > 0 && (m.Attach == "" || len(m.Launch) == 0 || m.Self == "") {
			return errors.New("a tree without the head's address or the launch command")
		}
		if err := checkTree(m.Tree, map[int]bool{m.Node: true}); err != nil {
			return err
		}
	case TReady:
		if m.Error == "" && (m.Pid <= 0 || m.Cores <= 0) {
			return fmt.Errorf("pid %d or cores %d missing", m.Pid, m.Cores)
		}
		if m.Node < 0 || m.Node >= maxRank {
			return fmt.Errorf("node %d out of range", m.Node)
		}
	case TCtlUp, TCtlDown:
		return checkCtl(m.Ctl, m.Type == TCtlUp)
	case TAgentErr:
		if m.Host == "" || m.Error == "" || m.Node < 0 || m.Node >= maxRank {
			return fmt.Errorf("host %q, node %d or error %q missing or out of range", m.Host, m.Node, m.Error)
		}
	case TStart:
		if len(m.Specs) == 0 {
			return errors.New("no rank to start")
		}
		for _, s := range m.Specs {
			if s.Rank < 0 || s.Rank >= maxRank || s.Inc < 0 {
				return fmt.Errorf("rank %d incarnation %d out of range", s.Rank, s.Inc)
			}
			if s.Path == "" {
				return fmt.Errorf("rank %d: no program", s.Rank)
			}
			if s.Slot < 0 || s.Slot >= maxRank {
				return fmt.Errorf("rank %d: slot %d out of range", s.Rank, s.Slot)
			}
			switch s.Bind {
			case "", "core", "socket", "hwthread":
			default:
				return fmt.Errorf("rank %d: unknown binding %q", s.Rank, s.Bind)
			}
		}
	case TStarted:
		for _, p := range m.Pids {
			if p < 0 {
				return fmt.Errorf("process id %d out of range", p)
			}
		}
	case TSignal:
		if err := rank(); err != nil {
			return err
		}
		if m.Inc < -1 {
			return fmt.Errorf("incarnation %d out of range", m.Inc)
		}
		return sig()
	case TSignalAll:
		return sig()
	case TCheck, TOutput:
		if m.Inc < 0 {
			return fmt.Errorf("incarnation %d out of range", m.Inc)
		}
		return rank()
	case TStdin, TStdinAck:
		return rank()
	case TFile, TFileDone:
		if m.File == "" || m.File == "." || m.File == ".." || strings.ContainsAny(m.File, "/\x00") {
			return fmt.Errorf("file name %q: want a base name", m.File)
		}
	case TExited:
		if m.Inc < 0 || m.Sig < 0 || m.Sig > 64 || m.Status < 0 || m.Status > 255 {
			return fmt.Errorf("incarnation %d, signal %d or status %d out of range", m.Inc, m.Sig, m.Status)
		}
		return rank()
	}
	return nil
}
