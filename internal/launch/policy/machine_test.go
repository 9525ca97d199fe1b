package policy

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

func newM(t *testing.T, n int, mode Mode) *Machine {
	t.Helper()
	m, err := New(Config{Job: "job", Size: n, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func kinds(acts []Action) []ActionKind {
	var ks []ActionKind
	for _, a := range acts {
		ks = append(ks, a.Kind)
	}
	return ks
}

func wantKinds(t *testing.T, what string, acts []Action, want ...ActionKind) {
	t.Helper()
	if got := kinds(acts); !slices.Equal(got, want) {
		t.Fatalf("%s: actions %v, want %v\n%v", what, got, want, acts)
	}
}

// connect says hello for ranks 0..n-1 on connections 1..n.
func connect(t *testing.T, m *Machine, ranks ...int) {
	t.Helper()
	for _, r := range ranks {
		acts := m.Step(Hello{Conn: Conn(r + 1), ID: 1, Job: "job", Rank: r, Pid: 100 + r})
		if len(acts) == 0 || acts[0].Kind != Reply || acts[0].Msg.Op != ctlwire.OpHello {
			t.Fatalf("hello of rank %d: %v", r, acts)
		}
	}
}

// enterReinit has ranks call MPI_Reinit (a failure is recoverable only
// while every live rank is inside it, seed 000 1.4.2).
func enterReinit(t *testing.T, m *Machine, ranks ...int) {
	t.Helper()
	for _, r := range ranks {
		acts := m.Step(ReinitActive{Conn: Conn(r + 1), ID: 50, Kind: ctlwire.ReinitEnter})
		if len(acts) != 1 || acts[0].Kind != Reply || acts[0].Msg.Error != "" {
			t.Fatalf("enter of rank %d: %v", r, acts)
		}
	}
}

func find(acts []Action, k ActionKind) *Action {
	for i := range acts {
		if acts[i].Kind == k {
			return &acts[i]
		}
	}
	return nil
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Size: 0}, {Size: 2, Mode: 7}, {Size: 2, Mode: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if AbortCode(0) != 1 || AbortCode(256) != 1 || AbortCode(3) != 3 || AbortCode(-1) != 255 {
		t.Error("AbortCode")
	}
}

func TestHello(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	for _, c := range []struct {
		ev   Hello
		want string
	}{
		{Hello{Conn: 9, ID: 1, Job: "other", Rank: 0}, `job "other" is not this launcher's job`},
		{Hello{Conn: 9, ID: 1, Job: "job", Rank: 2}, "rank 2 out of range"},
		{Hello{Conn: 9, ID: 1, Job: "job", Rank: -1}, "rank -1 out of range"},
	} {
		acts := m.Step(c.ev)
		wantKinds(t, c.want, acts, Reply, Drop)
		if acts[0].Msg.Error != c.want {
			t.Errorf("error %q, want %q", acts[0].Msg.Error, c.want)
		}
	}
	connect(t, m, 0)
	wantKinds(t, "duplicate", m.Step(Hello{Conn: 1, ID: 2, Job: "job", Rank: 1}), Reply, Drop)
	acts := m.Step(Hello{Conn: 5, ID: 1, Job: "job", Rank: 0})
	if acts[0].Msg.Error != "rank 0 is already connected" {
		t.Errorf("%v", acts)
	}
	m.Step(Exited{Exit{Rank: 1, Status: 0}}) // a plain program: gone, no failure
	if acts := m.Step(Hello{Conn: 6, ID: 1, Job: "job", Rank: 1}); acts[0].Msg.Error != "rank 1 is gone" {
		t.Errorf("%v", acts)
	}
}

func TestRequestBeforeHello(t *testing.T) {
	m := newM(t, 2, ModeAbort)
	for _, ev := range []Event{Fence{Conn: 3, ID: 1}, Finalize{Conn: 3, ID: 1}, Suspect{Conn: 3, ID: 1}, Abort{Conn: 3, ID: 1}, Unknown{Conn: 3, ID: 1, Op: "x"}} {
		acts := m.Step(ev)
		wantKinds(t, "before hello", acts, Reply, Drop)
		if acts[0].Msg.Error != "first message must be hello" {
			t.Errorf("%T: %v", ev, acts)
		}
	}
	connect(t, m, 0)
	if acts := m.Step(Unknown{Conn: 1, ID: 4, Op: "dance"}); acts[0].Msg.Error != `unknown op "dance"` || len(acts) != 1 {
		t.Errorf("%v", acts)
	}
}

func TestFence(t *testing.T) {
	m := newM(t, 3, ModeContinue)
	connect(t, m, 0, 1, 2)
	wantKinds(t, "first", m.Step(Fence{Conn: 1, ID: 2, KV: map[string]string{"a": "0"}}))
	m.Step(Exited{Exit{Rank: 2, Signal: syscall.SIGKILL}}) // rank 2 fails
	acts := m.Step(Fence{Conn: 2, ID: 2, KV: map[string]string{"b": "1"}})
	wantKinds(t, "complete", acts, Reply, Reply)
	for _, a := range acts {
		if a.Msg.Op != ctlwire.OpFence || a.Msg.KV["a"] != "0" || a.Msg.KV["b"] != "1" || !slices.Equal(a.Msg.Failed, []int{2}) {
			t.Errorf("fence reply %+v", a.Msg)
		}
	}
	if acts[0].Conn != 1 || acts[0].Msg.ID != 2 || acts[1].Conn != 2 {
		t.Errorf("replies to %d, %d", acts[0].Conn, acts[1].Conn)
	}
}

func TestFinalizeAndExitCode(t *testing.T) {
	m := newM(t, 2, ModeAbort)
	connect(t, m, 0, 1)
	wantKinds(t, "one", m.Step(Finalize{Conn: 1, ID: 3}))
	acts := m.Step(Finalize{Conn: 2, ID: 3})
	wantKinds(t, "all", acts, Reply, Reply)
	m.Step(Exited{Exit{Rank: 1, Status: 0}})
	acts = m.Step(Exited{Exit{Rank: 0, Status: 7}})
	wantKinds(t, "last exit", acts, Done)
	if m.ExitCode() != 7 || m.Outcome().Failed {
		t.Errorf("exit code %d, outcome %+v", m.ExitCode(), m.Outcome())
	}
}

func TestAbort(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	connect(t, m, 0, 1)
	acts := m.Step(Abort{Conn: 2, ID: 3, Code: 256 + 4, Reason: "bad"})
	wantKinds(t, "abort", acts, Reply, TearDown, Log, SignalAll)
	if acts[1].Cause != (Cause{CauseAbort, 4}) || acts[3].Sig != syscall.SIGKILL || !strings.Contains(acts[2].Text, "rank 1 aborted the job with code 260: bad") {
		t.Errorf("%v", acts)
	}
	wantKinds(t, "second", m.Step(Abort{Conn: 1, ID: 3, Code: 9}), Reply)
	// Nobody returns from a fence during the teardown.
	wantKinds(t, "fence", m.Step(Fence{Conn: 1, ID: 4}))
	m.Step(Exited{Exit{Rank: 0, Signal: syscall.SIGKILL}})
	m.Step(Exited{Exit{Rank: 1, Signal: syscall.SIGKILL}})
	if m.ExitCode() != 4 {
		t.Errorf("exit code %d, want the first abort's 4", m.ExitCode())
	}
}

func TestSuspectConfirmed(t *testing.T) {
	m := newM(t, 3, ModeContinue)
	connect(t, m, 0, 1, 2)
	acts := m.Step(Suspect{Conn: 1, ID: 5, Rank: 2, Reason: "no heartbeat"})
	wantKinds(t, "suspect", acts, Check)
	if acts[0].Rank != 2 || acts[0].Pid != 102 || acts[0].Incarnation != 0 {
		t.Fatalf("%v", acts[0])
	}
	acts = m.Step(Liveness{Token: acts[0].Token, State: "stopped", Stopped: true})
	// Notify before the kill, the reply and the log.
	wantKinds(t, "confirmed", acts, Notify, Signal, Reply, Log)
	if !slices.Equal(acts[0].To, []Conn{1, 2}) || acts[0].Msg.Kind != ctlwire.EventFailed || acts[0].Msg.Rank != 2 ||
		!strings.Contains(acts[0].Msg.Reason, "declared failed by rank 0: no heartbeat") {
		t.Errorf("notify %v %+v", acts[0], acts[0].Msg)
	}
	if a := acts[1]; a.Rank != 2 || a.Incarnation != 0 || a.Sig != syscall.SIGKILL || a.Why != WhySuspect || a.AnyIncarnation {
		t.Errorf("kill %v", a)
	}
	if acts[2].Conn != 1 || acts[2].Msg.Op != ctlwire.OpSuspect || acts[2].Msg.Error != "" {
		t.Errorf("reply %v", acts[2])
	}
	// Another suspicion of the dying process kills again, without asking.
	wantKinds(t, "again", m.Step(Suspect{Conn: 2, ID: 5, Rank: 2}), Signal, Reply)
	// Its reaped death tells nobody again.
	acts = m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGKILL}})
	wantKinds(t, "reaped", acts, Mark, Log, Check, Check) // the launcher looks at ranks 0 and 1 (checkOthers)
	if !strings.Contains(acts[1].Text, "killed by signal 9 (killed), declared failed by rank 0: no heartbeat; continuing") {
		t.Errorf("%q", acts[1].Text)
	}
	// A late suspicion of the gone process is answered at once.
	wantKinds(t, "late", m.Step(Suspect{Conn: 2, ID: 6, Rank: 2}), Reply)
}

