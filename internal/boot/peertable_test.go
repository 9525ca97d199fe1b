package boot

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot/pmi"
	"github.com/ftmpi/ftmpi/internal/boot/pmi/pmitest"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// countGets makes s count the KVS gets of each process.
func countGets(s *pmitest.Server, n int) []atomic.Int64 {
	gets := make([]atomic.Int64, n)
	s.Reply = func(rank int, req pmi.Msg) (string, bool) {
		if req.Cmd == "get" || req.Cmd == "kvs-get" {
			gets[rank].Add(1)
		}
		return "", false
	}
	return gets
}

// Under PMI a process that talks to 2 peers of n makes 1 get of the
// secret and 2 of endpoints (each once, however often and from however
// many goroutines it asks), not n; the endpoint of a peer that ended
// after the fence is still found. Exchange, for comparison, makes 1 + n.
func TestPMIPeerTableGetsOnFirstUse(t *testing.T) {
	const n = 8
	for _, v := range []string{"1", "2"} {
		s := pmitest.New(n)
		s.Errorf = t.Errorf
		gets := countGets(s, n)
		var wg sync.WaitGroup
		errs := make([]error, n)
		published := make(chan struct{})
		var pub sync.WaitGroup
		pub.Add(n)
		go func() { pub.Wait(); close(published) }()
		for r := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[r] = func() error {
					_, job, ok, err := fromPMI(pmiLookup(r, n, "FTMPI_PMI", v), fakeDial(s, r))
					if err != nil || !ok {
						pub.Done()
						return fmt.Errorf("ok %v err %v", ok, err)
					}
					finalized := false
					defer func() {
						if !finalized {
							job.Close() // an error ends the process's PMI connection too
						}
					}()
					tab, key, err := job.Publish(Endpoint{Addrs: map[string]string{"unix": "/x/" + strconv.Itoa(r)}})
					pub.Done()
					if err != nil {
						return err
					}
					if key == nil || tab.Len() != n || tab.Fetches() != 0 {
						return fmt.Errorf("key %v, Len %d, Fetches %d", key, tab.Len(), tab.Fetches())
					}
					if r == n-1 {
						finalized = true
						return job.Finalize() // ends right after publishing
					}
					<-published                              // every process published (and process n-1 may be gone)
					peers := []int{(r + 1) % (n - 1), n - 1} // two others, one of them ended
					var ask sync.WaitGroup
					askErr := make([]error, 4*len(peers))
					for i := range askErr {
						ask.Add(1)
						go func() {
							defer ask.Done()
							p := peers[i%len(peers)]
							ep, err := tab.Get(p)
							if err == nil && (ep.Rank != p || ep.Addrs["unix"] != "/x/"+strconv.Itoa(p) || ep.Host != HostID()) {
								err = fmt.Errorf("endpoint %d: %+v", p, ep)
							}
							askErr[i] = err
						}()
					}
					ask.Wait()
					if err := errors.Join(askErr...); err != nil {
						return err
					}
					if got, want := gets[r].Load(), int64(1+len(peers)); got != want || tab.Fetches() != len(peers) {
						return fmt.Errorf("%d gets (%d fetches) for %d peers, want %d", got, tab.Fetches(), len(peers), want)
					}
					if _, err := tab.Get(n); err == nil || !strings.Contains(err.Error(), "not in the job") {
						return fmt.Errorf("Get(%d): %v", n, err)
					}
					finalized = true
					return job.Finalize()
				}()
			}()
		}
		wg.Wait()
		s.Wait()
		for r, err := range errs {
			if err != nil {
				t.Fatalf("PMI-%s: process %d: %v", v, r, err)
			}
		}
	}

	// Exchange reads every endpoint: 1 + n gets a process.
	s := pmitest.New(n)
	s.Errorf = t.Errorf
	gets := countGets(s, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, job, _, err := fromPMI(pmiLookup(r, n), fakeDial(s, r))
			if err != nil {
				errs[r] = err
				return
			}
			_, _, errs[r] = job.Exchange(Endpoint{Addrs: map[string]string{"unix": "/x"}})
			if errs[r] == nil {
				errs[r] = job.Settle()
			}
			if err := job.Finalize(); errs[r] == nil {
				errs[r] = err
			}
		}()
	}
	wg.Wait()
	s.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("Exchange: process %d: %v", r, err)
		}
		if g := gets[r].Load(); g != 1+n {
			t.Fatalf("Exchange: process %d made %d gets, want %d", r, g, 1+n)
		}
	}
}

// A process of the PMI job that fenced without publishing (not an ftmpi
// program): the get of its endpoint fails with Exchange's error, once;
// asking again returns the same error without another get.
func TestPMIPeerTableUnpublished(t *testing.T) {
	const n = 2
	s := pmitest.New(n)
	s.Errorf = t.Errorf
	gets := countGets(s, n)
	other := make(chan error, 1)
	go func() {
		pc, err := pmi.Open(s.Conn(1), pmi.Env{FD: 9, Rank: 1, Size: n, Version: 1}, 5*time.Second)
		if err == nil {
			err = pc.Fence()
			if ferr := pc.Finalize(); err == nil {
				err = ferr
			}
		}
		other <- err
	}()
	_, job, _, err := fromPMI(pmiLookup(0, n, "FTMPI_PMI", "1"), fakeDial(s, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	tab, _, err := job.Publish(Endpoint{})
	if err != nil {
		t.Fatal(err)
	}
	want := "boot: start-up exchange through mpiexec (PMI): process 1 published no endpoint (is it an ftmpi program?)"
	for range 2 {
		if _, err := tab.Get(1); err == nil || err.Error() != want {
			t.Fatalf("err %v\nwant %s", err, want)
		}
	}
	if g := gets[0].Load(); g != 2 { // the secret, process 1's endpoint
		t.Fatalf("%d gets, want 2", g)
	}
	if err := <-other; err != nil {
		t.Fatalf("process 1: %v", err)
	}
}

// ftmpirun's table is decoded an entry at a time: a process that asks
// for 2 peers decodes 2 entries, a missing entry is an endpoint without
// addresses, a malformed one an error of its own Get only.
func TestClientPeerTableDecodesOnFirstUse(t *testing.T) {
	const n = 6
	kv := map[string]string{}
	for p := range n {
		if p == 4 {
			continue // died before publishing
		}
		v := encodeEndpoint(Endpoint{Rank: p, Host: "h", Addrs: map[string]string{"unix": "/x/" + strconv.Itoa(p)}})
		if p == 5 {
			v = endpointTag + "!!"
		}
		kv[ctlwire.EndpointKey(p)] = v
	}
	tab := newClientTable(n, kv)
	for _, p := range []int{1, 2, 1} {
		ep, err := tab.Get(p)
		if err != nil || ep.Rank != p || ep.Addrs["unix"] != "/x/"+strconv.Itoa(p) {
			t.Fatalf("Get(%d): %+v %v", p, ep, err)
		}
	}
	if f := tab.Fetches(); f != 2 {
		t.Fatalf("%d decodes for 2 peers", f)
	}
	if ep, err := tab.Get(4); err != nil || ep.Rank != 4 || ep.Addrs != nil {
		t.Fatalf("missing entry: %+v %v", ep, err)
	}
	if _, err := tab.Get(5); err == nil || !strings.Contains(err.Error(), "bad endpoint for process 5") {
		t.Fatalf("malformed entry: %v", err)
	}
	if _, err := tab.All(); err == nil || !strings.Contains(err.Error(), "process 5") {
		t.Fatalf("All: %v", err)
	}
}
