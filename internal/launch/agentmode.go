package launch

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
	"github.com/ftmpi/ftmpi/internal/ownerdir"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// AgentCommand, as ftmpirun's first argument, runs it as a remote agent
// (RunAgent): the head starts `ftmpirun AgentCommand` on each remote host
// over ssh. It is not in the usage text.
const AgentCommand = "__ftmpi_agent"

// helloWait bounds the wait for the head's first message.
const helloWait = 30 * time.Second

// RunAgent is ftmpirun in agent mode on a remote host: it reads the head's
// Hello from in (the ssh session's standard input; the first message,
// which is where a job secret will come from), makes its job directory,
// answers Ready, and then starts, signals, checks and reports its ranks
// through a hostagent.LocalAgent exactly as the head's own host does, relaying
// everything over out (agentwire frames). Head and agent heartbeat each
// other: when the head is lost (in closed, or silent for the heartbeat
// timeout: a partition), the agent SIGKILLs its ranks and exits 1
// (fail-stop: the cut-off side never goes on alone). After the head's Bye
// it kills what is left, removes its job directory and exits 0.
//
// In a tree launch (Hello.Attach set, tree.go) the agent instead dials the
// head over TCP right after the hello and speaks everything there (in's
// end and a broken errw no longer matter: its starter may be lost), then
// starts the agents of its subtree (Hello.Tree) and stops their launch
// commands when it ends.
func RunAgent(in io.Reader, out io.Writer, errw io.Writer) int {
	logf := func(format string, args ...any) {
		fmt.Fprintf(errw, "ftmpirun agent: "+format+"\n", args...)
	}
	head := readFrames(in) // ends with the process (in is the ssh session)
	hello, ok := awaitHello(head, logf)
	if !ok {
		return 1
	}
	w := newFrameWriter(out)
	defer w.stop()
	if hello.Type != agentwire.THello {
		logf("first message is %v, not hello", hello.Type)
		return 1
	}
	fail := func(format string, args ...any) int {
		msg := fmt.Sprintf(format, args...)
		w.send(agentwire.Msg{Type: agentwire.TReady, Error: msg, Host: hello.Host, Node: hello.Node, Job: hello.Job})
		w.flush(time.Second)
		logf("%s", msg)
		return 1
	}
	key, err := helloKey(hello) // the job's secret, handed to every rank started here
	if err != nil {
		return fail("host %s: the job's secret in the hello: %v", hello.Host, err)
	}
	if hello.Attach != "" {
		// Tree launch: everything goes over a connection of our own to
		// the head; the ssh session only brought the hello (tree.go).
		ignoreSIGPIPE()
		nc, err := attachHead(hello, key)
		if err != nil {
			logf("host %s: %v", hello.Host, err)
			return 1
		}
		defer nc.Close()
		w.stop()
		w = newFrameWriter(nc)
		defer w.stop()
		head = readFrames(nc)
	}
	ip, err := interfaceAddr(hello.Interface, hello.HeadAddr)
	if err != nil {
		return fail("host %s: %v", hello.Host, err)
	}
	root := hello.TmpRoot
	if root == "" {
		root = "/tmp"
	}
	dir, err := makeJobDir(root)
	if err != nil {
		return fail("host %s: cannot create job directory: %v", hello.Host, err)
	}
	defer ownerdir.Remove(dir)

	rep := &wireReporter{w: w}
	as := &agentSession{w: w, la: hostagent.NewLocalAgent(hello.Host, rep), dir: dir, key: key, logf: logf,
		baseEnv: filterEnv(os.Environ()), files: map[string]*os.File{}, stdins: map[int]*stdinPipe{}}
	control := ""
	if hello.Relay {
		// The ranks here dial this agent, which relays their control
		// connections to the head (relay.go).
		r, err := listenRelay(dir, w, key, logf)
		if err != nil {
			return fail("host %s: cannot listen for the ranks' control connections: %v", hello.Host, err)
		}
		defer r.stop()
		as.relay, rep.relay, control = r, r, r.control()
	}
	w.send(agentwire.Msg{Type: agentwire.TReady, Pid: os.Getpid(), Cores: runtime.NumCPU(), TmpDir: dir, Listen: ip.String(),
		Host: hello.Host, Node: hello.Node, Job: hello.Job, Control: control})
	if len(hello.Tree) > 0 {
		boots := startKids(hello, w)
		defer stopBoots(boots)
	}
	defer as.closeInputs()
	code := as.serve(head, time.Duration(hello.HBPeriod), time.Duration(hello.HBTimeout))
	as.la.SignalAll(syscall.SIGKILL)
	as.starts.Wait()
	as.la.SignalAll(syscall.SIGKILL) // ranks whose start was under way
	as.la.Wait()
	if code == 0 {
		w.flush(5 * time.Second)
	}
	return code
}