func TestSuspectRefused(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	connect(t, m, 0, 1)
	acts := m.Step(Suspect{Conn: 1, ID: 5, Rank: 1, Reason: "slow"})
	acts = m.Step(Liveness{Token: acts[0].Token, State: "sleeping", Alive: true})
	// Starvation is not a failure: no log line (but under -v).
	wantKinds(t, "alive", acts, Reply)
	if acts[0].Msg.Error != "suspect: rank 1 is alive (process 101 sleeping); not killed" {
		t.Errorf("%q", acts[0].Msg.Error)
	}
	// An answer for an unknown token changes nothing.
	wantKinds(t, "unknown token", m.Step(Liveness{Token: 99}))
	mv, _ := New(Config{Job: "job", Size: 2, Mode: ModeContinue, Verbose: true})
	connect(t, mv, 0, 1)
	acts = mv.Step(Suspect{Conn: 1, ID: 5, Rank: 1, Reason: "slow"})
	acts = mv.Step(Liveness{Token: acts[0].Token, State: "sleeping", Alive: true})
	wantKinds(t, "alive, verbose", acts, Reply, Log)
}

// A rank that finalized and is exiting (not yet reaped) is not killed on
// a suspicion, and its end is no failure; one that finalized and is
// stopped (hung in the fence) is killed.
func TestSuspectFinalizedRank(t *testing.T) {
	for _, st := range []string{"exiting", "dead", "gone"} {
		m := newM(t, 3, ModeContinue)
		connect(t, m, 0, 1, 2)
		m.Step(Finalize{Conn: 3, ID: 4})
		acts := m.Step(Suspect{Conn: 1, ID: 5, Rank: 2, Reason: "no heartbeat"})
		acts = m.Step(Liveness{Token: acts[0].Token, State: st})
		wantKinds(t, st, acts, Reply)
		if !strings.Contains(acts[0].Msg.Error, "rank 2 finalized") {
			t.Errorf("%s: %q", st, acts[0].Msg.Error)
		}
		m.Step(Exited{Exit{Rank: 2, Status: 0}})
		if m.Outcome().Failed {
			t.Errorf("%s: a finalized rank's exit counted as a failure", st)
		}
	}
	m := newM(t, 3, ModeContinue)
	connect(t, m, 0, 1, 2)
	m.Step(Finalize{Conn: 3, ID: 4})
	acts := m.Step(Suspect{Conn: 1, ID: 5, Rank: 2, Reason: "no heartbeat"})
	acts = m.Step(Liveness{Token: acts[0].Token, State: "stopped", Stopped: true})
	if s := find(acts, Signal); s == nil || s.Sig != syscall.SIGKILL || s.Rank != 2 {
		t.Errorf("stopped finalized rank not killed: %v", acts)
	}
}

func TestSuspectErrorsAndStale(t *testing.T) {
	m := newM(t, 2, ModeReinit)
	m.EnableRespawn(3)
	connect(t, m, 0, 1)
	enterReinit(t, m, 0, 1)
	if acts := m.Step(Suspect{Conn: 1, ID: 5, Rank: 4}); acts[0].Msg.Error != "suspect: rank 4 out of range [0, 2)" {
		t.Errorf("%v", acts)
	}
	if acts := m.Step(Suspect{Conn: 1, ID: 5, Rank: 0}); acts[0].Msg.Error != "suspect: rank 0 suspects itself" {
		t.Errorf("%v", acts)
	}
	// Rank 1 dies and is respawned as incarnation 1.
	acts := m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGSEGV}})
	if r := find(acts, Respawn); r == nil || r.Rank != 1 || r.Incarnation != 1 || r.Epoch != 1 {
		t.Fatalf("%v", acts)
	}
	m.Step(Hello{Conn: 7, ID: 1, Job: "job", Rank: 1, Incarnation: 1, Pid: 201})
	// A suspicion of incarnation 0 never touches incarnation 1.
	acts = m.Step(Suspect{Conn: 1, ID: 6, Rank: 1, Incarnation: 0})
	wantKinds(t, "stale", acts, Reply)
	if acts[0].Msg.Error != "" {
		t.Errorf("%v", acts)
	}
	// One of incarnation 1 checks incarnation 1's process.
	if acts := m.Step(Suspect{Conn: 1, ID: 7, Rank: 1, Incarnation: 1}); acts[0].Kind != Check || acts[0].Incarnation != 1 || acts[0].Pid != 201 {
		t.Errorf("%v", acts)
	}
}

// A process reaped while its suspicion is being checked: the suspicion is
// answered, nothing is killed.
func TestSuspectReapedDuringCheck(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	connect(t, m, 0, 1)
	chk := m.Step(Suspect{Conn: 1, ID: 5, Rank: 1})[0]
	acts := m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}})
	wantKinds(t, "reaped", acts, Mark, Notify, Log, Check, Reply)
	if acts[4].Conn != 1 || acts[4].Msg.Op != ctlwire.OpSuspect {
		t.Errorf("%v", acts[4])
	}
	wantKinds(t, "late answer", m.Step(Liveness{Token: chk.Token, State: "gone"}))
}

