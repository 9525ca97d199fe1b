package boot

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot/pmi"
	"github.com/ftmpi/ftmpi/internal/boot/pmi/pmitest"
)

// pmiLookup is the environment a PMI launcher gives process rank of n.
func pmiLookup(rank, n int, extra ...string) func(string) (string, bool) {
	m := map[string]string{"PMI_FD": "9", "PMI_RANK": strconv.Itoa(rank), "PMI_SIZE": strconv.Itoa(n)}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func fakeDial(s *pmitest.Server, rank int) func(pmi.Env) (*pmi.Conn, error) {
	return func(e pmi.Env) (*pmi.Conn, error) { return pmi.Open(s.Conn(rank), e, 5*time.Second) }
}

// Every process of the PMI job publishes its endpoint and gets every
// other one, with the secret rank 0 made; FTMPI_RANK (ftmpirun) wins over
// PMI; the socket directory is removed at Finalize.
func TestPMIExchange(t *testing.T) {
	for _, v := range []string{"1", "2"} {
		const n = 4
		s := pmitest.New(n)
		s.Errorf = t.Errorf
		var wg sync.WaitGroup
		keys := make([][]byte, n)
		errs := make([]error, n)
		for r := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[r] = func() error {
					info, job, ok, err := fromPMI(pmiLookup(r, n, "FTMPI_PMI", v), fakeDial(s, r))
					if err != nil || !ok {
						return fmt.Errorf("ok %v err %v", ok, err)
					}
					if info.Rank != r || info.Size != n || info.Universe != n || info.Host != HostID() || info.TmpDir == "" || info.Auth != nil {
						return fmt.Errorf("info %+v", info)
					}
					eps, key, err := job.Exchange(Endpoint{Addrs: map[string]string{"unix": "/x/" + strconv.Itoa(r)}})
					if err != nil {
						return err
					}
					if err := job.Settle(); err != nil {
						return err
					}
					for p, ep := range eps {
						if ep.Rank != p || ep.Addrs["unix"] != "/x/"+strconv.Itoa(p) || ep.Host != HostID() {
							return fmt.Errorf("endpoint %d: %+v", p, ep)
						}
					}
					keys[r] = key.Bytes()
					dir := info.TmpDir
					if err := job.Finalize(); err != nil {
						return err
					}
					if _, err := os.Stat(dir); !os.IsNotExist(err) {
						return fmt.Errorf("socket directory %s left: %v", dir, err)
					}
					return nil
				}()
			}()
		}
		wg.Wait()
		s.Wait()
		for r, err := range errs {
			if err != nil {
				t.Fatalf("PMI-%s: process %d: %v", v, r, err)
			}
			if !bytes.Equal(keys[r], keys[0]) {
				t.Fatalf("PMI-%s: process %d has another secret", v, r)
			}
		}
	}
	if _, _, ok, err := fromPMI(pmiLookup(0, 1, EnvRank, "0"), nil); ok || err != nil {
		t.Fatalf("under ftmpirun: ok %v err %v", ok, err)
	}
}

// A process that never reaches the fence (it died first): the others'
// Init fails with a clear error at the fence deadline.
func TestPMIExchangeDeadline(t *testing.T) {
	s := pmitest.New(2)
	_, job, _, err := fromPMI(pmiLookup(0, 2, "FTMPI_PMI_TIMEOUT", "200ms"), fakeDial(s, 0))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = job.Exchange(Endpoint{})
	want := "boot: start-up exchange through mpiexec (PMI): pmi: fence: no answer from the launcher within 200ms"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("after %v", el)
	}
	job.Close()
	s.Release()
	s.Wait()
}

