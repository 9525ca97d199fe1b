package hostagent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/exitbell"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// maxLine bounds a forwarded line; longer lines are split (each part is
// still written whole, so ranks never interleave inside a part).
const maxLine = 1 << 20

// drainGrace is how long output of a rank whose process group is gone is
// still read; it only matters if an escaped descendant holds the pipe.
const drainGrace = 500 * time.Millisecond

// LocalAgent starts ranks as child processes of the current process.
//
// Each rank runs in its own process group (so that signals reach every
// process it forks) with a parent-death signal of SIGKILL (so that
// SIGKILL of the launcher kills it). stdin is /dev/null (or
// RankSpec.Stdin); stdout and
// stderr are pipes read line by line and passed to the Reporter. When a
// rank's main process exits, the rest of its process group is killed: a
// rank never leaves orphans behind.
type LocalAgent struct {
	host string
	rep  Reporter

	mu    sync.Mutex
	procs map[int]*localProc
	wg    sync.WaitGroup

	// Note, if set, prints a launcher line about a rank (--report-bindings);
	// nil: the line goes out as the rank's stderr (an agent on another host).
	Note      func(line string)
	coresOnce sync.Once
	cores     []cpuCore
	coresErr  error
}

type localProc struct {
	mu     sync.Mutex
	pid    int
	inc    int // incarnation of the rank this process is
	reaped bool
}

// NewLocalAgent returns an agent for this host that reports to rep.
func NewLocalAgent(host string, rep Reporter) *LocalAgent {
	return &LocalAgent{host: host, rep: rep, procs: make(map[int]*localProc)}
}

// Host implements Agent.
func (a *LocalAgent) Host() string { return a.host }

// Start implements Agent.
func (a *LocalAgent) Start(specs []RankSpec) { a.StartThen(specs, nil) }

// StartThen starts specs like Start and calls announce once every
// process has started (or failed to), before any of their output is
// forwarded: whatever announce reports (the pids, to a head on another
// host) reaches the reporter's peer before the ranks' first lines do.
func (a *LocalAgent) StartThen(specs []RankSpec, announce func()) {
	release := make(chan struct{})
	defer func() {
		if announce != nil {
			announce()
		}
		close(release)
	}()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		for _, s := range specs {
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.rep.Exited(ExitReport{Host: a.host, Rank: s.Rank, Incarnation: s.Incarnation, StartErr: err})
			}()
		}
		return
	}
	defer devnull.Close()
	var started sync.WaitGroup
	for _, s := range specs {
		started.Add(1)
		a.wg.Add(1)
		go a.run(s, devnull, &started, release)
	}
	started.Wait()
}

// run starts the rank of s, reports its output and, once it is gone and
// reaped, its exit. started is done once the rank started or failed to;
// release holds its output until the start was announced.
func (a *LocalAgent) run(s RankSpec, devnull *os.File, started *sync.WaitGroup, release <-chan struct{}) {
	defer a.wg.Done()
	rep := ExitReport{Host: a.host, Rank: s.Rank, Incarnation: s.Incarnation}
	var bell *exitbell.Bell
	dr, _ := a.rep.(DyingReporter)
	if dr != nil && dr.ExitBells() {
		bell, _ = exitbell.New() // none: the rank's death is seen when it is reaped
	}
	pipes, err := openRankPipes(s, devnull, bell)
	if err != nil {
		if bell != nil {
			bell.Stop()
		}
		started.Done()
		rep.StartErr = err
		a.rep.Exited(rep)
		return
	}
	lp := &localProc{inc: s.Incarnation}
	lp.mu.Lock() // nobody signals the rank before its pid is known
	a.mu.Lock()
	a.procs[s.Rank] = lp
	a.mu.Unlock()
	reaped := make(chan struct{}) // closed once the process is reaped
	defer close(reaped)
	p, cpus, bindDesc, err := a.startProc(s, pipes, reaped)
	pipes.closeChildEnds()
	stopBell := func() {}
	if bell != nil {
		if err != nil {
			bell.Stop()
		} else {
			pid := p.Pid
			bell.CloseFile()
			stopBell = bell.Watch(func() { dr.Dying(s.Rank, s.Incarnation, pid) })
		}
	}
	if err != nil {
		lp.reaped = true
		lp.mu.Unlock()
		started.Done()
		pipes.outR.Close()
		pipes.errR.Close()
		rep.StartErr = err
		a.rep.Exited(rep)
		return
	}
	lp.pid = p.Pid
	rep.Pid = p.Pid
	lp.mu.Unlock()
	started.Done()

	var readers sync.WaitGroup
	readers.Add(2)
	go a.forward(s.Rank, false, drained{pipes.outR}, &readers, release)
	var report string
	if s.ReportBinding {
		report = bindingReport(a.host, s.Rank, p.Pid, s.Bind, bindDesc, cpus)
	}
	go func() {
		if report != "" {
			<-release // before the rank's own lines, after the announce
			if a.Note != nil {
				a.Note(report)
			} else {
				a.rep.Output(s.Rank, true, []byte("ftmpirun: "+report+"\n"))
			}
		}
		a.forward(s.Rank, true, drained{pipes.errR}, &readers, release)
	}()
	reap(p, lp, &rep)
	stopBell() // after its Dying, if it rang: before its Exited

	deadline := time.Now().Add(drainGrace)
	_ = pipes.outR.SetReadDeadline(deadline)
	_ = pipes.errR.SetReadDeadline(deadline)
	readers.Wait()
	pipes.outR.Close()
	pipes.errR.Close()
	a.rep.Exited(rep)
}