// awaitHello waits (helloWait at most) for the head's first frame.
func awaitHello(head *headInput, logf func(string, ...any)) (agentwire.Msg, bool) {
	select {
	case hello := <-head.frames:
		return hello, true
	case err := <-head.err:
		// The reader sends a frame before the error that follows it:
		// a tree launch closes the input right after the hello.
		select {
		case hello := <-head.frames:
			return hello, true
		default:
			logf("no hello from the head: %v", err)
			return agentwire.Msg{}, false
		}
	case <-time.After(helloWait):
		logf("no hello from the head within %v", helloWait)
		return agentwire.Msg{}, false
	}
}

// helloKey is the job's secret the hello carries (nil: none).
func helloKey(hello agentwire.Msg) (*wireauth.Key, error) {
	if hello.Secret == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(hello.Secret)
	if err != nil {
		return nil, err
	}
	return wireauth.FromBytes(b)
}

// agentSession is an agent serving the head (RunAgent): its hostagent.LocalAgent,
// the frames it writes, its job directory and what is under way.
type agentSession struct {
	w       *frameWriter
	la      *hostagent.LocalAgent
	dir     string        // the job directory on this host
	key     *wireauth.Key // the job's secret, handed to every rank started here
	baseEnv []string      // the agent's environment, filtered: every rank's base
	relay   *agentRelay   // the ranks' control connections (Hello.Relay), nil: they dial the head
	logf    func(format string, args ...any)

	starts       sync.WaitGroup      // starts under way
	files        map[string]*os.File // --preload-binary: files being received
	stdins       map[int]*stdinPipe  // ranks whose stdin the head forwards
	stdinWriters sync.WaitGroup      // the stdinPipe goroutines
}

// serve handles the head's frames until its Bye (code 0), or until the
// head is lost: its input ends or is bad, or it is silent for timeout
// (code 1): no byte arrived, so a long frame still arriving (a preloaded
// binary's 1 MiB piece on a loaded host) is not silence. Every period it
// pings the head.
func (as *agentSession) serve(head *headInput, period, timeout time.Duration) int {
	tick := time.NewTicker(period)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case m := <-head.frames: // its bytes moved lastByte
			if m.Type == agentwire.TBye {
				return 0
			}
			as.handle(m)
		case err := <-head.err:
			if len(head.frames) > 0 {
				head.err <- err // the frames read before the error come first
				continue
			}
			if errors.Is(err, agentwire.ErrFrame) {
				as.logf("bad message from the head: %v; killing the ranks", err)
			} else {
				as.logf("lost the head (%v); killing the ranks", err)
			}
			return 1
		case <-tick.C:
			lastSeen := head.lastByte()
			if start.After(lastSeen) {
				lastSeen = start
			}
			if d := time.Since(lastSeen); d > timeout {
				as.logf("no heartbeat from the head for %v; killing the ranks", d.Round(time.Millisecond))
				return 1
			}
			as.w.send(agentwire.Msg{Type: agentwire.TPing})
		}
	}
}

// handle executes one frame of the head (other than Bye).
func (as *agentSession) handle(m agentwire.Msg) {
	la, w := as.la, as.w
	switch m.Type {
	case agentwire.TStart:
		as.start(m)
	case agentwire.TSignal:
		if m.Inc < 0 {
			la.Signal(m.Rank, syscall.Signal(m.Sig))
		} else {
			la.SignalIncarnation(m.Rank, m.Inc, syscall.Signal(m.Sig))
		}
	case agentwire.TSignalAll:
		la.SignalAll(syscall.Signal(m.Sig))
	case agentwire.TCheck:
		pid := la.Pid(m.Rank, m.Inc)
		state, alive := "gone", false
		if pid > 0 {
			state, alive = hostagent.ProcState(pid)
		}
		w.send(agentwire.Msg{Type: agentwire.TState, Token: m.Token, Rank: m.Rank, Inc: m.Inc, Pid: pid, State: state, Alive: alive})
	case agentwire.TFile:
		path, done, err := receiveFile(as.dir, as.files, m)
		if err != nil {
			w.send(agentwire.Msg{Type: agentwire.TFileDone, File: m.File, Error: err.Error()})
		} else if done {
			w.send(agentwire.Msg{Type: agentwire.TFileDone, File: m.File, Path: path})
		}
	case agentwire.TStdin:
		sp := as.stdins[m.Rank]
		if sp == nil {
			w.send(agentwire.Msg{Type: agentwire.TStdinAck, Rank: m.Rank, Final: true})
			break
		}
		select {
		case sp.ch <- m:
		default: // the head sends one piece per ack: never full
			w.send(agentwire.Msg{Type: agentwire.TStdinAck, Rank: m.Rank, Final: true})
		}
	case agentwire.TCtlDown:
		if as.relay != nil {
			as.relay.down(m.Ctl)
		}
	case agentwire.TPing:
	default:
		as.logf("unexpected %v from the head ignored", m.Type)
	}
}