func TestPMISparesAndErrors(t *testing.T) {
	if err := checkSpares(8, 2); err != nil {
		t.Fatalf("checkSpares(8, 2): %v", err)
	}
	for _, k := range []int{-1, 4} {
		if err := checkSpares(4, k); err == nil || !strings.Contains(err.Error(), "must leave at least one") {
			t.Fatalf("checkSpares(4, %d): %v", k, err)
		}
	}
	// The last task of 4 with FTMPI_SPARES=1 is a spare: CommWorld has 3.
	s := pmitest.New(4)
	info, job, ok, err := fromPMI(pmiLookup(3, 4, EnvSpares, "1", "SLURM_STEP_ID", "0"), fakeDial(s, 3))
	if err != nil || !ok || !info.IsSpare() || info.WorldSize() != 3 || info.Size != 4 || info.Reinit {
		t.Fatalf("spare: ok %v, IsSpare %v, WorldSize %d, Size %d, Reinit %v, %v", ok, info.IsSpare(), info.WorldSize(), info.Size, info.Reinit, err)
	}
	job.Close()
	s.Wait()
	// FTMPI_REINIT=1 (MPI_Reinit without a head, with the spares).
	s = pmitest.New(4)
	info, job, ok, err = fromPMI(pmiLookup(0, 4, EnvSpares, "1", EnvReinit, "1"), fakeDial(s, 0))
	if err != nil || !ok || !info.Reinit || info.Spares != 1 {
		t.Fatalf("reinit: ok %v, Reinit %v, Spares %d, %v", ok, info.Reinit, info.Spares, err)
	}
	job.Close()
	s.Wait()
	for _, tc := range []struct{ k, v, want string }{
		{EnvTransport, "ib", "must be auto, unix, tcp or shm"},
		{EnvListen, "nowhere", "not an IP address"},
		{EnvSpares, "x", "not an integer"},
		{EnvReinit, "yes", "must be 0 or 1"},
	} {
		if _, _, _, err := fromPMI(pmiLookup(0, 1, tc.k, tc.v), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v", tc.k, tc.v, err)
		}
	}
	if err := NoHeadError("MPI_Comm_spawn", launchSrun); err.Error() != "MPI_Comm_spawn is not available when started by srun (PMI): start with ftmpirun or use spare processes" {
		t.Fatal(err)
	}
}

// No process leaves the start-up while another still reads endpoints (the
// closing fence, Settle, after Exchange): process 3's first endpoint get
// is held until either another process's Exchange and Settle returned
// (the property broken) or every other process waits in a second fence.
func TestPMIExchangeEndsAfterEveryGet(t *testing.T) {
	const n, slow = 4, 3
	s := pmitest.New(n)
	s.Errorf = t.Errorf
	returned := make(chan int, n)
	var held sync.Once
	var heldErr error
	s.Reply = func(rank int, req pmi.Msg) (string, bool) {
		if rank != slow || req.Cmd != "get" || !strings.HasPrefix(req.Get("key"), pmiKeyEp) {
			return "", false
		}
		held.Do(func() {
			deadline := time.After(10 * time.Second)
			for {
				if ended, waiting := s.Fences(); ended == 1 && waiting == n-1 {
					return // the others wait in the closing fence
				}
				select {
				case r := <-returned:
					heldErr = fmt.Errorf("process %d left the exchange while process %d still read endpoints", r, slow)
					return
				case <-deadline:
					heldErr = fmt.Errorf("the others neither left the exchange nor reached a second fence within 10s")
					return
				case <-time.After(time.Millisecond): // polling the server's fence count, bounded by the deadline
				}
			}
		})
		return "", false
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, job, _, err := fromPMI(pmiLookup(r, n, "FTMPI_PMI", "1"), fakeDial(s, r))
			if err != nil {
				errs[r] = err
				return
			}
			_, _, errs[r] = job.Exchange(Endpoint{Addrs: map[string]string{"unix": "/x/" + strconv.Itoa(r)}})
			if errs[r] == nil {
				errs[r] = job.Settle() // the closing fence
			}
			returned <- r
			if err := job.Finalize(); err != nil && errs[r] == nil {
				errs[r] = err
			}
		}()
	}
	wg.Wait()
	s.Wait()
	if heldErr != nil {
		t.Fatal(heldErr)
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", r, err)
		}
	}
}
