package mpi

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// runDPM runs fn as n ranks with a deadline (a hang fails the test).
func runDPM(t *testing.T, n int, fn func(w *World, c *Comm) error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- Run(n, func(w *World) error {
			c := w.CommWorld()
			c.SetErrhandler(ErrorsReturn)
			return fn(w, c)
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("job of %d ranks did not finish within 60s (hang)", n)
	}
}

// dpmGroups splits c into the servers (world ranks below cut) and the
// clients; world rank 0 opens a port and publishes it as "svc" before a
// barrier on c. It returns the local group and the port (at world rank 0
// and at the clients).
func dpmGroups(w *World, c *Comm, cut int) (local *Comm, port string, server bool, err error) {
	server = c.Rank() < cut
	color := 1
	if server {
		color = 0
	}
	if local, err = c.Split(color, c.Rank()); err != nil {
		return
	}
	local.SetErrhandler(ErrorsReturn)
	if c.Rank() == 0 {
		if port, err = w.OpenPort(nil); err != nil {
			return
		}
		if err = w.PublishName("svc", nil, port); err != nil {
			return
		}
	}
	if err = c.Barrier(); err != nil {
		return
	}
	if !server {
		port, err = w.LookupName("svc", nil)
	}
	return
}

// arrived makes victim wait until every other rank of c has sent it a
// message (they are past every collective before it), so that its death
// cannot fail a collective that another rank has not left yet.
func arrived(c *Comm, victim int) error {
	if c.Rank() != victim {
		return Send(c, []int{1}, victim, 99)
	}
	for r := 0; r < c.Size(); r++ {
		if r != victim {
			if _, err := Recv(c, []int{0}, r, 99); err != nil {
				return err
			}
		}
	}
	return nil
}

// Seed 002 A.2.3 (1), 5.2.1; seed 003 17.10.1: a root that fails during
// Connect/Accept (after the roots found each other) makes every surviving
// process of both groups, the other root included, raise ErrProcFailed;
// nobody gets an intercommunicator, nobody hangs. So does a non-root
// member that fails during the call.
func TestConnectRootFailure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		victim int  // world rank that dies
		atRoot bool // in the call, after the roots found each other (else instead of calling)
	}{
		{"client root", 3, true},
		{"server root", 0, true},
		{"client member", 2, false},
		{"server member", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runDPM(t, 4, func(w *World, c *Comm) error {
				local, port, server, err := dpmGroups(w, c, 2)
				if err != nil {
					return err
				}
				me := c.Rank()
				if err := arrived(c, tc.victim); err != nil {
					return err
				}
				if me == tc.victim {
					if !tc.atRoot {
						w.Kill()
					}
					w.dpm.hook = func(stage string) { w.Kill() }
				}
				var ic *Comm
				if server {
					ic, err = local.Accept(port, nil, 0)
				} else {
					ic, err = local.Connect(port, nil, 1) // client root: world rank 3
				}
				if ic != nil || !errors.Is(err, ErrProcFailed) {
					return fmt.Errorf("rank %d: %v, %v; want no intercommunicator and ErrProcFailed", me, ic, err)
				}
				return nil
			})
		})
	}
}