// drained reads a rank's output pipe; once the drain deadline set after
// the rank was reaped has passed, it still returns what the pipe holds
// (non-blocking reads), and io.EOF when it is empty. A forwarder that
// first reads after the deadline (it waits for the start's announcement,
// and on a loaded host may not run for a while) would otherwise lose the
// lines the rank wrote before it exited: the runtime fails a read past
// its deadline without looking at the pipe.
type drained struct{ f *os.File }

func (d drained) Read(p []byte) (int, error) {
	n, err := d.f.Read(p)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	rc, cerr := d.f.SyscallConn()
	if cerr != nil {
		return n, err
	}
	var rerr error
	if cerr = rc.Control(func(fd uintptr) {
		for {
			n, rerr = unix.Read(int(fd), p) // the pipe is non-blocking (os.Pipe)
			if rerr != unix.EINTR {
				return
			}
		}
	}); cerr != nil {
		return 0, err
	}
	if n > 0 {
		return n, nil
	}
	if n == 0 && rerr == nil {
		return 0, io.EOF
	}
	return 0, err // empty (EAGAIN: an escaped descendant holds it) or failed
}

// rankPipes are the descriptors of one rank's start: its output pipes and
// the pipe that hands it the job's secret.
type rankPipes struct {
	outR, outW, errR, errW *os.File
	secret                 *os.File   // nil: no secret
	files                  []*os.File // the rank's descriptors 0, 1, 2 (and 3: the secret)
	env                    []string   // the rank's environment (with the secret's descriptor number)
}

// openRankPipes opens the pipes of the rank of s; on failure none is left
// open. A bell (nil: none) becomes one of the rank's descriptors, its
// number in exitbell.EnvFD.
func openRankPipes(s RankSpec, devnull *os.File, bell *exitbell.Bell) (*rankPipes, error) {
	p := &rankPipes{env: s.Env}
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.outR.Close()
		p.outW.Close()
		return nil, err
	}
	stdin := devnull
	if s.Stdin != nil {
		stdin = s.Stdin
	}
	p.files = []*os.File{stdin, p.outW, p.errW}
	if s.Auth != nil {
		// The job's secret: the read end of a pipe that holds it becomes
		// the child's descriptor 3; only its number is in the environment.
		if p.secret, err = s.Auth.Pipe(); err != nil {
			p.outR.Close()
			p.outW.Close()
			p.errR.Close()
			p.errW.Close()
			return nil, err
		}
		p.files = append(p.files, p.secret)
		p.env = SetEnv(p.env, wireauth.EnvFD, strconv.Itoa(len(p.files)-1))
	}
	if bell != nil {
		p.files = append(p.files, bell.File())
		p.env = SetEnv(p.env, exitbell.EnvFD, strconv.Itoa(len(p.files)-1))
	}
	return p, nil
}

