package mpi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// valueParticle is a struct with slices, strings, a map and pointers: what a
// numeric message cannot carry.
type valueParticle struct {
	Name   string
	Pos    []float64
	Tags   map[string]int
	Next   *valueParticle
	Weight *float64
}

func mkValueParticle(r int) valueParticle {
	w := float64(r)/3 + 1 // not 0: gob does not send zero values, so a pointer to 0 arrives nil
	return valueParticle{
		Name:   strings.Repeat("p", r+1),
		Pos:    []float64{float64(r), -1.5, 1e300},
		Tags:   map[string]int{"rank": r, "x": 7},
		Next:   &valueParticle{Name: fmt.Sprint("child", r), Pos: []float64{}},
		Weight: &w,
	}
}

// sameParticle compares particles (gob decodes an empty slice as nil).
func sameParticle(a, b valueParticle) bool {
	norm := func(p *valueParticle) {
		for q := p; q != nil; q = q.Next {
			if len(q.Pos) == 0 {
				q.Pos = nil
			}
		}
	}
	norm(&a)
	norm(&b)
	return reflect.DeepEqual(a, b)
}

// Values of several kinds go from SendValue to RecvValue whole; the status
// names the source and tag and counts the encoded bytes.
func TestValueSendRecv(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			return firstErr(
				func() error { return mpi.SendValue(c, mkValueParticle(3), 1, 1) },
				func() error { return mpi.SendValue(c, map[string][]int{"a": {1, 2}, "b": nil}, 1, 2) },
				func() error { return mpi.SendValue(c, "héllo", 1, 3) },
				func() error { return mpi.SendValue(c, 42, 1, 4) },
				func() error { return mpi.SendValue(c, []valueParticle{mkValueParticle(0), mkValueParticle(1)}, 1, 5) },
			)
		}
		p, st, err := mpi.RecvValue[valueParticle](c, 0, 1)
		if err != nil || !sameParticle(p, mkValueParticle(3)) || st.Source != 0 || st.Tag != 1 || st.Count <= 0 {
			return fmt.Errorf("valueParticle: %+v %+v %v", p, st, err)
		}
		m, _, err := mpi.RecvValue[map[string][]int](c, 0, mpi.AnyTag)
		if err != nil || !slices.Equal(m["a"], []int{1, 2}) || len(m) != 1 && m["b"] != nil {
			return fmt.Errorf("map: %v %v", m, err)
		}
		s, st, err := mpi.RecvValue[string](c, mpi.AnySource, 3)
		if err != nil || s != "héllo" || st.Source != 0 {
			return fmt.Errorf("string: %q %+v %v", s, st, err)
		}
		i, _, err := mpi.RecvValue[int](c, 0, 4)
		if err != nil || i != 42 {
			return fmt.Errorf("int: %v %v", i, err)
		}
		ps, _, err := mpi.RecvValue[[]valueParticle](c, 0, 5)
		if err != nil || len(ps) != 2 || !sameParticle(ps[1], mkValueParticle(1)) {
			return fmt.Errorf("slice of structs: %v %v", ps, err)
		}
		// ProcNull: nothing to receive, nothing sent.
		if err := mpi.SendValue(c, 1, mpi.ProcNull, 0); err != nil {
			return err
		}
		if v, st, err := mpi.RecvValue[int](c, mpi.ProcNull, 0); err != nil || v != 0 || st.Source != mpi.ProcNull {
			return fmt.Errorf("from ProcNull: %v %+v %v", v, st, err)
		}
		return nil
	})
}

// Values far above the eager limit (64 KiB) go by rendezvous, received
// into a buffer of their size: point-to-point and broadcast.
func TestValueLarge(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 10<<20/16) // 10 MiB
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 0:
			if err := mpi.SendValue(c, big, 1, 0); err != nil {
				return err
			}
		case 1:
			s, st, err := mpi.RecvValue[string](c, mpi.AnySource, 0)
			if err != nil || s != big || st.Count < len(big) {
				return fmt.Errorf("10 MiB string: %d bytes, count %d, %v", len(s), st.Count, err)
			}
		}
		var v string
		if c.Rank() == 2 {
			v = big
		}
		got, err := mpi.BcastValue(c, v, 2)
		if err != nil || got != big {
			return fmt.Errorf("BcastValue of 10 MiB: %d bytes, %v", len(got), err)
		}
		all, err := mpi.AllgatherValue(c, big[:100<<10+c.Rank()])
		if err != nil || len(all) != 3 || all[1] != big[:100<<10+1] {
			return fmt.Errorf("AllgatherValue of 100 KiB each: %v", err)
		}
		return nil
	})
}

