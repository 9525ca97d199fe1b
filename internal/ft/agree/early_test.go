package agree

import "testing"

// newEarlyCluster is newCluster with Config.EarlyReturn (binomial trees).
func newEarlyCluster(t *testing.T, n int) *cluster {
	c := &cluster{t: t, dead: make([]bool, n)}
	for i := 0; i < n; i++ {
		c.nodes = append(c.nodes, New(Config{Self: i, N: n, Instance: 7, EarlyReturn: true}))
	}
	return c
}

// Failure-free, every process decides on the root's Propose: no Ack and no
// Decide is ever sent.
func TestEarlyReturnDecidesOnPropose(t *testing.T) {
	c := newEarlyCluster(t, 5)
	for p := 4; p >= 0; p-- {
		c.start(p, flagValue(uint64(7&^(1<<uint(p%3)))))
	}
	for _, m := range c.pool {
		if m.Kind != KindReport {
			t.Fatalf("start sent %v", m)
		}
	}
	c.deliver(func(m Msg) bool { return m.Kind == KindReport })
	if !c.nodes[0].Decided() {
		t.Fatal("the root did not decide when it had every report")
	}
	for {
		var next []Msg
		for _, m := range c.pool {
			if m.Kind != KindPropose {
				t.Fatalf("sent %v", m)
			}
			next = append(next, c.nodes[m.To].Step(m)...)
			if !c.nodes[m.To].Decided() {
				t.Fatalf("process %d did not decide on %v", m.To, m)
			}
		}
		c.pool = next
		if len(next) == 0 {
			break
		}
	}
	c.check(0, 0, 1, 2, 3, 4)
}

// The root decides and proposes, reaching only process 2 (which decides),
// then crashes. The new root 1 has accepted nothing; it must learn the
// proposal from 2 (still an acceptor after deciding) and decide the same,
// although the survivors' own contributions combine to another value. The
// root's Propose to 3, forwarded by 2 before the takeover, arrives stale.
func TestEarlyReturnSurvivorDecidedBeforeRootCrash(t *testing.T) {
	c := newEarlyCluster(t, 4)
	c.start(0, flagValue(0))
	for p := 1; p < 4; p++ {
		c.start(p, flagValue(1))
	}
	c.deliver(func(m Msg) bool { return m.Kind == KindReport })
	c.drop(func(m Msg) bool { return m.From == 0 && m.To != 2 })
	c.deliver(func(m Msg) bool { return m.To == 2 })
	if !c.nodes[2].Decided() {
		t.Fatal("process 2 did not decide on the root's Propose")
	}
	var late []Msg
	for _, m := range c.pool {
		if m.From == 2 && m.To == 3 {
			late = append(late, m)
		}
	}
	c.drop(func(m Msg) bool { return m.From == 2 && m.To == 3 })
	c.crash(0)
	c.notifyAll(0)
	c.deliver(func(m Msg) bool { return m.Kind == KindPrepare || m.Kind == KindReport })
	c.pool = append(c.pool, late...)
	c.deliver(all)
	c.check(0, 0, 1, 2, 3)
}

// What EarlyReturn gives up: the root decides and crashes before its
// Propose leaves; the survivors decide without its contribution, a value
// the root did not decide. They still agree among themselves.
func TestEarlyReturnIsNotUniform(t *testing.T) {
	c := newEarlyCluster(t, 4)
	c.start(0, flagValue(0))
	for p := 1; p < 4; p++ {
		c.start(p, flagValue(1))
	}
	c.deliver(func(m Msg) bool { return m.Kind == KindReport })
	v, ctb, ok := c.nodes[0].Decision()
	if !ok || v.Flags != 0 || !ctb.Equal(SetOf(0, 1, 2, 3)) {
		t.Fatalf("root decided %v %v %v", v, ctb, ok)
	}
	c.crash(0)
	c.drop(func(m Msg) bool { return m.From == 0 })
	c.notifyAll(0)
	c.deliver(all)
	c.check(1, 1, 2, 3)
}