// closeChildEnds closes the ends the rank holds (once it started, or
// failed to).
func (p *rankPipes) closeChildEnds() {
	p.outW.Close()
	p.errW.Close()
	if p.secret != nil {
		p.secret.Close()
	}
}

// startProc starts the process of s in a process group of its own, bound
// to the CPUs of --bind-to if asked (then cpus and bindDesc say which).
func (a *LocalAgent) startProc(s RankSpec, pipes *rankPipes, reaped <-chan struct{}) (p *os.Process, cpus []int, bindDesc string, err error) {
	attr := &os.ProcAttr{
		Dir:   s.Dir,
		Env:   pipes.env,
		Files: pipes.files,
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if s.Bind != "" {
		a.coresOnce.Do(func() { a.cores, a.coresErr = hostCores() })
		if a.coresErr != nil {
			return nil, nil, "", fmt.Errorf("--bind-to %s: %v", s.Bind, a.coresErr)
		}
		cpus, bindDesc = bindCPUs(s.Bind, s.Slot, a.cores)
	}
	argv := append([]string{s.Path}, s.Args...)
	if cpus != nil {
		p, err = startBound(cpus, s.Path, argv, attr, reaped)
	} else {
		p, err = os.StartProcess(s.Path, argv, attr)
	}
	return p, cpus, bindDesc, err
}

// reap waits for p's exit without reaping it, so that the pid (and with
// it the process group id) cannot be reused while the leftovers of the
// group are killed; then it reaps p and records how it ended in rep.
func reap(p *os.Process, lp *localProc, rep *ExitReport) {
	for {
		var si unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.Pid, &si, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	lp.mu.Lock()
	_ = unix.Kill(-p.Pid, unix.SIGKILL)
	st, werr := p.Wait()
	lp.reaped = true
	lp.mu.Unlock()
	if werr != nil {
		rep.StartErr = werr
	} else if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		rep.Signal = ws.Signal()
	} else {
		rep.Status = st.ExitCode()
	}
}

// forward reads r line by line and reports each line.
func (a *LocalAgent) forward(rank int, stderr bool, r io.Reader, wg *sync.WaitGroup, release <-chan struct{}) {
	defer wg.Done()
	<-release
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if err == nil && buf == nil {
				a.rep.Output(rank, stderr, append([]byte(nil), chunk...))
				continue
			}
			buf = append(buf, chunk...)
		}
		if err == nil || len(buf) >= maxLine {
			a.rep.Output(rank, stderr, buf)
			buf = nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > 0 {
				a.rep.Output(rank, stderr, buf) // partial last line
			}
			return
		}
	}
}

// Signal implements Agent.
func (a *LocalAgent) Signal(rank int, sig syscall.Signal) {
	a.mu.Lock()
	lp := a.procs[rank]
	a.mu.Unlock()
	if lp != nil {
		lp.signal(sig)
	}
}

// SignalIncarnation implements Agent.
func (a *LocalAgent) SignalIncarnation(rank, inc int, sig syscall.Signal) {
	a.mu.Lock()
	lp := a.procs[rank]
	a.mu.Unlock()
	if lp != nil && lp.inc == inc {
		lp.signal(sig)
	}
}

// SignalAll implements Agent.
func (a *LocalAgent) SignalAll(sig syscall.Signal) {
	a.mu.Lock()
	procs := make([]*localProc, 0, len(a.procs))
	for _, lp := range a.procs {
		procs = append(procs, lp)
	}
	a.mu.Unlock()
	for _, lp := range procs {
		lp.signal(sig)
	}
}

func (lp *localProc) signal(sig syscall.Signal) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if !lp.reaped && lp.pid > 0 {
		_ = unix.Kill(-lp.pid, sig)
	}
}

// Wait implements Agent.
func (a *LocalAgent) Wait() { a.wg.Wait() }

// Pid is the process id of incarnation inc of rank, 0 if this agent does
// not run it (or it has been reaped).
func (a *LocalAgent) Pid(rank, inc int) int {
	a.mu.Lock()
	lp := a.procs[rank]
	a.mu.Unlock()
	if lp == nil {
		return 0
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.inc != inc || lp.reaped {
		return 0
	}
	return lp.pid
}