// start starts the ranks of a Start frame in the background: their specs
// are the frame's on this host's environment and job directory, with a
// pipe for the stdin the head forwards. The head learns the pids (Started)
// before any rank's hello and before any line of their output: a host lost
// before its ranks connected still names them in the head's messages.
func (as *agentSession) start(m agentwire.Msg) {
	specs := make([]hostagent.RankSpec, len(m.Specs))
	for i, s := range m.Specs {
		env := append([]string(nil), as.baseEnv...)
		for _, kv := range s.Env {
			name, val, _ := hostagent.CutEnv(kv)
			env = hostagent.SetEnv(env, name, val)
		}
		env = hostagent.SetEnv(env, "FTMPI_TMPDIR", as.dir)
		specs[i] = hostagent.RankSpec{Rank: s.Rank, Incarnation: s.Inc, Path: s.Path, Args: s.Args, Env: env, Dir: s.Dir, Auth: as.key,
			Bind: s.Bind, Slot: s.Slot, ReportBinding: s.Report}
		if s.Stdin && as.stdins[s.Rank] == nil {
			if r, pw, err := os.Pipe(); err == nil {
				specs[i].Stdin = r
				sp := &stdinPipe{ch: make(chan agentwire.Msg, 1), w: pw}
				as.stdins[s.Rank] = sp
				as.stdinWriters.Add(1)
				go func(rank int) { defer as.stdinWriters.Done(); sp.run(rank, as.w) }(s.Rank)
			}
		}
	}
	if as.relay != nil {
		for _, s := range specs { // before any of them can connect
			as.relay.started(s.Rank, s.Incarnation)
		}
	}
	as.starts.Add(1)
	go func(seq uint64) {
		defer as.starts.Done()
		defer func() {
			for _, s := range specs {
				if s.Stdin != nil {
					s.Stdin.Close() // the rank has its own copy
				}
			}
		}()
		as.la.StartThen(specs, func() {
			pids := make([]int, len(specs))
			for i, s := range specs {
				pids[i] = as.la.Pid(s.Rank, s.Incarnation)
			}
			as.w.send(agentwire.Msg{Type: agentwire.TStarted, Seq: seq, Pids: pids})
		})
	}(m.Seq)
}

// closeInputs ends the forwarded stdins (unblocking a write the rank does
// not read) and waits for their writers, then closes the files being
// received.
func (as *agentSession) closeInputs() {
	for _, sp := range as.stdins {
		sp.w.Close()
		close(sp.ch)
	}
	as.stdinWriters.Wait()
	for _, f := range as.files {
		f.Close()
	}
}

// headInput is what the agent reads from the head: its frames, the
// error that ends them, and when the last bytes arrived.
type headInput struct {
	frames chan agentwire.Msg
	err    chan error   // capacity 1
	moved  atomic.Int64 // Unix nanoseconds of the last read that returned bytes
}

// lastByte is when the last bytes of the head arrived (the Unix epoch: none yet).
func (h *headInput) lastByte() time.Time { return time.Unix(0, h.moved.Load()) }

// progressReader notes in moved when a read returns bytes.
type progressReader struct {
	r     io.Reader
	moved *atomic.Int64
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.moved.Store(time.Now().UnixNano())
	}
	return n, err
}

// readFrames reads agentwire frames from in until an error, which it
// sends on head.err.
func readFrames(in io.Reader) *headInput {
	h := &headInput{frames: make(chan agentwire.Msg, 64), err: make(chan error, 1)}
	go func() {
		r := bufio.NewReaderSize(progressReader{in, &h.moved}, 64<<10)
		for {
			m, err := agentwire.Read(r)
			if err != nil {
				h.err <- err
				return
			}
			h.frames <- m
		}
	}()
	return h
}

// stdinPipe is a rank's stdin, filled with the head's Stdin messages.
type stdinPipe struct {
	ch chan agentwire.Msg // the next piece; closed at the agent's end
	w  *os.File           // the pipe's write end
}