func TestExitedAbortMode(t *testing.T) {
	m := newM(t, 3, ModeAbort)
	connect(t, m, 0, 1, 2)
	acts := m.Step(Exited{Exit{Rank: 1, Pid: 101, Status: 0}})
	wantKinds(t, "failure", acts, Mark, Log, TearDown, SignalAll)
	if acts[1].Text != "rank 1 (pid 101) exited with status 0 before MPI finalize" || acts[2].Cause != (Cause{CauseFailure, 1}) {
		t.Errorf("%v", acts)
	}
	wantKinds(t, "torn down", m.Step(Exited{Exit{Rank: 2, Signal: syscall.SIGKILL}}))
	m.Step(Exited{Exit{Rank: 0, Signal: syscall.SIGKILL}})
	if m.ExitCode() != 1 {
		t.Errorf("exit code %d", m.ExitCode())
	}
	o := m.Outcome()
	if !o.Failed || o.Failure.Rank != 1 || o.Code != 1 || !o.Relaunch {
		t.Errorf("outcome %+v", o)
	}
}

func TestExitedContinueMode(t *testing.T) {
	m := newM(t, 4, ModeContinue)
	connect(t, m, 0, 1, 2)
	// A connected rank dies: everyone else is told, then it is logged.
	acts := m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGSEGV}})
	wantKinds(t, "failure", acts, Mark, Notify, Log, Check, Check, Check)
	if !slices.Equal(acts[1].To, []Conn{1, 3}) || acts[1].Msg.Rank != 1 {
		t.Errorf("%v", acts[1])
	}
	// A late connector learns of it at hello.
	acts = m.Step(Hello{Conn: 4, ID: 1, Job: "job", Rank: 3})
	wantKinds(t, "late", acts, Reply, Notify)
	if !slices.Equal(acts[1].To, []Conn{4}) || acts[1].Msg.Rank != 1 {
		t.Errorf("%v", acts[1])
	}
	// A rank killed after finalizing is no failure but is told.
	m.Step(Finalize{Conn: 3, ID: 2})
	wantKinds(t, "after finalize", m.Step(Exited{Exit{Rank: 2, Signal: syscall.SIGKILL}}), Notify)
	// Rank 0 and 3 finalize and exit: 0 returned from Finalize.
	m.Step(Finalize{Conn: 1, ID: 2})
	acts = m.Step(Finalize{Conn: 4, ID: 2})
	wantKinds(t, "finalized", acts, Reply, Reply, Reply)
	m.Step(Exited{Exit{Rank: 3, Status: 5}})
	m.Step(Exited{Exit{Rank: 0, Status: 3}})
	if !m.Done() || m.ExitCode() != 3 {
		t.Errorf("done %v exit code %d, want rank 0's 3 (the lowest that returned from Finalize)", m.Done(), m.ExitCode())
	}
}

func TestExitedPlainProgramAndStartError(t *testing.T) {
	m := newM(t, 2, ModeAbort)
	wantKinds(t, "plain", m.Step(Exited{Exit{Rank: 1, Status: 3}}))
	acts := m.Step(Exited{Exit{Rank: 0, StartErr: errors.New("no such file")}})
	wantKinds(t, "start error", acts, Log, TearDown, SignalAll, Done)
	if m.ExitCode() != 1 || acts[1].Cause.Kind != CauseStart {
		t.Errorf("exit code %d", m.ExitCode())
	}
}

func TestInject(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	acts := m.Step(Inject{Rank: 1, Signal: syscall.SIGKILL, At: 5})
	wantKinds(t, "inject", acts, Log, Signal)
	if a := acts[1]; a.Why != WhyInject || a.Rank != 1 || a.Sig != syscall.SIGKILL {
		t.Errorf("%v", a)
	}
	// Not connected, but killed by the launcher: a failure.
	connect(t, m, 0)
	acts = m.Step(Exited{Exit{Rank: 1, Signal: syscall.SIGKILL}})
	wantKinds(t, "failure", acts, Mark, Notify, Log, Check)
	if !strings.Contains(acts[2].Text, "injected kill at 5ns") {
		t.Errorf("%q", acts[2].Text)
	}
	wantKinds(t, "gone", m.Step(Inject{Rank: 1, Signal: syscall.SIGSTOP}))
	if acts := m.Step(Inject{Rank: 9, Signal: syscall.SIGSTOP}); len(acts) != 1 || acts[0].Kind != Log {
		t.Errorf("%v", acts)
	}
}

func TestTimeoutInterruptGrace(t *testing.T) {
	m := newM(t, 1, ModeAbort)
	acts := m.Step(Timeout{After: 3})
	wantKinds(t, "timeout", acts, TearDown, Log, SignalAll)
	wantKinds(t, "second timeout", m.Step(Timeout{}))
	m.Step(Exited{Exit{Rank: 0, Signal: syscall.SIGKILL}})
	if m.ExitCode() != 124 {
		t.Errorf("exit code %d", m.ExitCode())
	}

	m = newM(t, 1, ModeAbort)
	acts = m.Step(Interrupt{Signal: syscall.SIGINT, Code: 130})
	wantKinds(t, "interrupt", acts, TearDown, Log, SignalAll, ArmGrace)
	if acts[2].Sig != syscall.SIGTERM {
		t.Errorf("%v", acts[2])
	}
	if acts := m.Step(Grace{}); acts[0].Sig != syscall.SIGKILL {
		t.Errorf("%v", acts)
	}
	if acts := m.Step(Interrupt{Signal: syscall.SIGINT, Code: 130}); acts[0].Kind != SignalAll || acts[0].Sig != syscall.SIGKILL {
		t.Errorf("%v", acts)
	}
	m.Step(Exited{Exit{Rank: 0, Signal: syscall.SIGTERM}})
	if m.ExitCode() != 130 {
		t.Errorf("exit code %d", m.ExitCode())
	}
}

func TestClosed(t *testing.T) {
	m := newM(t, 3, ModeContinue)
	connect(t, m, 0, 1, 2)
	m.Step(Closed{Conn: 2})
	if acts := m.Step(Exited{Exit{Rank: 2, Signal: syscall.SIGKILL}}); !slices.Equal(find(acts, Notify).To, []Conn{1}) {
		t.Errorf("%v", acts)
	}
	wantKinds(t, "request on a closed connection", m.Step(Fence{Conn: 2, ID: 9}), Reply, Drop)
}