// Receives of unknown length from many goroutines with wildcards: every
// value is received exactly once, whole (no probe-then-receive race).
func TestValueWildcardGoroutines(t *testing.T) {
	const per = 40
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() != 0 {
			for k := range per {
				v := fmt.Sprintf("%d:%d:%s", c.Rank(), k, strings.Repeat("x", (k*4099)%(150<<10)))
				if err := mpi.SendValue(c, v, 0, k%3); err != nil {
					return err
				}
			}
			return nil
		}
		var mu sync.Mutex
		seen := map[string]bool{}
		var wg sync.WaitGroup
		errs := make(chan error, 2*per)
		for range 2 * per {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, st, err := mpi.RecvValue[string](c, mpi.AnySource, mpi.AnyTag)
				if err != nil {
					errs <- err
					return
				}
				var r, k int
				fmt.Sscanf(v, "%d:%d:", &r, &k)
				if r != st.Source || k%3 != st.Tag || len(v) != len(fmt.Sprintf("%d:%d:", r, k))+(k*4099)%(150<<10) {
					errs <- fmt.Errorf("value %.20q with status %+v", v, st)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				key := fmt.Sprint(r, ":", k)
				if seen[key] {
					errs <- fmt.Errorf("value %.20q received twice", v)
				}
				seen[key] = true
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		if len(seen) != 2*per {
			return fmt.Errorf("%d distinct values received, want %d", len(seen), 2*per)
		}
		return nil
	})
}

// IsendValue and IrecvValue: the typed request's Wait returns the value;
// Waitall and Testall complete the underlying requests, after which Wait
// returns the value at once; Test; Cancel; ProcNull.
func TestValueNonblocking(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		peer := 1 - c.Rank()
		r1, err := mpi.IrecvValue[[]string](c, peer, 1)
		if err != nil {
			return err
		}
		r2, err := mpi.IrecvValue[valueParticle](c, mpi.AnySource, 2)
		if err != nil {
			return err
		}
		mine := []string{"from", fmt.Sprint(c.Rank()), strings.Repeat("z", 70000)}
		s1, err := mpi.IsendValue(c, mine, peer, 1)
		if err != nil {
			return err
		}
		mine[0] = "changed after IsendValue" // encoded already
		s2, err := mpi.IsendValue(c, mkValueParticle(c.Rank()), peer, 2)
		if err != nil {
			return err
		}
		if _, err := mpi.Waitall([]*mpi.Request{s1, s2, r1.Request}); err != nil {
			return err
		}
		v1, err := r1.Wait()
		if err != nil || len(v1) != 3 || v1[0] != "from" || v1[1] != fmt.Sprint(peer) || len(v1[2]) != 70000 {
			return fmt.Errorf("IrecvValue after Waitall: %.40q %v", v1, err)
		}
		if st := r1.Status(); st.Source != peer || st.Tag != 1 || st.Count <= 70000 {
			return fmt.Errorf("status after Waitall: %+v", st)
		}
		var v2 valueParticle
		for done := false; !done; {
			if v2, done, err = r2.Test(); err != nil {
				return err
			}
		}
		if !sameParticle(v2, mkValueParticle(peer)) || r2.Status().Source != peer {
			return fmt.Errorf("IrecvValue by Test: %+v %+v", v2, r2.Status())
		}
		if v, err := r2.Wait(); err != nil || !sameParticle(v, v2) {
			return fmt.Errorf("Wait after Test: %v", err)
		}
		// Cancel: no value, no error.
		r3, err := mpi.IrecvValue[int](c, peer, 99)
		if err != nil {
			return err
		}
		if err := r3.Cancel(); err != nil {
			return err
		}
		if v, err := r3.Wait(); err != nil || v != 0 || !r3.Status().Cancelled {
			return fmt.Errorf("cancelled IrecvValue: %v %+v %v", v, r3.Status(), err)
		}
		r4, err := mpi.IrecvValue[int](c, mpi.ProcNull, 0)
		if err != nil {
			return err
		}
		if v, err := r4.Wait(); err != nil || v != 0 || r4.Status().Source != mpi.ProcNull {
			return fmt.Errorf("IrecvValue from ProcNull: %v %v", v, err)
		}
		// Waitany over typed receives: rank 0 sends the second one's
		// message first, the other once rank 1 has seen it complete.
		if c.Rank() == 0 {
			if err := mpi.SendValue(c, "six", 1, 6); err != nil {
				return err
			}
			if _, _, err := mpi.RecvValue[bool](c, 1, 7); err != nil {
				return err
			}
			if err := mpi.SendValue(c, "five", 1, 5); err != nil {
				return err
			}
		} else {
			ra, _ := mpi.IrecvValue[string](c, 0, 5)
			rb, _ := mpi.IrecvValue[string](c, 0, 6)
			i, _, err := mpi.Waitany([]*mpi.Request{ra.Request, rb.Request})
			if err != nil || i != 1 {
				return fmt.Errorf("Waitany: %d %v", i, err)
			}
			if v, err := rb.Wait(); v != "six" || err != nil {
				return fmt.Errorf("after Waitany: %q %v", v, err)
			}
			if err := mpi.SendValue(c, true, 0, 7); err != nil {
				return err
			}
			if v, err := ra.Wait(); v != "five" || err != nil {
				return fmt.Errorf("second receive: %q %v", v, err)
			}
		}
		var nilReq *mpi.RequestOf[int]
		if _, err := nilReq.Wait(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("Wait on a nil RequestOf: %v", err)
		}
		return nil
	})
}