// Seed 003 17.10.1 in run-through mode: a client group that knows an
// unrecognised failure is collectively inactive (ErrRankFailStop, and it
// does not contact the server); once it has validated, it connects, the
// recognised failure stays recognised in the new intercommunicator, and a
// root that is a recognised failed process is ErrRank.
func TestConnectRunThrough(t *testing.T) {
	runDPM(t, 5, func(w *World, c *Comm) error {
		local, port, server, err := dpmGroups(w, c, 2) // servers {0,1}, clients {2,3,4}
		if err != nil {
			return err
		}
		me := c.Rank()
		if err := arrived(c, 2); err != nil {
			return err
		}
		if server {
			info := NewInfo()
			info.Set("timeout", "60")
			ic, err := local.Accept(port, info, 0)
			if err != nil {
				return fmt.Errorf("accept: %v", err)
			}
			ic.SetErrhandler(ErrorsReturn)
			if !ic.RunThrough() {
				return errors.New("server: the new intercommunicator is not run-through (the client group's recognised failure is not recognised)")
			}
			if _, err := ic.Validate(); err != nil { // collective over both groups' alive processes
				return fmt.Errorf("server validate: %v", err)
			}
			if err := ic.Barrier(); err != nil {
				return fmt.Errorf("server barrier on the intercommunicator: %v", err)
			}
			return ic.Disconnect()
		}
		local.EnableRunThrough()
		if me == 2 {
			w.Kill()
		}
		// Wait until the failure is known here (an event, not a guess).
		if _, err := Recv(c, []int{0}, 2, 0); !errors.Is(err, ErrProcFailed) {
			return fmt.Errorf("recv from the dead rank: %v", err)
		}
		if _, err := local.Connect(port, nil, 1); !errors.Is(err, ErrRankFailStop) {
			return fmt.Errorf("connect on an inactive communicator: %v, want ErrRankFailStop", err)
		}
		if _, err := local.Validate(); err != nil {
			return err
		}
		if _, err := local.Connect(port, nil, 0); !errors.Is(err, ErrRank) {
			return fmt.Errorf("connect with a recognised failed root: %v, want ErrRank", err)
		}
		ic, err := local.Connect(port, nil, 1)
		if err != nil {
			return fmt.Errorf("connect after validate: %v", err)
		}
		ic.SetErrhandler(ErrorsReturn)
		g, err := ic.GroupFailed()
		if err != nil || g.Size() != 1 || g.WorldRanks()[0] != 2 {
			return fmt.Errorf("recognised failures of the new intercommunicator: %v %v, want [2]", g, err)
		}
		if _, err := ic.Validate(); err != nil {
			return fmt.Errorf("client validate: %v", err)
		}
		if err := ic.Barrier(); err != nil {
			return fmt.Errorf("client barrier on the intercommunicator: %v", err)
		}
		return ic.Disconnect()
	})
}

// Seed 003 17.10.1: Disconnect completes normally despite a failure in the
// remote group, unacknowledged; a port of a failed process makes Connect
// fail with ErrProcFailed.
func TestDisconnectDespiteFailure(t *testing.T) {
	runDPM(t, 4, func(w *World, c *Comm) error {
		local, port, server, err := dpmGroups(w, c, 2)
		if err != nil {
			return err
		}
		var ic *Comm
		if server {
			ic, err = local.Accept(port, nil, 0)
		} else {
			ic, err = local.Connect(port, nil, 0)
		}
		if err != nil {
			return err
		}
		ic.SetErrhandler(ErrorsReturn)
		if err := arrived(c, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			w.Kill() // the port's process dies
		}
		// Everyone learns of the death before disconnecting.
		if c.Rank() != 0 {
			if _, err := Recv(c, []int{0}, 0, 0); !errors.Is(err, ErrProcFailed) {
				return fmt.Errorf("recv from the dead rank: %v", err)
			}
		}
		if err := ic.Disconnect(); err != nil {
			return fmt.Errorf("disconnect after a failure: %v", err)
		}
		if !server {
			if _, err := local.Connect(port, nil, 0); !errors.Is(err, ErrProcFailed) {
				return fmt.Errorf("connect to the dead process's port: %v, want ErrProcFailed", err)
			}
		}
		return nil
	})
}