func TestReinit(t *testing.T) {
	m := newM(t, 3, ModeReinit)
	m.EnableRespawn(1)
	connect(t, m, 0, 1, 2)
	enterReinit(t, m, 0, 1, 2)
	// Rank 0 waits in the fence of epoch 0 (none yet): answered at once.
	if acts := m.Step(Rejoin{Conn: 1, ID: 2, Epoch: 1}); acts[0].Msg.Epoch != 0 || acts[0].Msg.KV != nil {
		t.Errorf("%v", acts)
	}
	acts := m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGKILL}})
	wantKinds(t, "failure", acts, Mark, Notify, Mark, Respawn, Log, Check, Check)
	if n := acts[1]; !slices.Equal(n.To, []Conn{1, 2}) || n.Msg.Kind != ctlwire.EventReinit || n.Msg.Epoch != 1 || n.Msg.Rank != 2 {
		t.Errorf("%v", n)
	}
	// The epoch's fence: survivors and the new process.
	wantKinds(t, "rejoin 0", m.Step(Rejoin{Conn: 1, ID: 3, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, 0): "a"}}))
	wantKinds(t, "rejoin 1", m.Step(Rejoin{Conn: 2, ID: 3, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, 1): "b"}}))
	m.Step(Hello{Conn: 9, ID: 1, Job: "job", Rank: 2, Incarnation: 1})
	acts = m.Step(Rejoin{Conn: 9, ID: 2, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, 2): "c"}})
	wantKinds(t, "complete", acts, Reply, Reply, Reply)
	if len(acts[2].Msg.KV) != 3 || acts[2].Msg.Epoch != 1 {
		t.Errorf("%+v", acts[2].Msg)
	}
	if acts := m.Step(ReinitActive{Conn: 1, ID: 4, Kind: "sideways"}); acts[0].Msg.Error != `reinit: kind must be enter or leave, not "sideways"` {
		t.Errorf("%v", acts)
	}
	if acts := m.Step(ReinitActive{Conn: 1, ID: 4, Kind: ctlwire.ReinitEnter}); acts[0].Msg.Epoch != 1 {
		t.Errorf("%v", acts)
	}
	// The restart limit (1) is reached: the next failure ends the job.
	acts = m.Step(Exited{Exit{Rank: 1, Pid: 101, Status: 2}})
	wantKinds(t, "limit", acts, Log, TearDown, SignalAll)
	if !strings.Contains(acts[0].Text, "restart limit reached (--max-restarts 1)") || acts[1].Cause != (Cause{CauseFailure, 2}) {
		t.Errorf("%v", acts)
	}
}

func TestReinitAfterLeaveIsFatal(t *testing.T) {
	m := newM(t, 2, ModeReinit)
	m.EnableRespawn(5)
	connect(t, m, 0, 1)
	m.Step(ReinitActive{Conn: 1, ID: 4, Kind: ctlwire.ReinitLeave})
	acts := m.Step(Exited{Exit{Rank: 1, Signal: syscall.SIGKILL}})
	wantKinds(t, "after leave", acts, Mark, Log, TearDown, SignalAll)
	if !strings.Contains(acts[1].Text, "after rank 0 returned from MPI_Reinit") {
		t.Errorf("%q", acts[1].Text)
	}
}

