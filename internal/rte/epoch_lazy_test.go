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
	s      *pmitest.Server
	procs  []*Process[world]
	nets   []*Net
	gets   []atomic.Int64  // gets of endpoint keys, by process
	errs   []error         // each process's start, once opened[r] is closed
	opened []chan struct{} // closed when process r's OpenEpoch returned
}

// openPMIJob starts n processes against a PMI server publishing mapping
// ("": none) over PMI version v and opens their first epochs; refuse, if
// set, makes the server answer "not found" to the get of that key.
func openPMIJob(t *testing.T, n int, v, mapping, transport, refuse string) *pmiJob {
	t.Helper()
	j := startPMIJob(t, n, v, mapping, transport, refuse, nil, nil)
	for r := range n {
		<-j.opened[r]
	}
	if err := errors.Join(j.errs...); err != nil {
		t.Fatal(err)
	}
	return j
}

// startPMIJob is openPMIJob without the wait: each process opens its
// epoch on a goroutine of its own (opened[r] is closed when it returned),
// with env's variables added to its PMI environment and fenced, if set,
// as the server's Fenced hook.
func startPMIJob(t *testing.T, n int, v, mapping, transport, refuse string, env map[string]string, fenced func(rank, fence int)) *pmiJob {
	t.Helper()
	j := &pmiJob{s: pmitest.New(n), procs: make([]*Process[world], n), nets: make([]*Net, n), gets: make([]atomic.Int64, n),
		errs: make([]error, n), opened: make([]chan struct{}, n)}
	j.s.Errorf = t.Errorf
	j.s.Mapping = mapping
	j.s.Fenced = fenced
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
	for r := range n {
		j.opened[r] = make(chan struct{})
		go func() {
			defer close(j.opened[r])
			penv := map[string]string{"PMI_FD": "9", "PMI_RANK": strconv.Itoa(r), "PMI_SIZE": strconv.Itoa(n),
				"FTMPI_PMI": v, "SLURM_STEP_ID": "0", "FTMPI_TRANSPORT": transport}
			for k, x := range env {
				penv[k] = x
			}
			lookup := func(k string) (string, bool) { x, ok := penv[k]; return x, ok }
			dial := func(e pmi.Env) (*pmi.Conn, error) { return pmi.Open(j.s.Conn(r), e, 5*time.Second) }
			info, job, ok, err := boot.FromPMIWith(lookup, dial)
			if err != nil || !ok {
				j.errs[r] = fmt.Errorf("process %d: ok %v, %v", r, ok, err)
				return
			}
			j.procs[r] = ConnectPMI(info, job, Hooks[world]{})
			j.nets[r], j.errs[r] = j.procs[r].OpenEpoch(0, NetConfig{Transport: transport, EagerLimit: 1 << 12, ReaderSpin: 0, ConnectTimeout: 5 * time.Second})
		}()
	}
	t.Cleanup(func() {
		for r := range n {
			<-j.opened[r]
			if j.nets[r] != nil {
				j.nets[r].Close()
			}
			if j.procs[r] != nil {
				j.procs[r].Close()
			}
		}
		j.s.Wait()
	})
	return j
}

// exchange sends one message from process from to process to and
// receives it there, within a deadline.
func (j *pmiJob) exchange(from, to int, tag int32) error {
	return j.exchangeN(from, to, tag, 0)
}

// exchangeN is exchange with a message of size bytes (at least the
// sender's name).
func (j *pmiJob) exchangeN(from, to int, tag int32, size int) error {
	msg := []byte("from " + strconv.Itoa(from))
	for len(msg) < size {
		msg = append(msg, byte(len(msg)))
	}
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
		return fmt.Errorf("receive %d -> %d: %d bytes differ", from, to, len(msg))
	}
	return nil
}

// read lists the peers whose endpoints process r read.
func (j *pmiJob) read(r int) []int {
	var out []int
	for p := range j.nets[r].lazy.got {
		if p != r && j.nets[r].lazy.got[p].Load() {
			out = append(out, p)
		}
	}
	return out
}

// within is a channel closed after d (stop: not any more).
func within(d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	tm := time.AfterFunc(d, func() { close(ch) })
	return ch, func() { tm.Stop() }
}

