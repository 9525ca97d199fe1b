// Package pmitest is an in-process PMI server for tests: PMI-1 as hydra
// speaks it (get_maxes, put within the line limit, barrier) and PMI-2 as
// Slurm does (fullinit needs pmirank), puts visible after the fence, with
// hooks to misbehave. Tests only: it must not be linked into a program.
package pmitest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/ftmpi/ftmpi/internal/boot/pmi"
)

// MaxLineV1 is the PMI-1 line limit the server enforces (hydra's).
const MaxLineV1 = 1024

// Server is an in-process PMI server for n processes that speaks
// PMI-1 (as hydra does: get_maxes, put with the line limit, barrier) and
// PMI-2 (as Slurm does: fullinit needs pmirank, kvs-fence), with puts
// visible only after the fence. Hooks make it misbehave.
type Server struct {
	Errorf         func(format string, args ...any) // reports a client error (nil: ignored)
	N              int
	V1, V2         bool // protocols it accepts
	KeyMax, ValMax int

	// Reply, if set, may replace the answer to a request of process rank:
	// raw bytes to write instead (handled true), or close (raw "").
	Reply func(rank int, req pmi.Msg) (raw string, handled bool)
	// Fenced, if set, is called when fence number fence (1, 2, ...) has
	// ended, before process rank is answered: it may block, holding that
	// process between the fence and whatever it does next.
	Fenced func(rank, fence int)
	// Mapping, if set, is the job's PMI_process_mapping, answered as
	// hydra's proxy (PMI-1 get) and Slurm (PMI-2 info-getjobattr) do.
	Mapping string

	mu        sync.Mutex
	cond      *sync.Cond
	staged    map[string]string
	kvs       map[string]string
	arrived   int
	gen       int
	Aborts    []string // "rank:exitcode:msg" of every abort
	Longest   int      // the longest PMI-1 line or PMI-2 body read
	wg        sync.WaitGroup
	Finalized int
}