// SendrecvValue around a ring, with different send and receive types.
func TestValueSendrecv(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		n, r := c.Size(), c.Rank()
		got, st, err := mpi.SendrecvValue[[]int, []int](c, []int{r, r * r}, (r+1)%n, 0, (r+n-1)%n, 0)
		if err != nil || !slices.Equal(got, []int{(r + n - 1) % n, ((r + n - 1) % n) * ((r + n - 1) % n)}) || st.Source != (r+n-1)%n {
			return fmt.Errorf("SendrecvValue: %v %+v %v", got, st, err)
		}
		// A decoding error is the call's.
		if _, _, err := mpi.SendrecvValue[string, int](c, "x", (r+1)%n, 1, (r+n-1)%n, 1); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("SendrecvValue into the wrong type: %v", err)
		}
		v, st, err := mpi.SendrecvValue[int, int](c, 5, mpi.ProcNull, 0, mpi.ProcNull, 0)
		if err != nil || v != 0 || st.Source != mpi.ProcNull {
			return fmt.Errorf("SendrecvValue with ProcNull: %v %+v %v", v, st, err)
		}
		return nil
	})
}

// Every value collective at several sizes and roots.
func TestValueCollectives(t *testing.T) {
	for _, p := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint("np", p), func(t *testing.T) {
			run(t, p, func(w *mpi.World, c *mpi.Comm) error {
				return valueCollectives(c)
			})
		})
	}
}

func valueCollectives(c *mpi.Comm) error {
	p, r := c.Size(), c.Rank()
	for root := range p {
		var v valueParticle
		if r == root {
			v = mkValueParticle(root)
		}
		got, err := mpi.BcastValue(c, v, root)
		if err != nil || !sameParticle(got, mkValueParticle(root)) {
			return fmt.Errorf("BcastValue root %d: %+v %v", root, got, err)
		}
		all, err := mpi.GatherValue(c, mkValueParticle(r), root)
		if err != nil {
			return fmt.Errorf("GatherValue root %d: %v", root, err)
		}
		if r != root && all != nil || r == root && len(all) != p {
			return fmt.Errorf("GatherValue root %d: %d values at rank %d", root, len(all), r)
		}
		for i := range all {
			if !sameParticle(all[i], mkValueParticle(i)) {
				return fmt.Errorf("GatherValue root %d: element %d is %+v", root, i, all[i])
			}
		}
		var vs []map[string]int
		if r == root {
			for i := range p {
				vs = append(vs, map[string]int{"to": i, "from": root})
			}
		}
		m, err := mpi.ScatterValue(c, vs, root)
		if err != nil || !maps.Equal(m, map[string]int{"to": r, "from": root}) {
			return fmt.Errorf("ScatterValue root %d: %v %v", root, m, err)
		}
		s, err := mpi.ReduceValue(c, fmt.Sprint(r), func(a, b string) string { return a + "," + b }, root)
		want := ""
		if r == root {
			want = strings.Join(rankStrings(p), ",")
		}
		if err != nil || s != want {
			return fmt.Errorf("ReduceValue root %d: %q %v (want %q)", root, s, err, want)
		}
	}
	all, err := mpi.AllgatherValue(c, strings.Repeat("a", r))
	if err != nil || len(all) != p {
		return fmt.Errorf("AllgatherValue: %v %v", all, err)
	}
	for i, s := range all {
		if s != strings.Repeat("a", i) {
			return fmt.Errorf("AllgatherValue: element %d is %q", i, s)
		}
	}
	// Not commutative: the result is the ranks in order at every rank.
	s, err := mpi.AllreduceValue(c, []int{r}, func(a, b []int) []int { return append(slices.Clone(a), b...) })
	if err != nil || !slices.Equal(s, valueSeq(p)) {
		return fmt.Errorf("AllreduceValue: %v %v", s, err)
	}
	// A word count: maps merged.
	counts, err := mpi.AllreduceValue(c, map[string]int{"all": 1, fmt.Sprint("r", r%2): r}, func(a, b map[string]int) map[string]int {
		out := maps.Clone(a)
		for k, v := range b {
			out[k] += v
		}
		return out
	})
	if err != nil || counts["all"] != p {
		return fmt.Errorf("AllreduceValue of maps: %v %v", counts, err)
	}
	send := make([][2]int, p)
	for j := range send {
		send[j] = [2]int{r, j}
	}
	got, err := mpi.AlltoallValue(c, send)
	if err != nil || len(got) != p {
		return fmt.Errorf("AlltoallValue: %v %v", got, err)
	}
	for i, g := range got {
		if g != [2]int{i, r} {
			return fmt.Errorf("AlltoallValue: element %d is %v", i, g)
		}
	}
	return nil
}

