package pmi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is an in-process PMI server for n processes that speaks
// PMI-1 (as hydra does: get_maxes, put with the line limit, barrier) and
// PMI-2 (as Slurm does: fullinit needs pmirank, kvs-fence), with puts
// visible only after the fence. Hooks make it misbehave.
type fakeServer struct {
	t              *testing.T
	n              int
	v1, v2         bool // protocols it accepts
	keyMax, valMax int

	// reply, if set, may replace the answer to a request of process rank:
	// raw bytes to write instead (handled true), or close (raw "").
	reply func(rank int, req Msg) (raw string, handled bool)
	// port: PMI_PORT mode (initack first).
	port bool

	mu       sync.Mutex
	cond     *sync.Cond
	staged   map[string]string
	kvs      map[string]string
	arrived  int
	gen      int
	aborts   []string
	longest  int // the longest PMI-1 line or PMI-2 body read
	wg       sync.WaitGroup
	finalize int
}

func newFake(t *testing.T, n int) *fakeServer {
	s := &fakeServer{t: t, n: n, v1: true, v2: true, keyMax: 64, valMax: 1024,
		staged: map[string]string{}, kvs: map[string]string{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// conn returns the client end of a new connection for process rank.
func (s *fakeServer) conn(rank int) net.Conn {
	a, b := net.Pipe()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer b.Close()
		s.serve(b, rank)
	}()
	return a
}

func (s *fakeServer) wait() { s.wg.Wait() }

func (s *fakeServer) note(n int) {
	s.mu.Lock()
	s.longest = max(s.longest, n)
	s.mu.Unlock()
}

func (s *fakeServer) serve(c net.Conn, rank int) {
	r := bufio.NewReader(c)
	v := 1
	w := func(raw string) bool { _, err := io.WriteString(c, raw); return err == nil }
	answer := func(cmd string, kv ...string) bool {
		if v == 1 {
			return w(FormatV1(cmd, kv...))
		}
		return w(string(FormatV2(cmd, kv...)))
	}
	for {
		var req Msg
		var err error
		if v == 1 {
			var line string
			line, err = r.ReadString('\n')
			if err != nil {
				return
			}
			s.note(len(line))
			if len(line) > maxLineV1 {
				answer("error", "rc", "-1", "msg", "line_too_long")
				continue
			}
			req, err = ParseV1(line)
		} else {
			var h [lenWidth]byte
			if _, err = io.ReadFull(r, h[:]); err != nil {
				return
			}
			n, err := ParseV2Len(h[:])
			if err != nil {
				s.t.Errorf("fake: bad length %q", h)
				return
			}
			body := make([]byte, n)
			if _, err = io.ReadFull(r, body); err != nil {
				return
			}
			s.note(n)
			req, err = ParseV2(body)
		}
		if err != nil {
			s.t.Errorf("fake: the client sent a malformed request: %v", err)
			return
		}
		if s.reply != nil {
			if raw, ok := s.reply(rank, req); ok {
				if raw == "" || !w(raw) {
					return
				}
				continue
			}
		}
		ok := true
		switch req.Cmd {
		case "initack":
			ok = answer("initack") && answer("set", "size", strconv.Itoa(s.n)) && answer("set", "rank", strconv.Itoa(rank)) && answer("set", "debug", "0")
		case "init":
			want := req.Get("pmi_version")
			if (want == "2" && !s.v2) || (want == "1" && !s.v1) {
				ok = answer("response_to_init", "pmi_version", want, "pmi_subversion", "0", "rc", "-1")
				break
			}
			ok = answer("response_to_init", "pmi_version", want, "pmi_subversion", req.Get("pmi_subversion"), "rc", "0")
			if want == "2" {
				v = 2
			}
		case "get_maxes":
			ok = answer("maxes", "kvsname_max", "256", "keylen_max", strconv.Itoa(s.keyMax), "vallen_max", strconv.Itoa(s.valMax))
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
				"size", strconv.Itoa(s.n), "appnum", "0", "rc", "0")
		case "job-getid":
			ok = answer("job-getid-response", "jobid", "fakejob", "rc", "0")
		case "put", "kvs-put":
			k, val := req.Get("key"), req.Get("value")
			resp := "put_result"
			if v == 2 {
				resp = "kvs-put-response"
			}
			if len(k) > s.keyMax || len(val) > s.valMax || (v == 1 && req.Get("kvsname") != "kvs_fake_0") {
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
			if s.arrived == s.n {
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
			s.mu.Unlock()
			if v == 1 {
				ok = answer("barrier_out")
			} else {
				ok = answer("kvs-fence-response", "rc", "0")
			}
		case "get", "kvs-get":
			s.mu.Lock()
			val, found := s.kvs[req.Get("key")]
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
			s.finalize++
			s.mu.Unlock()
			if v == 1 {
				answer("finalize_ack")
			} else {
				answer("finalize-response", "rc", "0")
			}
			return
		case "abort":
			s.mu.Lock()
			s.aborts = append(s.aborts, fmt.Sprintf("%d:%s:%s", rank, req.Get("exitcode"), req.Get("msg")))
			s.mu.Unlock()
			return
		default:
			s.t.Errorf("fake: unknown command %q", req.Cmd)
			return
		}
		if !ok {
			return
		}
	}
}

// exchangeAll runs the start-up exchange of n processes over s with
// version v: each puts a value of size bytes, fences, and gets everybody's.
func exchangeAll(t *testing.T, s *fakeServer, v, size int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, s.n)
	for r := range s.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				pc, err := Open(s.conn(r), Env{FD: 3, Rank: r, Size: s.n, Version: v, Fence: 10 * time.Second}, 10*time.Second)
				if err != nil {
					return err
				}
				if pc.Version() != v || pc.Rank() != r || pc.Size() != s.n {
					return fmt.Errorf("version %d rank %d size %d", pc.Version(), pc.Rank(), pc.Size())
				}
				if err := pc.PutLong("ep-"+strconv.Itoa(r), value(r, size)); err != nil {
					return err
				}
				if err := pc.Fence(); err != nil {
					return err
				}
				for p := range s.n {
					got, found, err := pc.GetLong("ep-" + strconv.Itoa(p))
					if err != nil {
						return err
					}
					if !found || string(got) != string(value(p, size)) {
						return fmt.Errorf("value of %d: found %v, %d bytes", p, found, len(got))
					}
				}
				if _, found, err := pc.GetLong("ep-none"); err != nil || found {
					return fmt.Errorf("missing key: found %v, %v", found, err)
				}
				return pc.Finalize()
			}()
		}()
	}
	wg.Wait()
	s.wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", r, err)
		}
	}
	if s.finalize != s.n {
		t.Fatalf("%d finalized, want %d", s.finalize, s.n)
	}
}

