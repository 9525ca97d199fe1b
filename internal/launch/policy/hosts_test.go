package policy

import (
	"strings"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// hostJob: 6 ranks, two per host on h0 h1 h2, all connected.
func hostJob(t *testing.T, mode Mode) *Machine {
	t.Helper()
	m, err := New(Config{Job: "j", Size: 6, Mode: mode, Hosts: []Host{{"h0", 2}, {"h1", 2}, {"h2", 2}}, Place: []int{0, 0, 1, 1, 2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if mode == ModeReinit {
		m.EnableRespawn(4)
	}
	for r := 0; r < 6; r++ {
		m.Step(Hello{Conn: Conn(r + 1), ID: 1, Job: "j", Rank: r, Pid: 100 + r})
	}
	return m
}

func TestHostLostFailsItsRanks(t *testing.T) {
	m := hostJob(t, ModeContinue)
	acts := m.Step(HostLost{Host: 1, Reason: "heartbeat timeout"})
	told := map[int][]Conn{}
	dropped := map[Conn]bool{}
	sawLog := false
	for _, a := range acts {
		switch a.Kind {
		case Notify:
			if sawLog {
				t.Fatalf("notification after a log line: %v", acts)
			}
			if a.Msg.Kind != ctlwire.EventFailed {
				t.Fatalf("unexpected event %+v", a.Msg)
			}
			told[a.Msg.Rank] = append(told[a.Msg.Rank], a.To...)
		case Drop:
			dropped[a.Conn] = true
		case Log:
			sawLog = true
		}
	}
	for _, r := range []int{2, 3} {
		if len(told[r]) != 4 {
			t.Fatalf("failure of rank %d told to %v, want the 4 survivors", r, told[r])
		}
		for _, c := range told[r] {
			if c == 3 || c == 4 {
				t.Fatalf("rank %d's failure told to a rank of the lost host (conn %d)", r, c)
			}
		}
		if !dropped[Conn(r+1)] {
			t.Fatalf("connection of rank %d not dropped", r)
		}
	}
	if len(told) != 2 {
		t.Fatalf("told of %v, want ranks 2 and 3", told)
	}
	// A rank of the lost host that reaches the head again is refused.
	acts = m.Step(Hello{Conn: 9, ID: 1, Job: "j", Rank: 2})
	if len(acts) == 0 || acts[0].Kind != Reply || !strings.Contains(acts[0].Msg.Error, "already connected") && !strings.Contains(acts[0].Msg.Error, "gone") {
		t.Fatalf("hello of a lost rank: %v", acts)
	}
	// The host is lost once; an agent's late report of its ranks changes nothing.
	if acts := m.Step(HostLost{Host: 1}); len(acts) != 0 {
		t.Fatalf("second loss: %v", acts)
	}
	if acts := m.Step(Exited{Exit{Rank: 2, Signal: syscall.SIGKILL}}); len(acts) != 1 || acts[0].Kind != Log {
		t.Fatalf("late exit report: %v", acts)
	}
}

func TestHostLostReinitRespawnsElsewhere(t *testing.T) {
	m := hostJob(t, ModeReinit)
	for r := 0; r < 6; r++ {
		m.Step(ReinitActive{Conn: Conn(r + 1), ID: 2, Kind: ctlwire.ReinitEnter})
	}
	acts := m.Step(HostLost{Host: 2, Reason: "connection lost"})
	var hosts []int
	for _, a := range acts {
		if a.Kind == Respawn {
			hosts = append(hosts, a.Host)
		}
	}
	if len(hosts) != 2 {
		t.Fatalf("respawns %v, want 2: %v", hosts, acts)
	}
	for _, h := range hosts {
		if h == 2 {
			t.Fatalf("respawned on the lost host: %v", acts)
		}
	}
}

func TestPlaceFreeSlot(t *testing.T) {
	m, _ := New(Config{Job: "j", Size: 3, Hosts: []Host{{"a", 2}, {"b", 2}}, Place: []int{0, 0, 1}})
	if h := m.place(-1); h != 1 {
		t.Fatalf("place = %d, want the host with a free slot (1)", h)
	}
	m.lost[1] = true
	if h := m.place(1); h != 0 {
		t.Fatalf("place on a lost host's behalf = %d, want 0 (oversubscribed)", h)
	}
	m.lost[0] = true
	if h := m.place(-1); h != -1 {
		t.Fatalf("place with every host lost = %d", h)
	}
}

// TestHostLostNamesAgentPids: ranks of a host lost before their hello
// (which carries the pid) are named with the pids their agent reported
// when it started them, not "pid 0"; a pid from the hello wins.
func TestHostLostNamesAgentPids(t *testing.T) {
	m, err := New(Config{Job: "j", Size: 4, Mode: ModeContinue, Hosts: []Host{{"h0", 2}, {"h1", 2}}, Place: []int{0, 0, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	m.Step(Hello{Conn: 1, ID: 1, Job: "j", Rank: 0, Pid: 100})
	m.Step(Hello{Conn: 2, ID: 1, Job: "j", Rank: 1, Pid: 101})
	m.Step(Hello{Conn: 4, ID: 1, Job: "j", Rank: 3, Pid: 103}) // rank 2 never said hello
	acts := m.Step(HostLost{Host: 1, Reason: "connection lost", Pids: map[int]int{2: 4242, 3: 999}})
	var logs, reasons []string
	for _, a := range acts {
		switch a.Kind {
		case Log:
			logs = append(logs, a.Text)
		case Notify:
			reasons = append(reasons, a.Msg.Reason)
		}
	}
	all := strings.Join(append(logs, reasons...), "\n")
	for _, want := range []string{"rank 2 (pid 4242)", "rank 3 (pid 103)"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in the messages:\n%s", want, all)
		}
	}
	if strings.Contains(all, "pid 0") || strings.Contains(all, "pid 999") {
		t.Errorf("a pid not the process's:\n%s", all)
	}
}