func rankStrings(p int) []string {
	var s []string
	for i := range p {
		s = append(s, fmt.Sprint(i))
	}
	return s
}

func valueSeq(p int) []int {
	s := make([]int, p)
	for i := range s {
		s[i] = i
	}
	return s
}

// jsonCodec is a Codec over encoding/json that counts its calls.
type jsonCodec struct{ marshals, unmarshals *atomic.Int64 }

func (jsonCodec) Name() string { return "json" }

func (j jsonCodec) Marshal(v any) ([]byte, error) {
	j.marshals.Add(1)
	return json.Marshal(v)
}

func (j jsonCodec) Unmarshal(data []byte, v any) error {
	j.unmarshals.Add(1)
	return json.Unmarshal(data, v)
}

// A codec set on a communicator is the one used, by point-to-point and
// collectives, and communicators created from it inherit it.
func TestValueCustomCodec(t *testing.T) {
	var marshals, unmarshals atomic.Int64
	codec := jsonCodec{&marshals, &unmarshals}
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if c.Codec() != mpi.GobCodec {
			return fmt.Errorf("default codec %v", c.Codec().Name())
		}
		if err := c.SetCodec(nil); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("SetCodec(nil): %v", err)
		}
		if err := c.SetCodec(codec); err != nil {
			return err
		}
		d, err := c.Dup()
		if err != nil {
			return err
		}
		defer d.Free()
		if d.Codec().Name() != "json" {
			return fmt.Errorf("Dup did not inherit the codec: %s", d.Codec().Name())
		}
		if c.Rank() == 0 {
			if err := mpi.SendValue(d, map[string]any{"k": []int{1, 2}}, 1, 0); err != nil {
				return err
			}
		}
		if c.Rank() == 1 {
			// What json produced is JSON: received raw, it is readable.
			v, _, err := mpi.RecvValue[json.RawMessage](d, 0, 0)
			if err != nil || string(v) != `{"k":[1,2]}` {
				return fmt.Errorf("received %s %v", v, err)
			}
		}
		all, err := mpi.AllgatherValue(d, c.Rank())
		if err != nil || !slices.Equal(all, []int{0, 1, 2}) {
			return fmt.Errorf("AllgatherValue with json: %v %v", all, err)
		}
		// A codec is local to each process: a gob message decoded by json
		// is an ErrType error naming the codec and the type.
		g, err := c.Dup()
		if err != nil {
			return err
		}
		defer g.Free()
		switch c.Rank() {
		case 0:
			if err := g.SetCodec(mpi.GobCodec); err != nil {
				return err
			}
			return mpi.SendValue(g, 12, 2, 0)
		case 2:
			_, _, err := mpi.RecvValue[int](g, 0, 0)
			if !errors.Is(err, mpi.ErrType) || !strings.Contains(err.Error(), "codec json") || !strings.Contains(err.Error(), "into a int") {
				return fmt.Errorf("gob message decoded with json: %v", err)
			}
		}
		return nil
	})
	if marshals.Load() == 0 || unmarshals.Load() == 0 {
		t.Fatalf("the json codec was not used: %d marshals, %d unmarshals", marshals.Load(), unmarshals.Load())
	}
}

// BcastValue around the size of its first block: one call or two.
func TestValueBcastInlineBoundary(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		for n := 200; n < 300; n += 3 {
			var v string
			if c.Rank() == 1 {
				v = strings.Repeat("q", n)
			}
			got, err := mpi.BcastValue(c, v, 1)
			if err != nil || got != strings.Repeat("q", n) {
				return fmt.Errorf("BcastValue of %d bytes: %d bytes, %v", n, len(got), err)
			}
		}
		return nil
	})
}