func spawnReq(t *testing.T, conn Conn, root bool, procs ...int) Spawn {
	t.Helper()
	b, err := json.Marshal(ctlwire.SpawnRequest{Key: "k", Procs: procs, Root: root, MaxProcs: 2, Pairs: []int{4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	return Spawn{Conn: conn, ID: 7, Request: string(b)}
}

func TestSpawn(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1)
	m.Step(Fence{Conn: 1, ID: 2})
	m.Step(Fence{Conn: 2, ID: 2})
	if acts := m.Step(Spawn{Conn: 1, ID: 7, Request: "{"}); acts[0].Msg.Error != "spawn: malformed request" {
		t.Errorf("%v", acts)
	}
	if acts := m.Step(spawnReq(t, 1, true, 1)); acts[0].Msg.Error != "spawn: process 0 is not among the parents [1]" {
		t.Errorf("%v", acts)
	}
	wantKinds(t, "root", m.Step(spawnReq(t, 1, true, 0, 1)), Mark)
	acts := m.Step(spawnReq(t, 2, false, 0, 1))
	wantKinds(t, "all parents", acts, StartChildren)
	if s := acts[0].Start; s.Base != 2 || s.K != 2 || s.Parent != ctlwire.FormatParent([]int{4, 5}, []int{0, 1}) {
		t.Errorf("%+v", s)
	}
	// The children initialise: every parent gets their endpoints.
	m.Step(Hello{Conn: 3, ID: 1, Job: "job", Rank: 2})
	m.Step(Hello{Conn: 4, ID: 1, Job: "job", Rank: 3})
	wantKinds(t, "child 0", m.Step(Fence{Conn: 3, ID: 2, KV: map[string]string{ctlwire.EndpointKey(2): "e2"}}))
	acts = m.Step(Fence{Conn: 4, ID: 2, KV: map[string]string{ctlwire.EndpointKey(3): "e3"}})
	wantKinds(t, "child 1", acts, Reply, Reply, Reply, Reply) // the children's fence, then the parents
	if acts[2].Conn != 1 || acts[3].Conn != 2 {
		t.Errorf("spawn replies to %d, %d", acts[2].Conn, acts[3].Conn)
	}
	for _, a := range acts[2:] {
		if a.Msg.Op != ctlwire.OpSpawn || a.Msg.KV["n"] != "2" || a.Msg.KV["0"] != "e2" || a.Msg.KV["1"] != "e3" {
			t.Errorf("%+v", a.Msg)
		}
	}
}

// spawnReqOf is a non-root parent's request as the runtime sends it: the
// root's process named, the parents not listed (only the root lists them:
// n^2 bytes at the head otherwise).
func spawnReqOf(t *testing.T, conn Conn, rootProc int) Spawn {
	t.Helper()
	b, err := json.Marshal(ctlwire.SpawnRequest{Key: "k", RootProc: rootProc, Pairs: []int{4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Procs\":[") {
		t.Fatalf("a non-root request lists the parents: %s", b)
	}
	return Spawn{Conn: conn, ID: 7, Request: string(b)}
}

// Only the root's request lists the parents. The others name the root:
// they wait for its list (the spawn starts once it came and every parent
// asked), a root that dies first fails the spawn at every waiting parent
// as a process failure, and a parent that turns out not to be among the
// root's list is a mismatched collective for all.
func TestSpawnOnlyTheRootListsTheParents(t *testing.T) {
	m := newM(t, 3, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1, 2)
	wantKinds(t, "first non-root", m.Step(spawnReqOf(t, 1, 2)), Mark)
	wantKinds(t, "second non-root", m.Step(spawnReqOf(t, 2, 2)))
	acts := m.Step(spawnReq(t, 3, true, 0, 1, 2)) // process 2 is the root
	wantKinds(t, "root", acts, StartChildren)
	if s := acts[0].Start; s.Base != 3 || s.K != 2 || s.Parent != ctlwire.FormatParent([]int{4, 5}, []int{0, 1, 2}) {
		t.Errorf("%+v", s)
	}

	m = newM(t, 3, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1, 2)
	m.Step(spawnReqOf(t, 1, 2))
	m.Step(spawnReqOf(t, 2, 2))
	wantReplies(t, "root died", m.Step(Exited{Exit{Rank: 2, Signal: syscall.SIGKILL}}), 2, func(msg ctlwire.Msg) bool {
		return slices.Equal(msg.Failed, []int{2}) && strings.Contains(msg.Error, "parent process 2 (the root) failed")
	})

	m = newM(t, 3, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1, 2)
	m.Step(spawnReqOf(t, 1, 1))
	m.Step(spawnReqOf(t, 3, 1))
	// The root's group leaves process 2 out.
	wantReplies(t, "stray parent", m.Step(spawnReq(t, 2, true, 0, 1)), 3, func(msg ctlwire.Msg) bool {
		return strings.Contains(msg.Error, "process 2 is not among the parents [0 1]: mismatched collective")
	})
	// Two parents naming different roots are a mismatched collective too.
	m = newM(t, 3, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1, 2)
	m.Step(spawnReqOf(t, 1, 2))
	acts = m.Step(spawnReqOf(t, 2, 0))
	if r := find(acts, Reply); r == nil || !strings.Contains(r.Msg.Error, "takes process 0 for the root, another parent process 2") {
		t.Errorf("two roots named: %v", acts)
	}
}

// wantReplies checks that acts hold n replies, each one ok accepts.
func wantReplies(t *testing.T, what string, acts []Action, n int, ok func(ctlwire.Msg) bool) {
	t.Helper()
	var got int
	for _, a := range acts {
		if a.Kind == Reply {
			got++
			if !ok(a.Msg) {
				t.Errorf("%s: %+v", what, a.Msg)
			}
		}
	}
	if got != n {
		t.Errorf("%s: %d replies, want %d: %v", what, got, n, acts)
	}
}

func TestSpawnFailureIsUniform(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1)
	m.Step(spawnReq(t, 1, true, 0, 1))
	m.Step(spawnReq(t, 2, false, 0, 1))
	m.Step(Hello{Conn: 3, ID: 1, Job: "job", Rank: 2})
	// Child 1 dies before initialising: both parents get the error, child 0
	// is killed, and its death is no failure.
	acts := m.Step(Exited{Exit{Rank: 3, Pid: 300, Status: 1}})
	wantKinds(t, "child died", acts, Reply, Reply, Signal, Log)
	if !strings.Contains(acts[0].Msg.Error, "child 1 (process 3) exited with status 1 before initialising") || len(acts[0].Msg.Failed) != 0 {
		t.Errorf("%+v", acts[0].Msg)
	}
	if a := acts[2]; a.Rank != 2 || !a.AnyIncarnation || a.Why != WhyCancel {
		t.Errorf("%v", a)
	}
	wantKinds(t, "cancelled child", m.Step(Exited{Exit{Rank: 2, Signal: syscall.SIGKILL}}))
	// A late request of the same spawn gets the same outcome.
	if acts := m.Step(spawnReq(t, 2, false, 0, 1)); acts[0].Msg.Error == "" {
		t.Errorf("%v", acts)
	}
}

func TestSpawnWithoutAgentOrRoot(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	connect(t, m, 0, 1)
	m.Step(spawnReq(t, 1, true, 0, 1))
	if acts := m.Step(spawnReq(t, 2, false, 0, 1)); acts[0].Msg.Error != "this launcher cannot start processes" {
		t.Errorf("%v", acts)
	}
	m = newM(t, 2, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1)
	m.Step(spawnReq(t, 1, false, 0, 1))
	// The other parent fails: the spawn fails with it.
	acts := m.Step(Exited{Exit{Rank: 1, Signal: syscall.SIGKILL}})
	r := find(acts, Reply)
	if r == nil || r.Msg.Error != "parent process 1 failed" {
		t.Errorf("%v", acts)
	}
}

// A parent killed on a confirmed suspicion is a failed parent at once,
// before its death is reaped, even when another parent's error ends the
// spawn first: every parent learns a process failed (ErrProcFailed).
func TestSpawnParentKilledBeforeReaped(t *testing.T) {
	m := newM(t, 3, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1, 2)
	chk := m.Step(Suspect{Conn: 1, ID: 5, Rank: 1})[0]
	m.Step(Liveness{Token: chk.Token, State: "dead"})
	b, _ := json.Marshal(ctlwire.SpawnRequest{Key: "k", Procs: []int{0, 1, 2}, Root: true, MaxProcs: 1, Pairs: []int{4, 5}, Error: "peer lost"})
	acts := m.Step(Spawn{Conn: 1, ID: 7, Request: string(b)})
	r := find(acts, Reply)
	if r == nil || !slices.Equal(r.Msg.Failed, []int{1}) || !strings.Contains(r.Msg.Error, "parent process 1 failed") {
		t.Fatalf("%v %+v", acts, r)
	}
}

// The shell finds the pid of a suspect that did not say it in its hello.
func TestSuspectPidFromShell(t *testing.T) {
	m := newM(t, 2, ModeContinue)
	m.Step(Hello{Conn: 1, ID: 1, Job: "job", Rank: 0})
	m.Step(Hello{Conn: 2, ID: 1, Job: "job", Rank: 1})
	chk := m.Step(Suspect{Conn: 1, ID: 5, Rank: 1})[0]
	if chk.Kind != Check || chk.Pid != 0 {
		t.Fatalf("%v", chk)
	}
	acts := m.Step(Liveness{Token: chk.Token, Pid: 4242, State: "stopped", Stopped: true})
	if n := find(acts, Notify); n == nil || !strings.Contains(n.Msg.Reason, "rank 1 (pid 4242) killed") {
		t.Fatalf("%v", acts)
	}
}

// Suspicions of a process whose check is pending share that check: one look
// at /proc, one kill, every suspecting rank answered.
func TestSuspicionsShareOneCheck(t *testing.T) {
	m := newM(t, 4, ModeContinue)
	connect(t, m, 0, 1, 2, 3)
	chk := m.Step(Suspect{Conn: 1, ID: 5, Rank: 3})[0]
	wantKinds(t, "second", m.Step(Suspect{Conn: 2, ID: 6, Rank: 3}))
	wantKinds(t, "third", m.Step(Suspect{Conn: 3, ID: 7, Rank: 3}))
	acts := m.Step(Liveness{Token: chk.Token, State: "exiting"})
	wantKinds(t, "confirmed", acts, Notify, Signal, Reply, Log, Reply, Reply)
	if acts[2].Conn != 1 || acts[4].Conn != 2 || acts[4].Msg.ID != 6 || acts[5].Conn != 3 || acts[5].Msg.ID != 7 {
		t.Errorf("%v", acts)
	}
	// Refused: every suspecting rank gets the refusal.
	m = newM(t, 3, ModeContinue)
	connect(t, m, 0, 1, 2)
	chk = m.Step(Suspect{Conn: 1, ID: 5, Rank: 2})[0]
	m.Step(Suspect{Conn: 2, ID: 6, Rank: 2})
	acts = m.Step(Liveness{Token: chk.Token, State: "running", Alive: true})
	wantKinds(t, "refused", acts, Reply, Reply)
	if acts[1].Conn != 2 || !strings.Contains(acts[1].Msg.Error, "is alive") {
		t.Errorf("%v", acts)
	}
	// Reaped while checking: all answered.
	m = newM(t, 3, ModeContinue)
	connect(t, m, 0, 1, 2)
	m.Step(Suspect{Conn: 1, ID: 5, Rank: 2})
	m.Step(Suspect{Conn: 2, ID: 6, Rank: 2})
	acts = m.Step(Exited{Exit{Rank: 2, Signal: syscall.SIGKILL}})
	if n := len(acts); n < 2 || acts[n-2].Kind != Reply || acts[n-1].Kind != Reply {
		t.Errorf("%v", acts)
	}
}

// A rank that left MPI_Reinit, finalized and exited cannot roll back
// either: a later failure ends the job (before, it was respawned and the
// new epoch's fence waited for the exited rank forever; found by the
// simulator, seed 136).
func TestReinitAfterLeaveAndExitIsFatal(t *testing.T) {
	m := newM(t, 2, ModeReinit)
	m.EnableRespawn(5)
	connect(t, m, 0, 1)
	m.Step(ReinitActive{Conn: 2, ID: 4, Kind: ctlwire.ReinitLeave})
	m.Step(Finalize{Conn: 2, ID: 5})
	m.Step(Exited{Exit{Rank: 1, Status: 0}})
	acts := m.Step(Exited{Exit{Rank: 0, Signal: syscall.SIGKILL}})
	if find(acts, Respawn) != nil || find(acts, TearDown) == nil {
		t.Fatalf("%v", acts)
	}
}

// A job without failure exits non-zero when any process did (like mpirun):
// the lowest process id's code, here rank 1's, though rank 0 exited 0.
func TestExitCodeWithoutFailureIsAnyNonZero(t *testing.T) {
	for _, mode := range []Mode{ModeAbort, ModeContinue} {
		m := newM(t, 3, mode)
		connect(t, m, 0, 1, 2)
		m.Step(Finalize{Conn: 1, ID: 3})
		m.Step(Finalize{Conn: 2, ID: 3})
		m.Step(Finalize{Conn: 3, ID: 3})
		m.Step(Exited{Exit{Rank: 2, Status: 6}})
		m.Step(Exited{Exit{Rank: 1, Status: 5}})
		m.Step(Exited{Exit{Rank: 0, Status: 0}})
		if !m.Done() || m.ExitCode() != 5 || m.Outcome().Failed {
			t.Errorf("mode %v: done %v, exit code %d, outcome %+v; want rank 1's 5", mode, m.Done(), m.ExitCode(), m.Outcome())
		}
	}
}

// Seed 000 1.4.2 / 1.6 item 6: a failure while a live rank has not called
// MPI_Reinit yet ends the job (no rollback location), as one after a rank
// returned from it does; once every live rank is inside, it is recovered.
func TestReinitFailureBeforeReinitIsFatal(t *testing.T) {
	m := newM(t, 3, ModeReinit)
	m.EnableRespawn(4)
	connect(t, m, 0, 1, 2)
	enterReinit(t, m, 0, 1) // rank 2 has not called MPI_Reinit
	acts := m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}})
	if find(acts, Respawn) != nil || find(acts, TearDown) == nil {
		t.Fatalf("a failure before rank 2 called MPI_Reinit was recovered: %v", acts)
	}
	if l := find(acts, Log); l == nil || !strings.Contains(l.Text, "before rank 2 called MPI_Reinit") {
		t.Fatalf("log does not name the rank outside MPI_Reinit: %v", acts)
	}

	m = newM(t, 3, ModeReinit)
	m.EnableRespawn(4)
	connect(t, m, 0, 1, 2)
	enterReinit(t, m, 0, 1, 2)
	acts = m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}})
	if find(acts, Respawn) == nil {
		t.Fatalf("a failure with every rank inside MPI_Reinit was not recovered: %v", acts)
	}
	// The respawned rank counts as inside: a second failure is recovered too.
	acts = m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGKILL}})
	if find(acts, Respawn) == nil {
		t.Fatalf("a failure during the recovery was not recovered: %v", acts)
	}
}