// value is a test value of size bytes for process r, with bytes PMI
// forbids (spaces, ';', '=', line breaks).
func value(r, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = " ;=\n\x00abcd"[(i+r)%9]
	}
	return b
}

func TestV1ExchangeSplitsLongValues(t *testing.T) {
	s := newFake(t, 4)
	s.valMax = 200 // a server with a small limit: the values take many keys
	exchangeAll(t, s, 1, 3000)
	if s.longest > maxLineV1 {
		t.Fatalf("a line of %d bytes", s.longest)
	}
}

func TestV2ExchangeSplitsLongValues(t *testing.T) {
	s := newFake(t, 4)
	exchangeAll(t, s, 2, 5000)
	if s.longest > maxValV2+64 {
		t.Fatalf("a message of %d bytes", s.longest)
	}
}

func TestShortValues(t *testing.T) {
	for _, v := range []int{1, 2} {
		exchangeAll(t, newFake(t, 3), v, 0)
		exchangeAll(t, newFake(t, 1), v, 10)
	}
}

func TestAutoFallsBackToV1(t *testing.T) {
	s := newFake(t, 1)
	s.v2 = false
	pc, err := Open(s.conn(0), Env{FD: 3, Rank: 0, Size: 1}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pc.Version() != 1 {
		t.Fatalf("version %d", pc.Version())
	}
	pc.Finalize()
	s.wait()
}

func TestV2AskedButRefused(t *testing.T) {
	s := newFake(t, 1)
	s.v2 = false
	c := s.conn(0)
	_, err := Open(c, Env{FD: 3, Rank: 0, Size: 1, Version: 2}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "PMI-1, PMI-2 was asked for") {
		t.Fatalf("err %v", err)
	}
	c.Close()
	s.wait()
}

func TestPortModeInitack(t *testing.T) {
	s := newFake(t, 2)
	s.port = true
	c := s.conn(1)
	pc, err := Open(c, Env{FD: -1, Port: "h:1", ID: "1", Rank: -1, Version: 1}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pc.Rank() != 1 || pc.Size() != 2 {
		t.Fatalf("rank %d size %d", pc.Rank(), pc.Size())
	}
	pc.Close()
	s.wait()
}

// A process missing from the fence (it died before reaching it): the
// fence ends with a clear error at its deadline, not a hang.
func TestFenceDeadline(t *testing.T) {
	for _, v := range []int{1, 2} {
		s := newFake(t, 2)
		c := s.conn(0)
		pc, err := Open(c, Env{FD: 3, Rank: 0, Size: 2, Version: v, Fence: 300 * time.Millisecond}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = pc.Fence()
		if err == nil || !strings.Contains(err.Error(), "fence: no answer from the launcher within 300ms") {
			t.Fatalf("v%d: err %v", v, err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("v%d: fence failed after %v", v, el)
		}
		pc.Close()
		// Release the fake's barrier wait.
		s.mu.Lock()
		s.gen++
		s.cond.Broadcast()
		s.mu.Unlock()
		s.wait()
	}
}

// The launcher goes away during the fence (it killed the job after a
// death): a clear error at once.
func TestLauncherGoneDuringFence(t *testing.T) {
	for _, v := range []int{1, 2} {
		s := newFake(t, 2)
		s.reply = func(_ int, req Msg) (string, bool) {
			return "", req.Cmd == "barrier_in" || req.Cmd == "kvs-fence"
		}
		pc, err := Open(s.conn(0), Env{FD: 3, Rank: 0, Size: 2, Version: v}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Fence(); err == nil || !strings.Contains(err.Error(), "fence: the launcher closed the connection") {
			t.Fatalf("v%d: err %v", v, err)
		}
		pc.Close()
		s.wait()
	}
}

func TestMalformedReplies(t *testing.T) {
	cases := []struct {
		v     int
		cmd   string
		raw   string
		wants string
	}{
		{1, "get_maxes", "garbage\n", `field "garbage" is not key=value`},
		{1, "get_maxes", "a=b\n", "does not start with cmd="},
		{1, "get_maxes", "cmd=maxes kvsname_max=256 keylen_max=x vallen_max=1\n", "keylen_max=\"x\""},
		{1, "get_appnum", "cmd=wrong\n", `answered "wrong", want "appnum"`},
		{1, "get_my_kvsname", "cmd=my_kvsname\n", `kvsname=""`},
		{2, "fullinit", "   abcmd=x;", "length prefix"},
		{2, "fullinit", "999999", "PMI-2 message of 999999 bytes"},
		{2, "fullinit", "    20cmd=fullin", "no answer from the launcher within 300ms"}, // a cut message: the deadline ends it
		{2, "fullinit", "    25cmd=fullinit-response;rank", "not key=value"},
		{2, "fullinit", string(FormatV2("fullinit-response", "rank", "0", "size", "zero", "rc", "0")), `size="zero"`},
		{2, "fullinit", string(FormatV2("fullinit-response", "rank", "5", "size", "2", "rc", "0")), "rank 5 of size 2"},
		{2, "fullinit", string(FormatV2("fullinit-response", "rc", "3", "errmsg", "pmijobid_missing")), "rc=3 pmijobid_missing"},
	}
	for _, tc := range cases {
		s := newFake(t, 2)
		s.reply = func(_ int, req Msg) (string, bool) {
			if req.Cmd == tc.cmd {
				return tc.raw, true
			}
			return "", false
		}
		c := s.conn(0)
		_, err := Open(c, Env{FD: 3, Rank: 0, Size: 2, Version: tc.v}, 300*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s -> %q: err %v, want %q", tc.cmd, tc.raw, err, tc.wants)
		}
		c.Close()
		s.wait()
	}
}

func TestGetReplyWithoutValue(t *testing.T) {
	s := newFake(t, 1)
	s.reply = func(_ int, req Msg) (string, bool) {
		if req.Cmd == "kvs-get" {
			return string(FormatV2("kvs-get-response", "found", "maybe", "rc", "0")), true
		}
		return "", false
	}
	pc, err := Open(s.conn(0), Env{FD: 3, Rank: 0, Size: 1, Version: 2}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pc.Get("k"); err == nil || !strings.Contains(err.Error(), `found="maybe"`) {
		t.Fatalf("err %v", err)
	}
	pc.Close()
	s.wait()
}

func TestPutChecks(t *testing.T) {
	s := newFake(t, 1)
	pc, err := Open(s.conn(0), Env{FD: 3, Rank: 0, Size: 1, Version: 1}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ k, v, want string }{
		{"a b", "x", "holds a space"},
		{strings.Repeat("k", 65), "x", "the server allows 64"},
		{"k", "x y", "value \"x y\" holds"},
		{"k", strings.Repeat("x", 2000), "PutLong splits it"},
	} {
		if err := pc.Put(tc.k, tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Put(%q, %d bytes): %v, want %q", tc.k, len(tc.v), err, tc.want)
		}
	}
	pc.Close()
	s.wait()
}

func TestGetLongChecksPieces(t *testing.T) {
	s := newFake(t, 1)
	pc, err := Open(s.conn(0), Env{FD: 3, Rank: 0, Size: 1, Version: 2}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"a": "3:QQ", "b": "x:QQ", "c": "1:%%"} {
		if err := pc.Put(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := pc.Fence(); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"a": "piece 1 of 3 is missing", "b": "not a count of pieces", "c": "illegal base64"} {
		if _, _, err := pc.GetLong(k); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("GetLong(%s): %v, want %q", k, err, want)
		}
	}
	pc.Close()
	s.wait()
}

func TestAbort(t *testing.T) {
	for _, v := range []int{1, 2} {
		s := newFake(t, 1)
		pc, err := Open(s.conn(0), Env{FD: 3, Rank: 0, Size: 1, Version: v}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Abort(7, "MPI_Abort called; bye"); err != nil {
			t.Fatal(err)
		}
		s.wait()
		pc.Close()
		want := "0:7:"
		if v == 2 {
			want = "0::MPI_Abort_called__bye"
		}
		if len(s.aborts) != 1 || s.aborts[0] != want {
			t.Fatalf("v%d: aborts %q, want %q", v, s.aborts, want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if _, ok, err := FromEnv(env("PMI_RANK", "0")); ok || err != nil {
		t.Fatalf("no PMI_FD: ok %v err %v", ok, err)
	}
	e, ok, err := FromEnv(env("PMI_FD", "6", "PMI_RANK", "1", "PMI_SIZE", "4", "PMI_JOBID", "12.0", "FTMPI_PMI", "1", "FTMPI_PMI_TIMEOUT", "3s"))
	if !ok || err != nil || e.FD != 6 || e.Rank != 1 || e.Size != 4 || e.JobID != "12.0" || e.Version != 1 || e.Fence != 3*time.Second {
		t.Fatalf("%+v %v %v", e, ok, err)
	}
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"PMI_FD", "x"}, "PMI_FD=\"x\""},
		{[]string{"PMI_FD", "3", "PMI_RANK", "-1"}, "PMI_RANK=\"-1\""},
		{[]string{"PMI_FD", "3", "PMI_RANK", "4", "PMI_SIZE", "4"}, "PMI_RANK=4 out of range"},
		{[]string{"PMI_FD", "3", "PMI_SIZE", "0"}, "PMI_SIZE=\"0\""},
		{[]string{"PMI_PORT", "nocolon"}, "must be host:port"},
		{[]string{"PMI_FD", "3", "FTMPI_PMI", "3"}, "must be 1, 2 or auto"},
		{[]string{"PMI_FD", "3", "FTMPI_PMI_TIMEOUT", "-1s"}, "positive duration"},
	} {
		if _, _, err := FromEnv(env(tc.kv...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.kv, err, tc.want)
		}
	}
}
