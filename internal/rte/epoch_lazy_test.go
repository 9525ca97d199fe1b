package rte

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/boot/pmi"
	"github.com/ftmpi/ftmpi/internal/boot/pmi/pmitest"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// pmiJob is an in-process PMI job of n processes (as srun starts them:
// SLURM_STEP_ID set) whose epochs are opened, with the gets of endpoints
// each process made.
type pmiJob struct {
	s     *pmitest.Server
	procs []*Process[world]
	nets  []*Net
	gets  []atomic.Int64 // gets of endpoint keys, by process
}

// openPMIJob starts n processes against a PMI server publishing mapping
// ("": none) over PMI version v and opens their first epochs; refuse, if
// set, makes the server answer "not found" to the get of that key.
func openPMIJob(t *testing.T, n int, v, mapping, transport, refuse string) *pmiJob {
	t.Helper()
	j := &pmiJob{s: pmitest.New(n), procs: make([]*Process[world], n), nets: make([]*Net, n), gets: make([]atomic.Int64, n)}
	j.s.Errorf = t.Errorf
	j.s.Mapping = mapping
	j.s.Reply = func(rank int, req pmi.Msg) (string, bool) {
		if (req.Cmd == "get" || req.Cmd == "kvs-get") && strings.HasPrefix(req.Get("key"), "ftmpi-ep-") {
			j.gets[rank].Add(1)
			if refuse != "" && req.Get("key") == refuse {
				if v == "1" {
					return pmi.FormatV1("get_result", "rc", "-1", "msg", "key_not_found"), true
				}
				return string(pmi.FormatV2("kvs-get-response", "found", "FALSE", "rc", "0")), true
			}
		}
		return "", false
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := map[string]string{"PMI_FD": "9", "PMI_RANK": strconv.Itoa(r), "PMI_SIZE": strconv.Itoa(n),
				"FTMPI_PMI": v, "SLURM_STEP_ID": "0", "FTMPI_TRANSPORT": transport}
			lookup := func(k string) (string, bool) { x, ok := env[k]; return x, ok }
			dial := func(e pmi.Env) (*pmi.Conn, error) { return pmi.Open(j.s.Conn(r), e, 5*time.Second) }
			info, job, ok, err := boot.FromPMIWith(lookup, dial)
			if err != nil || !ok {
				errs[r] = fmt.Errorf("process %d: ok %v, %v", r, ok, err)
				return
			}
			j.procs[r] = ConnectPMI(info, job, Hooks[world]{})
			j.nets[r], errs[r] = j.procs[r].OpenEpoch(0, NetConfig{Transport: transport, EagerLimit: 1 << 12, ReaderSpin: 0, ConnectTimeout: 5 * time.Second})
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for r := range n {
			if j.nets[r] != nil {
				j.nets[r].Close()
			}
			if j.procs[r] != nil {
				j.procs[r].Close()
			}
		}
		j.s.Wait()
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return j
}

// exchange sends one message from process from to process to and
// receives it there, within a deadline.
func (j *pmiJob) exchange(from, to int, tag int32) error {
	msg := []byte("from " + strconv.Itoa(from))
	buf := make([]byte, len(msg))
	rr, err := j.nets[to].Eng.Irecv(0, int32(from), from, tag, p2p.DTByte, buf)
	if err != nil {
		return err
	}
	sr, err := j.nets[from].Eng.Isend(0, int32(from), to, tag, p2p.DTByte, msg, false)
	if err != nil {
		return fmt.Errorf("send %d -> %d: %w", from, to, err)
	}
	deadline, stop := within(20 * time.Second)
	defer stop()
	if sr != nil && !sr.Wait(deadline) {
		return fmt.Errorf("send %d -> %d: no completion", from, to)
	}
	if !rr.Wait(deadline) {
		return fmt.Errorf("receive %d -> %d: no completion", from, to)
	}
	if string(buf) != string(msg) {
		return fmt.Errorf("receive %d -> %d: %q", from, to, buf)
	}
	return nil
}

// within is a channel closed after d (stop: not any more).
func within(d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	tm := time.AfterFunc(d, func() { close(ch) })
	return ch, func() { tm.Stop() }
}

// Under srun (PMI_process_mapping published) the epoch opens without
// reading any peer's endpoint: the layout gives every peer's node (the
// host table and the transport's mode come from it), and a process that
// talks to its two ring neighbours out of n reads exactly those two
// endpoints (one PMI get each), over PMI-1 and PMI-2, with shared memory
// between the processes of a node and sockets across nodes. Without the
// layout (or under hydra) every endpoint is read at start, as before.
func TestOpenEpochPMIReadsEndpointsOnFirstUse(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n = 8
	for _, v := range []string{"1", "2"} {
		t.Run("PMI-"+v, func(t *testing.T) {
			j := openPMIJob(t, n, v, "(vector,(0,2,4))", "auto", "")
			// Two fences: the publication, and the closing one once every
			// process installed the secret (no handshake waits for it).
			if ended, _ := j.s.Fences(); ended != 2 {
				t.Fatalf("%d PMI fences, want 2", ended)
			}
			for r, net := range j.nets {
				if got := net.Fetches(); got != 0 || j.gets[r].Load() != 0 {
					t.Fatalf("process %d read %d endpoints (%d gets) opening the epoch, want 0", r, got, j.gets[r].Load())
				}
				if len(net.Endpoints) != n || net.Mode != "auto" {
					t.Fatalf("process %d: %d endpoints, mode %q", r, len(net.Endpoints), net.Mode)
				}
				for p, ep := range net.Endpoints {
					if ep.Rank != p || ep.Host != nodeHost(p/4) {
						t.Fatalf("process %d: endpoint %d is %+v, want node %d", r, p, ep, p/4)
					}
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, 2*n)
			for r := range n {
				for i, to := range []int{(r + 1) % n, (r + n - 1) % n} {
					wg.Add(1)
					go func() { defer wg.Done(); errs[2*r+i] = j.exchange(r, to, int32(i)) }()
				}
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for r, net := range j.nets {
				if got := net.Fetches(); got != 2 || j.gets[r].Load() != 2 {
					t.Errorf("process %d talked to 2 of %d and read %d endpoints (%d gets), want 2", r, n, got, j.gets[r].Load())
				}
				if ep, ok := net.Endpoint((r + 1) % n); !ok || ep.Addrs["unix"] == "" || net.Fetches() != 2 {
					t.Errorf("process %d: Endpoint of its neighbour %+v %v (fetches %d)", r, ep, ok, net.Fetches())
				}
			}
			// Shared memory within a node, sockets across nodes (the
			// layout decides, the same at both ends).
			j.nets[0].mu.Lock()
			l := j.nets[0].local
			j.nets[0].mu.Unlock()
			if l[1] == "" || l[1] == lazyShm || l[n-1] != "" || l[2] != lazyShm {
				t.Fatalf("process 0's shared-memory table %q", l)
			}
			// Asking for a peer's endpoint reads it (one get), once.
			for range 2 {
				if ep, ok := j.nets[0].Endpoint(4); !ok || ep.Rank != 4 || ep.Addrs["unix"] == "" {
					t.Fatalf("Endpoint(4) = %+v, %v", ep, ok)
				}
			}
			if got := j.nets[0].Fetches(); got != 3 {
				t.Fatalf("after asking for process 4: %d endpoints read, want 3", got)
			}
		})
	}
	t.Run("no layout", func(t *testing.T) {
		j := openPMIJob(t, 4, "2", "", "auto", "")
		for r, net := range j.nets {
			if net.Fetches() != -1 || j.gets[r].Load() != 4 || net.Endpoints[r].Addrs["unix"] == "" {
				t.Fatalf("process %d without a layout: fetches %d, gets %d, endpoint %+v", r, net.Fetches(), j.gets[r].Load(), net.Endpoints[r])
			}
		}
		if err := j.exchange(0, 1, 0); err != nil {
			t.Fatal(err)
		}
	})
}

// A peer that died after the start-up fence, before anyone talked to it:
// its endpoint is still read (it published before the fence) and the
// first send to it fails as the loss of that peer (p2p.ErrPeerLost, which
// the mpi package reports as MPI_ERR_PROC_FAILED), within the connect
// deadline, never a hang; a receive from it fails too. A peer whose
// endpoint cannot be read at all (the server does not have it) is a loss
// of that peer the same way, reported to the engine once.
func TestOpenEpochPMIPeerDiedMeanwhile(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, transport := range []string{"auto", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			const n = 4
			j := openPMIJob(t, n, "2", "(vector,(0,1,4))", transport, "ftmpi-ep-2")
			// Process 3 dies: its listeners close and its socket
			// directory goes, as when the kernel reaps a killed process.
			j.nets[3].Close()
			j.procs[3].RemoveDir()
			rr, err := j.nets[0].Eng.Irecv(0, 3, 3, 9, p2p.DTByte, make([]byte, 1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = j.nets[0].Eng.Isend(0, 0, 3, 9, p2p.DTByte, []byte("x"), false)
			if !errors.Is(err, p2p.ErrPeerLost) {
				t.Fatalf("send to the dead process 3: %v, want ErrPeerLost", err)
			}
			if j.nets[0].Fetches() != 1 {
				t.Fatalf("%d endpoints read, want 1 (the dead peer's)", j.nets[0].Fetches())
			}
			// The transport reports the loss (no suspect hook here: the
			// engine fails the peer), and the pending receive with it.
			deadline, stop := within(20 * time.Second)
			defer stop()
			if !rr.Wait(deadline) {
				t.Fatal("receive from the dead process 3: no completion")
			}
			// Process 2's endpoint cannot be read: the send fails as its
			// loss, at once and again without another get, and the engine
			// is told.
			for range 2 {
				_, err = j.nets[1].Eng.Isend(0, 1, 2, 9, p2p.DTByte, []byte("x"), false)
				if !errors.Is(err, p2p.ErrPeerLost) || !strings.Contains(err.Error(), "process 2") {
					t.Fatalf("send to process 2, whose endpoint cannot be read: %v", err)
				}
			}
			if j.gets[1].Load() != 1 {
				t.Fatalf("%d gets for process 2's endpoint, want 1", j.gets[1].Load())
			}
			lost := time.After(20 * time.Second)
			for !j.nets[1].Eng.IsLost(2) {
				select {
				case <-lost:
					t.Fatal("the engine was not told that process 2 is lost")
				case <-time.After(time.Millisecond):
				}
			}
			// The others still talk.
			if err := j.exchange(1, 0, 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}