// The new intercommunicator works with the ULFM calls: a failure in the
// client group is reported by a collective, the intercommunicator is
// revoked, acknowledged, agreed on and shrunk, and the survivors go on.
func TestConnectULFMRepair(t *testing.T) {
	runDPM(t, 5, func(w *World, c *Comm) error {
		local, port, server, err := dpmGroups(w, c, 2) // servers {0,1}, clients {2,3,4}
		if err != nil {
			return err
		}
		var ic *Comm
		if server {
			ic, err = local.Accept(port, nil, 0)
		} else {
			ic, err = local.Connect(port, nil, 0)
		}
		if err != nil {
			return err
		}
		ic.SetErrhandler(ErrorsReturn)
		if err := arrived(c, 4); err != nil {
			return err
		}
		if c.Rank() == 4 {
			w.Kill()
		}
		if _, err := Recv(c, []int{0}, 4, 0); !errors.Is(err, ErrProcFailed) {
			return fmt.Errorf("recv from the dead rank: %v", err)
		}
		// The failure is reported (ErrProcFailed, ErrRevoked, or the
		// intercommunicator collectives' ErrOther when the leaders'
		// exchange failed) or the barrier completed before it: either way
		// the survivors repair.
		_ = ic.Barrier()
		if err := ic.Revoke(); err != nil {
			return err
		}
		if err := ic.FailureAck(); err != nil {
			return err
		}
		if _, err := ic.Agree(true); err != nil {
			return fmt.Errorf("agree after the acknowledgement: %v", err)
		}
		s, err := ic.Shrink()
		if err != nil {
			return fmt.Errorf("shrink: %v", err)
		}
		want := 2
		if server {
			want = 2 // the remote group: clients 2 and 3
		}
		if s.RemoteSize() != want && server {
			return fmt.Errorf("shrunk: remote size %d, want %d", s.RemoteSize(), want)
		}
		v := []int{0}
		root := ProcNull
		switch {
		case server && s.Rank() == 0:
			root, v[0] = Root, 7
		case !server:
			root = 0
		}
		if err := Bcast(s, v, root); err != nil {
			return fmt.Errorf("bcast on the shrunk intercommunicator: %v", err)
		}
		if !server && v[0] != 7 {
			return fmt.Errorf("bcast got %d", v[0])
		}
		if err := s.Disconnect(); err != nil {
			return err
		}
		// The revoked intercommunicator is disconnected and freed, and
		// says it was revoked (one rule with Win.Free and File.Close).
		if err := ic.Disconnect(); !errors.Is(err, ErrRevoked) {
			return fmt.Errorf("disconnect of the revoked intercommunicator: %v, want ErrRevoked", err)
		}
		if err := ic.Free(); !errors.Is(err, ErrComm) {
			return fmt.Errorf("free after disconnect: %v, want ErrComm (already freed)", err)
		}
		return nil
	})
}

// The info key "ftmpi_trace" makes each root write its trace line to the
// World's diagnostics (rte.Diag; stderr in a real process), not mpi
// itself; without the key nothing is written.
func TestConnectTraceLine(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	cfg := DefaultConfig()
	cfg.diag = &rte.Diag{Out: lockedWriter{&mu, &out}}
	done := make(chan error, 1)
	go func() {
		done <- RunConfig(3, cfg, func(w *World) error {
			c := w.CommWorld()
			c.SetErrhandler(ErrorsReturn)
			local, port, server, err := dpmGroups(w, c, 1) // server {0}, clients {1,2}
			if err != nil {
				return err
			}
			info := NewInfo()
			if err := info.Set("ftmpi_trace", "true"); err != nil {
				return err
			}
			var ic *Comm
			if server {
				ic, err = local.Accept(port, info, 0)
			} else {
				ic, err = local.Connect(port, info, 1) // root: world rank 2
			}
			if err != nil {
				return err
			}
			return ic.Disconnect()
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the job did not finish within 60s (hang)")
	}
	mu.Lock()
	got := out.String()
	mu.Unlock()
	for _, want := range []string{
		"ftmpi-trace: process 0: MPI_Comm_accept: connected to process 2\n",
		"ftmpi-trace: process 2: MPI_Comm_connect: connected to process 0\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics %q lack %q", got, want)
		}
	}
	if n := strings.Count(got, "ftmpi-trace:"); n != 2 {
		t.Errorf("%d trace lines, want 2 (the roots only): %q", n, got)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
