package spare

// Who tells the spares a repair's outcome (commit from the leader).
//
// Every survivor of a repair attempt knows its outcome once the attempt's
// second agreement decided it, but only one needs to tell the spares: the
// survivors are ranked (the leader, the lowest surviving rank, first), and
// a survivor tells them once every survivor ranked before it is known
// failed. So the leader tells them at once; if it fails before its word
// reached them, the next survivor tells them when it learns of that
// failure, and so on: a spare hears 1 + (failed would-be tellers) copies
// of the outcome, not one from every survivor, and the hand-over is tied
// to failure detection, never to time. The spare's machine takes a copy
// after the first as a duplicate.
//
// A Drop (the leader failed before it told the others its pick) is told
// the same way, ranked among the survivors other than the failed leader.
// Before it sends a Drop naming leader L, a survivor sends every outcome
// it still owes of an attempt L led: a spare held by such an attempt then
// hears its outcome before the Drop on the same connection, which is what
// lets the machine read a Drop from a survivor of its holding attempt,
// naming that attempt's leader and tag, as "abandoned" (the tag, the
// context pair, may be that of an earlier attempt of L whose teller is
// another survivor still alive).

// Tell is one outcome to tell spares.
type Tell struct {
	Kind   Kind   // KindCommit, KindAbandon or KindDrop
	Key    uint64 // KindCommit, KindAbandon: the attempt
	Leader int    // the attempt's leader (KindDrop: the failed leader it names)
	Tag    uint64 // KindDrop: the attempt's tag
	To     []int  // the spares to tell
}

// span is the process ids lo, lo+1, ..., lo+n-1.
type span struct{ lo, n int }

// spans compresses procs into runs of consecutive ids, in order (a
// communicator's survivors are few runs: a survivor's duty keeps O(runs)
// words, not the n survivors ranked before it).
func spans(procs []int) []span {
	var out []span
	for _, p := range procs {
		if k := len(out) - 1; k >= 0 && out[k].lo+out[k].n == p {
			out[k].n++
			continue
		}
		out = append(out, span{p, 1})
	}
	return out
}

// duty is a Tell not sent yet: it is due once every process of before is
// known failed (before[:at] are).
type duty struct {
	Tell
	before []span
	at     int // spans passed
	off    int // processes passed in before[at]
}

// advance moves past the processes known failed and reports whether
// every one of before is.
func (d *duty) advance(lost func(int) bool) bool {
	for d.at < len(d.before) {
		s := d.before[d.at]
		for d.off < s.n && lost(s.lo+d.off) {
			d.off++
		}
		if d.off < s.n {
			return false
		}
		d.at, d.off = d.at+1, 0
	}
	return true
}

// Outbox is one survivor's outcomes still to tell (a pure structure: the
// caller sends what its methods return, in order). The zero value is
// empty. Its methods are not safe for concurrent use.
type Outbox struct {
	pending []*duty
}

// Before returns who tells t before the survivor self of an attempt whose
// survivors are survivors (the leader first): those ranked before self,
// the leader left out of a KindDrop (it failed). nil when self is not a
// survivor: it tells at once.
func Before(t Tell, survivors []int, self int) []int {
	for i, p := range survivors {
		if p != self {
			continue
		}
		if t.Kind == KindDrop && i > 0 {
			return survivors[1:i]
		}
		if t.Kind == KindDrop {
			return nil
		}
		return survivors[:i]
	}
	return nil
}

// Add takes t, to be told once every process of before is known failed
// (lost). It returns what to send now: t if it is due already, after,
// for a KindDrop, the outcomes owed of the named leader's attempts
// (Flush).
func (o *Outbox) Add(t Tell, before []int, lost func(int) bool) []Tell {
	d := &duty{Tell: t, before: spans(before)}
	if !d.advance(lost) {
		o.pending = append(o.pending, d)
		return nil
	}
	return o.emit([]*duty{d})
}

// Lost is called when a process is newly known failed: it returns the
// Tells now due (in the order they were added, each Drop preceded by the
// outcomes owed of its leader's attempts), and forgets the duties whose
// spares are all known failed.
func (o *Outbox) Lost(lost func(int) bool) []Tell {
	var ready []*duty
	kept := o.pending[:0]
	for _, d := range o.pending {
		dead := len(d.To) > 0
		for _, p := range d.To {
			dead = dead && lost(p)
		}
		switch {
		case dead:
		case d.advance(lost):
			ready = append(ready, d)
		default:
			kept = append(kept, d)
		}
	}
	clear(o.pending[len(kept):])
	o.pending = kept
	return o.emit(ready)
}

// emit returns the Tells of the due duties ready, in order, each Drop
// preceded by the outcomes owed of an attempt of its leader (later ones
// of ready and the pending ones).
func (o *Outbox) emit(ready []*duty) []Tell {
	var out []Tell
	for i, d := range ready {
		if d == nil {
			continue
		}
		if d.Kind == KindDrop {
			for j := i + 1; j < len(ready); j++ {
				if r := ready[j]; r != nil && r.Kind != KindDrop && r.Leader == d.Leader {
					out = append(out, r.Tell)
					ready[j] = nil
				}
			}
			out = append(out, o.Flush(d.Leader)...)
		}
		out = append(out, d.Tell)
	}
	return out
}

// Flush removes and returns every outcome (KindCommit, KindAbandon) still
// owed of an attempt led by leader: what a survivor sends before a Drop
// naming it.
func (o *Outbox) Flush(leader int) []Tell {
	var out []Tell
	kept := o.pending[:0]
	for _, d := range o.pending {
		if d.Kind != KindDrop && d.Leader == leader {
			out = append(out, d.Tell)
			continue
		}
		kept = append(kept, d)
	}
	clear(o.pending[len(kept):])
	o.pending = kept
	return out
}

// Len returns how many Tells are owed.
func (o *Outbox) Len() int { return len(o.pending) }
