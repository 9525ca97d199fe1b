package pmi_test

import (
	"fmt"
	"github.com/ftmpi/ftmpi/internal/boot/pmi"
	"github.com/ftmpi/ftmpi/internal/boot/pmi/pmitest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// exchangeAll runs the start-up exchange of n processes over s with
// version v: each puts a value of size bytes, fences, and gets everybody's.
func exchangeAll(t *testing.T, s *pmitest.Server, v, size int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, s.N)
	for r := range s.N {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				pc, err := pmi.Open(s.Conn(r), pmi.Env{FD: 3, Rank: r, Size: s.N, Version: v, Fence: 10 * time.Second}, 10*time.Second)
				if err != nil {
					return err
				}
				if pc.Version() != v || pc.Rank() != r || pc.Size() != s.N {
					return fmt.Errorf("version %d rank %d size %d", pc.Version(), pc.Rank(), pc.Size())
				}
				if err := pc.PutLong("ep-"+strconv.Itoa(r), value(r, size)); err != nil {
					return err
				}
				if err := pc.Fence(); err != nil {
					return err
				}
				for p := range s.N {
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
	s.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", r, err)
		}
	}
	if s.Finalized != s.N {
		t.Fatalf("%d finalized, want %d", s.Finalized, s.N)
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
	s.ValMax = 200 // a server with a small limit: the values take many keys
	exchangeAll(t, s, 1, 3000)
	if s.Longest > pmitest.MaxLineV1 {
		t.Fatalf("a line of %d bytes", s.Longest)
	}
}

func TestV2ExchangeSplitsLongValues(t *testing.T) {
	s := newFake(t, 4)
	exchangeAll(t, s, 2, 5000)
	if s.Longest > 1024+64 {
		t.Fatalf("a message of %d bytes", s.Longest)
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
	s.V2 = false
	pc, err := pmi.Open(s.Conn(0), pmi.Env{FD: 3, Rank: 0, Size: 1}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pc.Version() != 1 {
		t.Fatalf("version %d", pc.Version())
	}
	pc.Finalize()
	s.Wait()
}

func TestV2AskedButRefused(t *testing.T) {
	s := newFake(t, 1)
	s.V2 = false
	c := s.Conn(0)
	_, err := pmi.Open(c, pmi.Env{FD: 3, Rank: 0, Size: 1, Version: 2}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "PMI-1, PMI-2 was asked for") {
		t.Fatalf("err %v", err)
	}
	c.Close()
	s.Wait()
}

func TestPortModeInitack(t *testing.T) {
	s := newFake(t, 2)
	c := s.Conn(1)
	pc, err := pmi.Open(c, pmi.Env{FD: -1, Port: "h:1", ID: "1", Rank: -1, Version: 1}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pc.Rank() != 1 || pc.Size() != 2 {
		t.Fatalf("rank %d size %d", pc.Rank(), pc.Size())
	}
	pc.Close()
	s.Wait()
}

// A process missing from the fence (it died before reaching it): the
// fence ends with a clear error at its deadline, not a hang.
func TestFenceDeadline(t *testing.T) {
	for _, v := range []int{1, 2} {
		s := newFake(t, 2)
		c := s.Conn(0)
		pc, err := pmi.Open(c, pmi.Env{FD: 3, Rank: 0, Size: 2, Version: v, Fence: 300 * time.Millisecond}, time.Second)
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
		s.Release()
		s.Wait()
	}
}

// The launcher goes away during the fence (it killed the job after a
// death): a clear error at once.
func TestLauncherGoneDuringFence(t *testing.T) {
	for _, v := range []int{1, 2} {
		s := newFake(t, 2)
		s.Reply = func(_ int, req pmi.Msg) (string, bool) {
			return "", req.Cmd == "barrier_in" || req.Cmd == "kvs-fence"
		}
		pc, err := pmi.Open(s.Conn(0), pmi.Env{FD: 3, Rank: 0, Size: 2, Version: v}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Fence(); err == nil || !strings.Contains(err.Error(), "fence: the launcher closed the connection") {
			t.Fatalf("v%d: err %v", v, err)
		}
		pc.Close()
		s.Wait()
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
		{2, "fullinit", string(pmi.FormatV2("fullinit-response", "rank", "0", "size", "zero", "rc", "0")), `size="zero"`},
		{2, "fullinit", string(pmi.FormatV2("fullinit-response", "rank", "5", "size", "2", "rc", "0")), "rank 5 of size 2"},
		{2, "fullinit", string(pmi.FormatV2("fullinit-response", "rc", "3", "errmsg", "pmijobid_missing")), "rc=3 pmijobid_missing"},
	}
	for _, tc := range cases {
		s := newFake(t, 2)
		s.Reply = func(_ int, req pmi.Msg) (string, bool) {
			if req.Cmd == tc.cmd {
				return tc.raw, true
			}
			return "", false
		}
		c := s.Conn(0)
		_, err := pmi.Open(c, pmi.Env{FD: 3, Rank: 0, Size: 2, Version: tc.v}, 300*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s -> %q: err %v, want %q", tc.cmd, tc.raw, err, tc.wants)
		}
		c.Close()
		s.Wait()
	}
}

func TestGetReplyWithoutValue(t *testing.T) {
	s := newFake(t, 1)
	s.Reply = func(_ int, req pmi.Msg) (string, bool) {
		if req.Cmd == "kvs-get" {
			return string(pmi.FormatV2("kvs-get-response", "found", "maybe", "rc", "0")), true
		}
		return "", false
	}
	pc, err := pmi.Open(s.Conn(0), pmi.Env{FD: 3, Rank: 0, Size: 1, Version: 2}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pc.Get("k"); err == nil || !strings.Contains(err.Error(), `found="maybe"`) {
		t.Fatalf("err %v", err)
	}
	pc.Close()
	s.Wait()
}

func TestPutChecks(t *testing.T) {
	s := newFake(t, 1)
	pc, err := pmi.Open(s.Conn(0), pmi.Env{FD: 3, Rank: 0, Size: 1, Version: 1}, time.Second)
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
	s.Wait()
}

func TestGetLongChecksPieces(t *testing.T) {
	s := newFake(t, 1)
	pc, err := pmi.Open(s.Conn(0), pmi.Env{FD: 3, Rank: 0, Size: 1, Version: 2}, time.Second)
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
	s.Wait()
}

func TestAbort(t *testing.T) {
	for _, v := range []int{1, 2} {
		s := newFake(t, 1)
		pc, err := pmi.Open(s.Conn(0), pmi.Env{FD: 3, Rank: 0, Size: 1, Version: v}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Abort(7, "MPI_Abort called; bye", false); err != nil {
			t.Fatal(err)
		}
		s.Wait()
		pc.Close()
		want := "0:7:"
		if v == 2 {
			want = "0::MPI_Abort_called__bye"
		}
		if len(s.Aborts) != 1 || s.Aborts[0] != want {
			t.Fatalf("v%d: aborts %q, want %q", v, s.Aborts, want)
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
	if _, ok, err := pmi.FromEnv(env("PMI_RANK", "0")); ok || err != nil {
		t.Fatalf("no PMI_FD: ok %v err %v", ok, err)
	}
	e, ok, err := pmi.FromEnv(env("PMI_FD", "6", "PMI_RANK", "1", "PMI_SIZE", "4", "PMI_JOBID", "12.0", "FTMPI_PMI", "1", "FTMPI_PMI_TIMEOUT", "3s"))
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
		{[]string{"PMI_FD", "3", "FTMPI_PMI_TIMEOUT", "-1s"}, `invalid FTMPI_PMI_TIMEOUT="-1s": want a duration from 1ms to 24h0m0s`},
		{[]string{"PMI_FD", "3", "FTMPI_PMI_TIMEOUT", "1ns"}, `invalid FTMPI_PMI_TIMEOUT="1ns": want a duration from 1ms to 24h0m0s`},
		{[]string{"PMI_FD", "3", "FTMPI_PMI_TIMEOUT", "25h"}, `invalid FTMPI_PMI_TIMEOUT="25h": want a duration from 1ms to 24h0m0s`},
	} {
		if _, _, err := pmi.FromEnv(env(tc.kv...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.kv, err, tc.want)
		}
	}
}

func newFake(t *testing.T, n int) *pmitest.Server {
	s := pmitest.New(n)
	s.Errorf = t.Errorf
	return s
}