// run writes each piece into the pipe and acknowledges it; once a write
// fails (the rank exited) or the last piece is written, the pipe is closed
// and every ack says so.
func (sp *stdinPipe) run(rank int, fw *frameWriter) {
	closed := false
	for m := range sp.ch {
		if !closed && len(m.Data) > 0 {
			if _, err := sp.w.Write(m.Data); err != nil {
				closed = true
			}
		}
		if m.Final {
			closed = true
		}
		if closed {
			sp.w.Close()
		}
		fw.send(agentwire.Msg{Type: agentwire.TStdinAck, Rank: rank, Final: closed})
	}
}

// receiveFile appends a piece of a preloaded file (m.File, a base name
// the decoder checked) under dir; on the last piece the file is made
// executable and its path returned with done.
func receiveFile(dir string, files map[string]*os.File, m agentwire.Msg) (path string, done bool, err error) {
	path = filepath.Join(dir, "preload-"+m.File)
	f := files[m.File]
	if f == nil {
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o700); err != nil {
			return "", false, err
		}
		files[m.File] = f
	}
	if _, err = f.Write(m.Data); err == nil && m.Final {
		err = f.Close()
		delete(files, m.File)
		return path, true, err
	}
	if err != nil {
		f.Close()
		delete(files, m.File)
	}
	return path, false, err
}

// wireReporter relays a hostagent.LocalAgent's reports to the head (and
// its ranks' exits to the relay's gate).
type wireReporter struct {
	w     *frameWriter
	relay *agentRelay
}

func (r *wireReporter) Output(rank int, stderr bool, line []byte) {
	r.w.send(agentwire.Msg{Type: agentwire.TOutput, Rank: rank, Stderr: stderr, Line: line})
}

func (r *wireReporter) Exited(e hostagent.ExitReport) {
	m := agentwire.Msg{Type: agentwire.TExited, Rank: e.Rank, Inc: e.Incarnation, Pid: e.Pid, Status: e.Status & 0xff, Sig: int(e.Signal)}
	if e.StartErr != nil {
		m.StartErr = e.StartErr.Error()
	}
	r.w.send(m)
	if r.relay != nil {
		r.relay.exited(e.Rank, e.Incarnation)
	}
}

// frameWriter writes frames from a queue on its own goroutine: a sender
// never blocks (the other side may be cut off, its pipe full), so the
// heartbeat keeps its time.
type frameWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   [][]byte
	busy    bool
	stopped bool
	err     error
	w       io.Writer
	done    chan struct{}
}

func newFrameWriter(w io.Writer) *frameWriter {
	fw := &frameWriter{w: w, done: make(chan struct{})}
	fw.cond = sync.NewCond(&fw.mu)
	go fw.loop()
	return fw
}

func (fw *frameWriter) send(m agentwire.Msg) {
	b, err := agentwire.Encode(nil, m)
	if err != nil {
		return // an output line over the frame limit cannot happen (maxLine)
	}
	fw.mu.Lock()
	if !fw.stopped && fw.err == nil {
		fw.queue = append(fw.queue, b)
		fw.cond.Broadcast()
	}
	fw.mu.Unlock()
}

func (fw *frameWriter) loop() {
	defer close(fw.done)
	for {
		fw.mu.Lock()
		for len(fw.queue) == 0 && !fw.stopped {
			fw.cond.Wait()
		}
		if len(fw.queue) == 0 {
			fw.mu.Unlock()
			return
		}
		q := fw.queue
		fw.queue = nil
		fw.busy = true
		fw.mu.Unlock()
		var err error
		for _, b := range q {
			if _, err = fw.w.Write(b); err != nil {
				break
			}
		}
		fw.mu.Lock()
		fw.busy = false
		fw.cond.Broadcast()
		if err != nil {
			fw.err = err
			fw.queue = nil
			fw.mu.Unlock()
			return
		}
		fw.mu.Unlock()
	}
}

// flush waits until everything queued is written (or the writer failed),
// at most d.
func (fw *frameWriter) flush(d time.Duration) {
	expired := false
	t := time.AfterFunc(d, func() {
		fw.mu.Lock()
		expired = true
		fw.cond.Broadcast()
		fw.mu.Unlock()
	})
	defer t.Stop()
	fw.mu.Lock()
	for (len(fw.queue) > 0 || fw.busy) && fw.err == nil && !expired {
		fw.cond.Wait()
	}
	fw.mu.Unlock()
}

// stop ends the writer once its queue is written (a blocked write keeps
// it until the process exits).
func (fw *frameWriter) stop() {
	fw.mu.Lock()
	fw.stopped = true
	fw.cond.Broadcast()
	fw.mu.Unlock()
}
