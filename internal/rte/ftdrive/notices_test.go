package ftdrive

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/ft/member"
	"github.com/ftmpi/ftmpi/internal/ft/rbcast"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// A batch round-trips; every malformed one is refused with an error
// that says what is wrong.
func TestNoticesEncoding(t *testing.T) {
	ids := []member.ID{{Rank: 3}, {Rank: 7, Inc: 2}, {Rank: 1000, Inc: 1 << 30}}
	hops := []int{1, 300, 0}
	got, gh, err := decodeNotices(encodeNotices(ids, hops), 1001)
	if err != nil || fmt.Sprint(got, gh) != fmt.Sprint(ids, hops) {
		t.Fatalf("round trip: %v %v %v", got, gh, err)
	}
	good := encodeNotices(ids[:2], hops[:2])
	for _, c := range []struct {
		name string
		b    []byte
		n    int
		want string
	}{
		{"empty", nil, 8, "empty"},
		{"version", append([]byte{2}, good[1:]...), 8, "version 2"},
		{"no notice", []byte{1, 0}, 8, "no notice"},
		{"count over n", []byte{1, 9, 0, 0, 0}, 8, "count 9 > 8"},
		{"count over bytes", []byte{1, 3, 0, 0, 0}, 8, "3 notices in 3 bytes"},
		{"process", encodeNotices([]member.ID{{Rank: 8}}, []int{0}), 8, "process 8 > 7"},
		{"incarnation", encodeNotices([]member.ID{{Rank: 1, Inc: 1<<30 + 1}}, []int{0}), 8, "incarnation"},
		{"truncated", good[:len(good)-1], 8, "truncated hops"},
		{"trailing", append(append([]byte(nil), good...), 0), 8, "1 bytes after"},
		{"overflow", []byte{1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 8, "truncated process"},
	} {
		_, _, err := decodeNotices(c.b, c.n)
		if !errors.Is(err, errNotices) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// FuzzDecodeNotices decodes arbitrary payloads: nothing panics, and what
// is accepted names processes of the World, is re-encoded and decoded to
// the same notices.
func FuzzDecodeNotices(f *testing.F) {
	f.Add(encodeNotices([]member.ID{{Rank: 1}, {Rank: 2, Inc: 1}}, []int{1, 2}), 4)
	f.Add([]byte{1, 1, 0, 0, 0}, 1)
	f.Add([]byte{1, 200, 1}, 300)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 1 || n > 1<<20 {
			return
		}
		ids, hops, err := decodeNotices(b, n)
		if err != nil {
			if !errors.Is(err, errNotices) {
				t.Fatalf("error %v is not errNotices", err)
			}
			return
		}
		if len(ids) == 0 || len(ids) > n || len(ids) != len(hops) {
			t.Fatalf("%d notices, %d hops, n %d", len(ids), len(hops), n)
		}
		for i, id := range ids {
			if id.Rank < 0 || id.Rank >= n || id.Inc < 0 || id.Inc > 1<<30 || hops[i] < 0 || hops[i] > maxNoticeHops {
				t.Fatalf("accepted %v hops %d at n %d", id, hops[i], n)
			}
		}
		ids2, hops2, err := decodeNotices(encodeNotices(ids, hops), n)
		if err != nil || fmt.Sprint(ids2, hops2) != fmt.Sprint(ids, hops) {
			t.Fatalf("re-encoded: %v %v %v, want %v %v", ids2, hops2, err, ids, hops)
		}
	})
}

// A batch of two notices sent to one rank reaches every other rank
// (forwarded as batches over the overlay); a malformed batch is dropped
// whole and declares nothing.
func TestBatchOfNoticesReachesEveryRank(t *testing.T) {
	cfg := detector.DefaultConfig()
	cfg.Period, cfg.Timeout = time.Second, time.Hour // no detection in the test's time
	rs := job(t, 9, cfg)
	bad := append(encodeNotices([]member.ID{{Rank: 4}}, []int{1}), 0) // a byte after it
	rs[0].f.OnNotices(1, transport.Header{Tag: int32(ctl.FailNotices)}, bad)
	if rs[0].eng.IsLost(4) {
		t.Fatal("a malformed batch declared a failure")
	}
	if err := rs[0].eng.SendControl(1, transport.Header{Tag: int32(ctl.FailNotices)}, encodeNotices([]member.ID{{Rank: 4}, {Rank: 6}}, []int{1, 1})); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for i, r := range rs {
		if i == 0 || i == 4 || i == 6 {
			continue // 0 sent it (and learns it from its neighbours); 4 and 6 are named
		}
		for !r.eng.IsLost(4) || !r.eng.IsLost(6) {
			select {
			case <-r.eng.FailureSignal():
			case <-deadline:
				t.Fatalf("rank %d: lost 4 %v, 6 %v", i, r.eng.IsLost(4), r.eng.IsLost(6))
			}
		}
	}
}

// distinctTo tells a step whose messages go one a neighbour (sent as
// single notices) from one that sends a neighbour several (batched), in
// both of its ways (a scan up to 64 messages, a set above).
func TestDistinctTo(t *testing.T) {
	for _, k := range []int{0, 1, 26, 64, 65, 300} {
		msgs := make([]rbcast.Msg[member.ID], k)
		for i := range msgs {
			msgs[i] = rbcast.Msg[member.ID]{To: i, Item: member.ID{Rank: i}}
		}
		if !distinctTo(msgs) {
			t.Errorf("%d messages to %d processes: not distinct", k, k)
		}
		if k > 1 {
			msgs[k-1].To = 0
			if distinctTo(msgs) {
				t.Errorf("%d messages, two to process 0: distinct", k)
			}
		}
	}
}
