package ctlwire

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func layoutOf(hosts []LayoutHost, host, inc []int) Layout {
	return Layout{Hosts: hosts, Host: host, Inc: inc}
}

// A layout's encoding grows with the hosts and the placement's pattern,
// not with the processes, and reads back exactly.
func TestLayoutRoundTripAndSize(t *testing.T) {
	two := []LayoutHost{{Name: "h0", Cores: 8}, {Name: "h1", Cores: 4}}
	for _, n := range []int{1, 7, 1000, 100000} {
		cases := map[string]Layout{
			"one host":    layoutOf(two[:1], make([]int, n), make([]int, n)),
			"round-robin": layoutOf(two, make([]int, n), make([]int, n)),
			"blocks":      layoutOf(two, make([]int, n), make([]int, n)),
		}
		for p := range n {
			cases["round-robin"].Host[p] = p % 2
			if p >= n/2 {
				cases["blocks"].Host[p] = 1
			}
		}
		for name, l := range cases {
			s := FormatLayout(l)
			if len(s) > 120 {
				t.Errorf("n %d %s: %d bytes (%s), want a size independent of n", n, name, len(s), s)
			}
			got, err := ParseLayout(s, n)
			if err != nil {
				t.Fatalf("n %d %s: %v", n, name, err)
			}
			if !reflect.DeepEqual(got, l) {
				t.Fatalf("n %d %s: read back another layout", n, name)
			}
		}
	}
	// Incarnations and processes that published nothing.
	l := layoutOf(two, []int{0, 1, -1, 0, 1}, []int{0, 0, 0, 3, 0})
	got, err := ParseLayout(FormatLayout(l), 5)
	if err != nil || !reflect.DeepEqual(got, l) {
		t.Fatalf("got %+v, %v; want %+v", got, err, l)
	}
	// A prefix: what a process of a smaller universe reads.
	got, err = ParseLayout(FormatLayout(l), 3)
	if err != nil || !reflect.DeepEqual(got.Host, []int{0, 1, -1}) {
		t.Fatalf("prefix: %+v, %v", got, err)
	}
}

// Malformed layouts are errors that say what is wrong; none panics.
func TestParseLayoutRejects(t *testing.T) {
	long := strings.Repeat("x", maxLayoutName+1)
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{`{`, 1, "unexpected end"},
		{`{"h":[{"n":"a"}],"r":[[1,0,0]],"p":1}`, 2, "2 needed"},
		{`{"h":[{"n":"a"}],"r":[],"p":3}`, 3, "no run"},
		{`{"h":[{"n":"a"}],"r":[[0,0,0]],"p":3}`, 3, "run 0"},
		{`{"h":[{"n":"a"}],"r":[[1,1,0]],"p":3}`, 3, "run 0"},
		{`{"h":[{"n":"a"}],"r":[[1,-2,0]],"p":3}`, 3, "run 0"},
		{`{"h":[{"n":"a"}],"r":[[1,0,-1]],"p":3}`, 3, "run 0"},
		{`{"h":[{"n":"a"}],"r":[[4,0,0]],"p":3}`, 3, "run 0"},
		{`{"h":[{"n":"a","c":-1}],"r":[[1,0,0]],"p":3}`, 3, "host 0"},
		{`{"h":[{"n":"` + long + `"}],"r":[[1,0,0]],"p":3}`, 3, "host 0"},
		{`{"h":[],"r":[[1,0,0]],"p":99999999}`, 3, "99999999 processes"},
		{`{"h":[{"n":"a"}],"r":[[1,0,0]],"p":3}`, -1, "-1 processes"},
	} {
		_, err := ParseLayout(tc.s, tc.n)
		if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s (n %d): %v, want ErrLayout saying %q", tc.s, tc.n, err, tc.want)
		}
	}
}

func FuzzParseLayout(f *testing.F) {
	f.Add(FormatLayout(layoutOf([]LayoutHost{{Name: "a", Cores: 2}, {Name: "b"}}, []int{0, 1, -1, 1}, []int{0, 0, 0, 2})), 4)
	f.Add(`{"h":[{"n":"a"}],"r":[[1,0,0]],"p":3}`, 3)
	f.Add(`{"h":[],"r":[[1,-1,0]],"p":1}`, 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 1 << 12 // the fuzzer's processes: enough to exercise the runs
		l, err := ParseLayout(s, n)
		if err != nil {
			if !errors.Is(err, ErrLayout) {
				t.Fatalf("error %v is not ErrLayout", err)
			}
			return
		}
		if len(l.Host) != n || len(l.Inc) != n {
			t.Fatalf("%d processes read, %d asked", len(l.Host), n)
		}
		for p := range n {
			if l.Host[p] < -1 || l.Host[p] >= len(l.Hosts) || l.Inc[p] < 0 {
				t.Fatalf("process %d: host %d of %d, incarnation %d", p, l.Host[p], len(l.Hosts), l.Inc[p])
			}
		}
		// What is read encodes and reads back the same.
		again, err := ParseLayout(FormatLayout(l), n)
		if err != nil || !reflect.DeepEqual(again.Host, l.Host) || !reflect.DeepEqual(again.Inc, l.Inc) {
			t.Fatalf("re-encoded layout reads %+v, %v", again, err)
		}
	})
}