// TestFailureChecksTheOthers: a failure can end the only watch kept on a
// stopped process (a Reinit rollback closes the epoch whose heartbeats
// would have found it; Checkpoint-on-Failure survivors exit), so after a
// failure the launcher looks at every other live process: a stopped one
// is killed as failed, a running one is left alone, and nobody is
// answered (no rank asked). Chaos run: reinit-async, reinit-sync and cof
// at np 8, --chaos seed=4,mttf=1s,max=3,stop=0.5,from=1s (ranks 7 and 1
// stopped, rank 4 killed half a second later) hung until --timeout.
func TestFailureChecksTheOthers(t *testing.T) {
	for _, mode := range []Mode{ModeContinue, ModeReinit} {
		m := newM(t, 4, mode)
		m.EnableRespawn(4)
		connect(t, m, 0, 1, 2, 3)
		enterReinit(t, m, 0, 1, 2, 3)
		m.Step(Inject{Rank: 3, Signal: syscall.SIGSTOP})
		acts := m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}})
		var checks []Action
		for _, a := range acts {
			if a.Kind == Check {
				checks = append(checks, a)
			}
		}
		if len(checks) != 3 || checks[0].Rank != 0 || checks[1].Rank != 2 || checks[2].Rank != 3 || checks[2].Pid != 103 {
			t.Fatalf("mode %v: checks after the failure %v, want ranks 0, 2, 3", mode, checks)
		}
		wantKinds(t, "running", m.Step(Liveness{Token: checks[0].Token, Pid: 100, State: "running", Alive: true}))
		// An exiting process is not killed either: its agent reports it.
		wantKinds(t, "exiting", m.Step(Liveness{Token: checks[1].Token, Pid: 102, State: "exiting"}))
		acts = m.Step(Liveness{Token: checks[2].Token, Pid: 103, State: "stopped", Stopped: true})
		if mode == ModeContinue {
			wantKinds(t, "stopped", acts, Notify, Signal, Log)
		} else {
			wantKinds(t, "stopped", acts, Signal, Log)
		}
		kill := find(acts, Signal)
		if kill.Rank != 3 || kill.Sig != syscall.SIGKILL || kill.Why != WhySuspect {
			t.Errorf("mode %v: kill %v", mode, kill)
		}
		if l := find(acts, Log); !strings.Contains(l.Text, "killing rank 3: found stopped after the failure of rank 1") {
			t.Errorf("mode %v: log %q", mode, l.Text)
		}
	}
	// Abort mode ends the job anyway: no look.
	m := newM(t, 3, ModeAbort)
	connect(t, m, 0, 1, 2)
	if a := find(m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}}), Check); a != nil {
		t.Errorf("abort mode checks %v", a)
	}
}

// A rank's suspicion that joined the launcher's look is not lost when the
// look finds the process exiting: it is answered by the usual rules.
func TestSuspicionJoinsTheLaunchersLook(t *testing.T) {
	m := newM(t, 3, ModeContinue)
	connect(t, m, 0, 1, 2)
	acts := m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}})
	var look *Action
	for i := range acts {
		if acts[i].Kind == Check && acts[i].Rank == 2 {
			look = &acts[i]
		}
	}
	if look == nil {
		t.Fatalf("no look at rank 2: %v", acts)
	}
	wantKinds(t, "joins", m.Step(Suspect{Conn: 1, ID: 7, Rank: 2, Reason: "no heartbeat"}))
	acts = m.Step(Liveness{Token: look.Token, Pid: 102, State: "exiting"})
	wantKinds(t, "exiting", acts, Notify, Signal, Reply, Log)
	if r := find(acts, Reply); r.Conn != 1 || r.Msg.ID != 7 || r.Msg.Error != "" {
		t.Errorf("reply %v", r)
	}
	if l := find(acts, Log); !strings.Contains(l.Text, "killing rank 2: declared failed by rank 0: no heartbeat") {
		t.Errorf("log %q", l.Text)
	}
}