// Under srun (PMI_process_mapping published) the epoch opens without
// reading any peer's endpoint: the layout gives every peer's node (the
// host table and the transport's mode come from it), and a peer's
// endpoint is read (one PMI get) only when this process must dial it, over
// PMI-1 and PMI-2, with shared memory between the processes of a node and
// sockets across nodes. Each process r of node 0 (0-3) sends first to r+4
// (node 1, sockets; above the eager limit, so the receiver answers a
// rendezvous) and to r+1 of its node (shared memory); then every process
// answers whoever sent to it. The processes of node 0 read exactly the two
// endpoints they dialled, those of node 1 (which only answered peers that
// had connected to them) read none: an answer goes on the peer's own
// connection. Without the layout (or under hydra) every endpoint is read
// at start, as before.
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
			const big = 3 << 12 // above the eager limit (4 KiB)
			run := func(f func(r int, errs []error)) {
				t.Helper()
				var wg sync.WaitGroup
				errs := make([]error, n)
				for r := range 4 {
					wg.Add(1)
					go func() { defer wg.Done(); f(r, errs) }()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
			}
			run(func(r int, errs []error) {
				errs[2*r] = j.exchangeN(r, r+4, 0, big)
				errs[2*r+1] = j.exchange(r, (r+1)%4, 1)
			})
			run(func(r int, errs []error) {
				errs[2*r] = j.exchangeN(r+4, r, 2, big)
				errs[2*r+1] = j.exchange((r+1)%4, r, 3)
			})
			for r, net := range j.nets {
				want := []int(nil)
				if r < 4 {
					want = []int{(r + 1) % 4, r + 4}
					if want[0] > want[1] {
						want[0], want[1] = want[1], want[0]
					}
				}
				got := j.read(r)
				if fmt.Sprint(got) != fmt.Sprint(want) || net.Fetches() != len(want) || j.gets[r].Load() != int64(len(want)) {
					t.Errorf("process %d read the endpoints of %v (%d fetches, %d gets), want %v: only those it dialled", r, got, net.Fetches(), j.gets[r].Load(), want)
				}
			}
			// Shared memory within a node, sockets across nodes (the
			// layout decides, the same at both ends); the endpoint of
			// process 3, which set the pair with 0 up itself, is not read.
			j.nets[0].mu.Lock()
			l := j.nets[0].local
			j.nets[0].mu.Unlock()
			if l[1] == "" || l[1] == lazyShm || l[n-1] != "" || l[2] != lazyShm || l[3] != lazyShm {
				t.Fatalf("process 0's shared-memory table %q", l)
			}
			// Asking for a peer's endpoint reads it (one get), once.
			for range 2 {
				if ep, ok := j.nets[0].Endpoint(5); !ok || ep.Rank != 5 || ep.Addrs["unix"] == "" {
					t.Fatalf("Endpoint(5) = %+v, %v", ep, ok)
				}
			}
			if got := j.nets[0].Fetches(); got != 3 {
				t.Fatalf("after asking for process 5: %d endpoints read, want 3", got)
			}
			// And a peer read at dial time needs no other read.
			if ep, ok := j.nets[0].Endpoint(4); !ok || ep.Rank != 4 || j.nets[0].Fetches() != 3 {
				t.Fatalf("Endpoint(4) = %+v, %v; %d endpoints read, want 3", ep, ok, j.nets[0].Fetches())
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

// TestOpenEpochPMIEagerSecretBeforeClosingFence: a process released late
// from the PMI start's closing fence (held between the fence's end and its
// answer, as a descheduled process on a loaded host is) has already
// installed the job's secret and its peers, so a peer released before it
// connects to it at once: with every endpoint read at start
// (FTMPI_PMI_ENDPOINTS=all under srun, or no layout) and on first use.
// Before, the eager start installed the secret only after that fence (the
// held process's handshake waited for it until the dialler's connect
// deadline: the 1,000-task srun's failure), and both starts installed the
// shared-memory peers after it (the set-up was refused: "not in the job").
func TestOpenEpochPMIEagerSecretBeforeClosingFence(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, c := range []struct {
		transport, mapping, endpoints string
	}{{"auto", "(vector,(0,1,4))", "all"}, {"tcp", "(vector,(0,2,2))", "all"}, {"auto", "", "all"}, {"auto", "(vector,(0,1,4))", "lazy"}} {
		t.Run(c.transport+"/"+c.mapping+"/"+c.endpoints, func(t *testing.T) {
			const n, held = 4, 3
			release := make(chan struct{})
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			defer free()
			j := startPMIJob(t, n, "2", c.mapping, c.transport, "", map[string]string{boot.EnvPMIEndpoints: c.endpoints}, func(rank, fence int) {
				if rank == held && fence == 2 { // the closing fence (the first is the publication's)
					<-release
				}
			})
			for r := range held {
				<-j.opened[r]
				if j.errs[r] != nil {
					t.Fatal(j.errs[r])
				}
			}
			// Process 0 is out of Init; the held process is not. A send
			// to it is written once its handshake is answered.
			sent := make(chan error, 1)
			go func() {
				_, err := j.nets[0].Eng.Isend(0, 0, held, 9, p2p.DTByte, []byte("early"), false)
				sent <- err
			}()
			deadline := time.NewTimer(20 * time.Second)
			defer deadline.Stop()
			select {
			case err := <-sent:
				if err != nil {
					t.Fatalf("send to process %d, held after the closing fence: %v", held, err)
				}
			case <-deadline.C:
				free()
				t.Fatalf("send to process %d, held after the closing fence: not written within 20 s (its handshake waits for the secret)", held)
			}
			free()
			<-j.opened[held]
			if j.errs[held] != nil {
				t.Fatal(j.errs[held])
			}
			if ended, _ := j.s.Fences(); ended != 2 {
				t.Fatalf("%d PMI fences, want 2", ended)
			}
			want := int64(n) // the eager start reads every endpoint (its own too)
			if c.endpoints == "lazy" {
				want = 0 // it dialled nobody
			}
			if got := j.gets[held].Load(); got != want {
				t.Fatalf("process %d read %d endpoints, want %d", held, got, want)
			}
			buf := make([]byte, 5)
			rr, err := j.nets[held].Eng.Irecv(0, 0, 0, 9, p2p.DTByte, buf)
			if err != nil {
				t.Fatal(err)
			}
			wait, stop := within(20 * time.Second)
			defer stop()
			if !rr.Wait(wait) || string(buf) != "early" {
				t.Fatalf("process %d received %q, want \"early\"", held, buf)
			}
		})
	}
}