// New returns a server for n processes speaking both protocols with
// hydra's limits.
func New(n int) *Server {
	s := &Server{N: n, V1: true, V2: true, KeyMax: 64, ValMax: 1024,
		staged: map[string]string{}, kvs: map[string]string{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Conn returns the client end of a new connection for process rank.
func (s *Server) Conn(rank int) net.Conn {
	a, b := net.Pipe()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer b.Close()
		s.serve(b, rank)
	}()
	return a
}

// Fences reports how many fences ended and how many processes wait in
// the one in progress.
func (s *Server) Fences() (ended, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, s.arrived
}

// Wait waits until every connection is served to its end.
func (s *Server) Wait() { s.wg.Wait() }

// Release ends the fence in progress without the missing processes (a
// test of a fence deadline, to let the server's goroutines finish).
func (s *Server) Release() {
	s.mu.Lock()
	s.arrived = 0
	s.gen++
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *Server) errorf(format string, args ...any) {
	if s.Errorf != nil {
		s.Errorf(format, args...)
	}
}

func (s *Server) note(n int) {
	s.mu.Lock()
	s.Longest = max(s.Longest, n)
	s.mu.Unlock()
}

func (s *Server) serve(c net.Conn, rank int) {
	r := bufio.NewReader(c)
	v := 1
	w := func(raw string) bool { _, err := io.WriteString(c, raw); return err == nil }
	answer := func(cmd string, kv ...string) bool {
		if v == 1 {
			return w(pmi.FormatV1(cmd, kv...))
		}
		return w(string(pmi.FormatV2(cmd, kv...)))
	}
	for {
		var req pmi.Msg
		var err error
		if v == 1 {
			var line string
			line, err = r.ReadString('\n')
			if err != nil {
				return
			}
			s.note(len(line))
			if len(line) > MaxLineV1 {
				answer("error", "rc", "-1", "msg", "line_too_long")
				continue
			}
			req, err = pmi.ParseV1(line)
		} else {
			var h [6]byte
			if _, err = io.ReadFull(r, h[:]); err != nil {
				return
			}
			n, err := pmi.ParseV2Len(h[:])
			if err != nil {
				s.errorf("fake: bad length %q", h)
				return
			}
			body := make([]byte, n)
			if _, err = io.ReadFull(r, body); err != nil {
				return
			}
			s.note(n)
			req, err = pmi.ParseV2(body)
		}
		if err != nil {
			s.errorf("fake: the client sent a malformed request: %v", err)
			return
		}
		if s.Reply != nil {
			if raw, ok := s.Reply(rank, req); ok {
				if raw == "" || !w(raw) {
					return
				}
				continue
			}
		}
		ok := true
		switch req.Cmd {
		case "initack":
			ok = answer("initack") && answer("set", "size", strconv.Itoa(s.N)) && answer("set", "rank", strconv.Itoa(rank)) && answer("set", "debug", "0")
		case "init":
			want := req.Get("pmi_version")
			if (want == "2" && !s.V2) || (want == "1" && !s.V1) {
				ok = answer("response_to_init", "pmi_version", want, "pmi_subversion", "0", "rc", "-1")
				break
			}
			ok = answer("response_to_init", "pmi_version", want, "pmi_subversion", req.Get("pmi_subversion"), "rc", "0")
			if want == "2" {
				v = 2
			}
		case "get_maxes":
			ok = answer("maxes", "kvsname_max", "256", "keylen_max", strconv.Itoa(s.KeyMax), "vallen_max", strconv.Itoa(s.ValMax))
		case "get_appnum":
			ok = answer("appnum", "appnum", "0")
		case "get_my_kvsname":
			ok = answer("my_kvsname", "kvsname", "kvs_fake_0")
		case "fullinit":
			if req.Get("pmirank") != strconv.Itoa(rank) {
				ok = answer("fullinit-response", "rc", "3", "errmsg", "pmirank_wrong")
				break
			}
			ok = answer("fullinit-response", "pmi-version", "2", "pmi-subversion", "0", "rank", strconv.Itoa(rank),
				"size", strconv.Itoa(s.N), "appnum", "0", "rc", "0")
		case "job-getid":
			ok = answer("job-getid-response", "jobid", "fakejob", "rc", "0")
		case "put", "kvs-put":
			k, val := req.Get("key"), req.Get("value")
			resp := "put_result"
			if v == 2 {
				resp = "kvs-put-response"
			}
			if len(k) > s.KeyMax || len(val) > s.ValMax || (v == 1 && req.Get("kvsname") != "kvs_fake_0") {
				ok = answer(resp, "rc", "-1", "msg", "too_long")
				break
			}
			s.mu.Lock()
			s.staged[k] = val
			s.mu.Unlock()
			ok = answer(resp, "rc", "0", "msg", "success")
		case "barrier_in", "kvs-fence":
			s.mu.Lock()
			s.arrived++
			g := s.gen
			if s.arrived == s.N {
				for k, val := range s.staged {
					s.kvs[k] = val
				}
				s.arrived = 0
				s.gen++
				s.cond.Broadcast()
			}
			for s.gen == g {
				s.cond.Wait()
			}
			fence := g + 1
			s.mu.Unlock()
			if s.Fenced != nil {
				s.Fenced(rank, fence)
			}
			if v == 1 {
				ok = answer("barrier_out")
			} else {
				ok = answer("kvs-fence-response", "rc", "0")
			}
		case "info-getjobattr":
			if req.Get("key") == "PMI_process_mapping" && s.Mapping != "" {
				ok = answer("info-getjobattr-response", "found", "TRUE", "value", s.Mapping, "rc", "0")
			} else {
				ok = answer("info-getjobattr-response", "found", "FALSE", "rc", "0")
			}
		case "get", "kvs-get":
			s.mu.Lock()
			val, found := s.kvs[req.Get("key")]
			if v == 1 && req.Get("key") == "PMI_process_mapping" && s.Mapping != "" {
				val, found = s.Mapping, true
			}
			s.mu.Unlock()
			switch {
			case v == 1 && found:
				ok = answer("get_result", "rc", "0", "msg", "success", "value", val)
			case v == 1:
				ok = answer("get_result", "rc", "-1", "msg", "key_not_found")
			case found:
				ok = answer("kvs-get-response", "found", "TRUE", "value", val, "rc", "0")
			default:
				ok = answer("kvs-get-response", "found", "FALSE", "rc", "0")
			}
		case "finalize":
			s.mu.Lock()
			s.Finalized++
			s.mu.Unlock()
			if v == 1 {
				answer("finalize_ack")
			} else {
				answer("finalize-response", "rc", "0")
			}
			return
		case "abort":
			s.mu.Lock()
			s.Aborts = append(s.Aborts, fmt.Sprintf("%d:%s:%s", rank, req.Get("exitcode"), req.Get("msg")))
			s.mu.Unlock()
			return
		default:
			s.errorf("fake: unknown command %q", req.Cmd)
			return
		}
		if !ok {
			return
		}
	}
}