// A rank stopped before the ranks' heartbeat detector runs (here: it never
// reaches the start-up exchange) is watched by nobody: after two Stalls
// without fence progress the launcher looks at the ranks the fence waits
// for, leaves a running one alone and kills a stopped one, and the fence
// completes without it (chaos: cof np 8 seed 28 hung until --timeout).
func TestStalledFenceLooksAtTheMissing(t *testing.T) {
	m := newM(t, 4, ModeContinue)
	connect(t, m, 0, 1, 2, 3)
	wantKinds(t, "no waiters", m.Step(Stall{}))
	wantKinds(t, "no waiters again", m.Step(Stall{}))
	m.Step(Fence{Conn: 1, ID: 2})
	m.Step(Fence{Conn: 2, ID: 2})
	wantKinds(t, "first stall: waiters seen", m.Step(Stall{}))
	acts := m.Step(Stall{})
	wantKinds(t, "second stall: look", acts, Check, Check)
	if acts[0].Rank != 2 || acts[1].Rank != 3 || acts[1].Pid != 103 {
		t.Fatalf("looked at %v, want ranks 2 and 3 (the ones the fence waits for)", acts)
	}
	wantKinds(t, "a pending look is not repeated", m.Step(Stall{}))
	wantKinds(t, "running: only slow", m.Step(Liveness{Token: acts[0].Token, Pid: 102, State: "running", Alive: true}))
	kill := m.Step(Liveness{Token: acts[1].Token, Pid: 103, State: "stopped", Stopped: true})
	if k := find(kill, Signal); k == nil || k.Rank != 3 || k.Sig != syscall.SIGKILL {
		t.Fatalf("stopped rank 3 not killed: %v", kill)
	}
	if l := find(kill, Log); l == nil || !strings.Contains(l.Text, "killing rank 3: found stopped while the others waited for it at a launcher fence") {
		t.Fatalf("log %v", l)
	}
	m.Step(Fence{Conn: 3, ID: 2})
	acts = m.Step(Exited{Exit{Rank: 3, Pid: 103, Signal: syscall.SIGKILL}})
	var replies int
	for _, a := range acts {
		if a.Kind == Reply && a.Msg.Op == ctlwire.OpFence {
			replies++
			if !slices.Equal(a.Msg.Failed, []int{3}) {
				t.Errorf("fence reply names failed %v, want [3]", a.Msg.Failed)
			}
		}
	}
	if replies != 3 {
		t.Fatalf("%d fence replies after the stopped rank's death, want 3: %v", replies, acts)
	}
	// Progress re-arms: the next stall only notes the waiters.
	m.Step(Fence{Conn: 1, ID: 3})
	wantKinds(t, "new fence, first stall", m.Step(Stall{}))
}

// A rank stopped after its finalize fence completed (it sent Finalize, or
// Finalize returned, and it never exits) is watched by nobody: the
// detectors ended with the fence and the others exit. Two Stalls without
// progress have the launcher look at every such lingering process: a
// running one (working after MPI_Finalize) is left alone, a stopped one is
// killed, and its death is no failure: the job ends with the others' code,
// in every mode (chaos: reinit-sync np 8 seed 5008 printed its result and
// hung until --timeout).
func TestStallLooksAtFinalizedProcessesThatDoNotExit(t *testing.T) {
	for _, mode := range []Mode{ModeAbort, ModeContinue, ModeReinit} {
		m := newM(t, 3, mode)
		connect(t, m, 0, 1, 2)
		m.Step(Finalize{Conn: 1, ID: 2})
		m.Step(Finalize{Conn: 2, ID: 2})
		wantKinds(t, "fence complete", m.Step(Finalize{Conn: 3, ID: 2}), Reply, Reply, Reply)
		m.Step(Exited{Exit{Rank: 0, Pid: 100}})
		wantKinds(t, "first stall: lingering processes seen", m.Step(Stall{}))
		acts := m.Step(Stall{})
		wantKinds(t, "second stall: look", acts, Check, Check)
		if acts[0].Rank != 1 || acts[1].Rank != 2 || acts[1].Pid != 102 {
			t.Fatalf("%v: looked at %v, want ranks 1 and 2", mode, acts)
		}
		wantKinds(t, "a pending look is not repeated", m.Step(Stall{}))
		wantKinds(t, "running after Finalize: left alone", m.Step(Liveness{Token: acts[0].Token, Pid: 101, State: "running", Alive: true}))
		kill := m.Step(Liveness{Token: acts[1].Token, Pid: 102, State: "stopped", Stopped: true})
		if k := find(kill, Signal); k == nil || k.Rank != 2 || k.Sig != syscall.SIGKILL {
			t.Fatalf("%v: stopped rank 2 not killed: %v", mode, kill)
		}
		if l := find(kill, Log); l == nil || !strings.Contains(l.Text, "killing rank 2: found stopped after its finalize fence completed") {
			t.Fatalf("%v: log %v", mode, l)
		}
		acts = m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGKILL}})
		if find(acts, TearDown) != nil || find(acts, Respawn) != nil {
			t.Fatalf("%v: the death of a finalized rank tore down or respawned: %v", mode, acts)
		}
		// The one running after Finalize is looked at again while it lingers.
		m.Step(Stall{})
		wantKinds(t, "still lingering: look again", m.Step(Stall{}), Check)
		m.Step(Exited{Exit{Rank: 1, Pid: 101}})
		if !m.Done() || m.ExitCode() != 0 || m.Outcome().Failed {
			t.Fatalf("%v: done %v exit code %d outcome %+v, want a failure-free end with 0", mode, m.Done(), m.ExitCode(), m.Outcome())
		}
	}
}

// Continue mode after a failure reports the exit code of the lowest rank
// that exited after returning from Finalize (MPI 17.5.2): not that of a
// rank the launcher killed, stopped after its fence (it never exited).
func TestExitCodeSkipsRankKilledAfterFence(t *testing.T) {
	m := newM(t, 3, ModeContinue)
	connect(t, m, 0, 1, 2)
	for _, a := range m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGSEGV}}) {
		if a.Kind == Check { // the look at the others after a failure: running
			m.Step(Liveness{Token: a.Token, Pid: a.Pid, State: "running", Alive: true})
		}
	}
	m.Step(Finalize{Conn: 1, ID: 2})
	m.Step(Finalize{Conn: 2, ID: 2})
	m.Step(Exited{Exit{Rank: 1, Pid: 101, Status: 4}})
	m.Step(Stall{})
	var look *Action
	for _, a := range m.Step(Stall{}) {
		if a.Kind == Check && a.Rank == 0 {
			look = &a
		}
	}
	if look == nil {
		t.Fatal("no look at rank 0, stopped after its fence")
	}
	m.Step(Liveness{Token: look.Token, Pid: 100, State: "stopped", Stopped: true})
	m.Step(Exited{Exit{Rank: 0, Pid: 100, Signal: syscall.SIGKILL}})
	if !m.Done() || m.ExitCode() != 4 {
		t.Fatalf("done %v exit code %d, want 4 (rank 1's: rank 0 was killed after its fence)", m.Done(), m.ExitCode())
	}
}

// MPI_Comm_spawn_multiple: the root's commands reach StartChildren, K is
// their sum; commands whose numbers do not add up to MaxProcs, or one
// below 1, are refused at every parent.
func TestSpawnMultipleApps(t *testing.T) {
	apps := []ctlwire.SpawnApp{{Command: "a", MaxProcs: 1}, {Command: "b", Args: []string{"x"}, MaxProcs: 2, Dir: "/"}}
	req := func(conn Conn, root bool, maxprocs int, apps []ctlwire.SpawnApp) Spawn {
		b, err := json.Marshal(ctlwire.SpawnRequest{Key: "k", Procs: []int{0, 1}, Root: root, MaxProcs: maxprocs, Apps: apps, Pairs: []int{4, 5}})
		if err != nil {
			t.Fatal(err)
		}
		return Spawn{Conn: conn, ID: 7, Request: string(b)}
	}
	m := newM(t, 2, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1)
	m.Step(req(1, true, 3, apps))
	acts := m.Step(req(2, false, 0, nil))
	wantKinds(t, "all parents", acts, StartChildren)
	if s := acts[0].Start; s.K != 3 || len(s.Apps) != 2 || s.Apps[1].Dir != "/" || s.Apps[1].Args[0] != "x" {
		t.Errorf("%+v", s)
	}

	m = newM(t, 2, ModeContinue)
	m.EnableSpawn()
	connect(t, m, 0, 1)
	m.Step(req(1, true, 4, apps))
	acts = m.Step(req(2, false, 0, nil))
	if r := find(acts, Reply); r == nil || !strings.Contains(r.Msg.Error, "do not add up to 4") {
		t.Errorf("%v", acts)
	}
}

// TestExitCodeIsTheRootCause: a fatal error under MPI_ERRORS_ARE_FATAL is
// the consequence of a failure (issue 26): whatever order the events come
// in, the job's exit code is the first process's own abnormal end (a Go
// panic's 2), not the survivors' fatal-error abort (1) nor the teardown's
// SIGKILL; a program's own MPI_Abort still decides when it comes first.
func TestExitCodeIsTheRootCause(t *testing.T) {
	fatal := func(conn Conn) Event { return Abort{Conn: conn, ID: 9, Code: 1, Reason: "fatal", Fatal: true} }
	panicked := Exited{Exit{Rank: 1, Pid: 101, Status: 2}}
	killed := func(r int) Event { return Exited{Exit{Rank: r, Pid: 100 + r, Signal: syscall.SIGKILL}} }
	exit1 := func(r int) Event { return Exited{Exit{Rank: r, Pid: 100 + r, Status: 1}} }
	for _, tc := range []struct {
		name string
		mode Mode
		evs  []Event
		want int
	}{
		{"panic first", ModeAbort, []Event{panicked, fatal(1), exit1(0), killed(2)}, 2},
		{"fatal abort first", ModeAbort, []Event{fatal(1), panicked, exit1(0), killed(2)}, 2},
		{"aborter exits first", ModeAbort, []Event{fatal(1), exit1(0), killed(2), panicked}, 2},
		{"two fatal aborts", ModeAbort, []Event{fatal(1), fatal(3), exit1(0), exit1(2), panicked}, 2},
		{"fatal abort, no root cause", ModeAbort, []Event{fatal(1), exit1(0), killed(1), killed(2)}, 1},
		{"user abort first", ModeAbort, []Event{Abort{Conn: 1, ID: 9, Code: 5, Reason: "MPI_Abort called"}, panicked, exit1(0), killed(2)}, 5},
		{"continue: panic then fatal abort", ModeContinue, []Event{panicked, fatal(1), exit1(0), killed(2)}, 2},
		{"continue: fatal abort first", ModeContinue, []Event{fatal(1), panicked, exit1(0), killed(2)}, 2},
		// The end-of-job case CI saw: rank 1 killed at finalize, rank 2 still
		// (conn 3) in the last collective fails and aborts; the kill decides, in
		// either order.
		{"continue: injected kill then fatal abort", ModeContinue, []Event{Inject{Rank: 1, Signal: syscall.SIGKILL}, killed(1), fatal(3), killed(0), exit1(2)}, 137},
		{"continue: fatal abort before the kill is reaped", ModeContinue, []Event{Inject{Rank: 1, Signal: syscall.SIGKILL}, fatal(3), killed(0), exit1(2), killed(1)}, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newM(t, 3, tc.mode)
			connect(t, m, 0, 1, 2)
			for _, ev := range tc.evs {
				m.Step(ev)
			}
			if !m.Done() {
				t.Fatal("not done")
			}
			if got := m.ExitCode(); got != tc.want {
				t.Errorf("exit code %d, want %d", got, tc.want)
			}
		})
	}
}

// TestExitCodeRootCauseKilledBySuspicion: the survivors suspect the
// panicking rank before its exit is reaped and the launcher kills it; a
// process already exiting keeps its own status (2), which decides.
func TestExitCodeRootCauseKilledBySuspicion(t *testing.T) {
	m := newM(t, 3, ModeAbort)
	connect(t, m, 0, 1, 2)
	acts := m.Step(Suspect{Conn: 1, ID: 4, Rank: 1, Reason: "connection lost"})
	c := find(acts, Check)
	if c == nil {
		t.Fatalf("no check: %v", acts)
	}
	acts = m.Step(Liveness{Token: c.Token, Pid: 101, State: "dead"})
	if a := find(acts, Signal); a == nil || a.Rank != 1 {
		t.Fatalf("not killed: %v", acts)
	}
	m.Step(Abort{Conn: 1, ID: 5, Code: 1, Reason: "fatal", Fatal: true})
	m.Step(Exited{Exit{Rank: 0, Pid: 100, Status: 1}})
	m.Step(Exited{Exit{Rank: 1, Pid: 101, Status: 2}})
	m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGKILL}})
	if got := m.ExitCode(); got != 2 {
		t.Errorf("exit code %d, want the panic's 2", got)
	}
}

// An exit bell's ring (Dying) under --on-failure continue tells the
// survivors at once, before the rank is reaped; its Exited then only logs
// (and looks at the others). A stale ring (another pid or incarnation), a
// second one, and one of a rank that did not connect or finalized are
// ignored; in abort mode the Exited does everything, as before.
func TestDyingContinueMode(t *testing.T) {
	m := newM(t, 4, ModeContinue)
	connect(t, m, 0, 1, 2)
	acts := m.Step(Dying{Rank: 1, Pid: 101})
	wantKinds(t, "ring", acts, Mark, Notify)
	if n := acts[1]; !slices.Equal(n.To, []Conn{1, 3}) || n.Msg.Kind != ctlwire.EventFailed || n.Msg.Rank != 1 ||
		!strings.Contains(n.Msg.Reason, "exit bell") {
		t.Errorf("notify %+v", n)
	}
	wantKinds(t, "second ring", m.Step(Dying{Rank: 1, Pid: 101}))
	wantKinds(t, "exit", m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}}), Log, Check, Check, Check)
	wantKinds(t, "another pid", m.Step(Dying{Rank: 2, Pid: 999}))
	wantKinds(t, "another incarnation", m.Step(Dying{Rank: 2, Incarnation: 1, Pid: 102}))
	wantKinds(t, "not connected", m.Step(Dying{Rank: 3}))
	wantKinds(t, "unknown", m.Step(Dying{Rank: 9}), Log)
	m.Step(Finalize{Conn: 3, ID: 2})
	wantKinds(t, "finalized", m.Step(Dying{Rank: 2, Pid: 102}))

	a := newM(t, 2, ModeAbort)
	connect(t, a, 0, 1)
	wantKinds(t, "abort mode", a.Step(Dying{Rank: 1, Pid: 101}))
	wantKinds(t, "abort mode exit", a.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}}), Mark, Log, TearDown, SignalAll)
}
