// Package hang writes the hang report of a job: from what every rank says
// it is waiting in (its call table, internal/rte's, with what it knows of each
// communicator) and the failures known, one text that groups the ranks by
// the call they wait in, finds cycles of point-to-point waits, names
// mismatched collectives with both sides, and flags waits on a
// communicator that lost a process nobody revoked or acknowledged.
//
// It is pure: it must not gather the snapshots, read clocks, do I/O or know
// the mpi types (package mpi gathers, the launcher triggers).
package hang

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Special values of Call fields (as internal/rte's call table).
const (
	None = -2
	Any  = -1
)

// Call is one call a rank waits in, with what the rank knows of its
// communicator.
type Call struct {
	Op         string        `json:"op"`
	Of         string        `json:"of,omitempty"` // the request's operation under MPI_Wait...
	Comm       string        `json:"comm"`
	Ctx        uint32        `json:"ctx"`
	Peer       int           `json:"peer"`     // rank in Comm, Any, None
	PeerProc   int           `json:"peerProc"` // the peer's process, None
	Root       int           `json:"root"`     // None
	Tag        int           `json:"tag"`      // Any, None
	Count      int64         `json:"count"`    // None
	Type       string        `json:"type,omitempty"`
	Seq        int64         `json:"seq"`          // collective sequence number, None
	Waited     time.Duration `json:"waited"`       // how long it has waited (at least)
	Background bool          `json:"bg,omitempty"` // a nonblocking operation's own wait

	Size    int   `json:"size"`              // the communicator's size
	Members []int `json:"members,omitempty"` // the process of each rank (nil: rank r is process r)
	Lost    []int `json:"lost,omitempty"`    // failed processes of Comm this rank knows of
	Acked   []int `json:"acked,omitempty"`   // those of Lost it acknowledged
	Revoked bool  `json:"revoked,omitempty"` // Comm is revoked at this rank
	// Agree is this rank's agreements on Comm (nil: none made, or not
	// known).
	Agree *Agree `json:"agree,omitempty"`
}

// Agree is what a rank says of its agreements on a call's communicator.
// Agreements match by their order, so ranks that made different numbers
// of them before one waits are named ("agreements out of step").
type Agree struct {
	Begun   int64  `json:"begun"`          // agreements begun (instances 0..Begun-1)
	Waiting int64  `json:"waiting"`        // the instance it waits in, None
	Kind    string `json:"kind,omitempty"` // the waited instance's kind: "MPI_Comm_agree"
}

// Rank is what one rank answered (or that it did not).
type Rank struct {
	Rank     int           `json:"rank"` // its process (rank in the job's first world)
	Answered bool          `json:"answered"`
	Failed   bool          `json:"failed,omitempty"` // known failed: no answer expected
	Calls    []Call        `json:"calls,omitempty"`
	Idle     time.Duration `json:"idle"` // since it last made progress
	Overflow uint64        `json:"overflow,omitempty"`
}

// Blocked reports whether r waits in a call of its own (not only in
// nonblocking operations' background waits).
func (r *Rank) Blocked() bool { return r.main() != nil }

// main is the call r's program waits in: its oldest non-background call.
func (r *Rank) main() *Call {
	var m *Call
	for i := range r.Calls {
		c := &r.Calls[i]
		if !c.Background && (m == nil || c.Waited > m.Waited) {
			m = c
		}
	}
	return m
}

// Input is a report's material: every process of the job's first world.
type Input struct {
	Reason string // why the report is made: "no progress for 30s", "--timeout", "SIGQUIT"
	Ranks  []Rank // indexed by process
	Failed []int  // processes known failed (by the reporter or the launcher)
}

// Hung reports whether in shows a hang: every rank that is not failed
// answered and is blocked in MPI, and has not progressed for at least
// idle.
func Hung(in Input, idle time.Duration) bool {
	live := 0
	for i := range in.Ranks {
		r := &in.Ranks[i]
		if r.Failed || slices.Contains(in.Failed, r.Rank) {
			continue
		}
		live++
		if !r.Answered || !r.Blocked() || r.Idle < idle {
			return false
		}
	}
	return live > 0
}

// describe is a call as the report names it: "MPI_Recv from 0 tag 5 on
// MPI_COMM_WORLD", "MPI_Allreduce (8 x float64) on MPI_COMM_WORLD #17".
func describe(c *Call) string {
	var b strings.Builder
	b.WriteString(c.Op)
	if c.Of != "" {
		fmt.Fprintf(&b, " (of %s)", c.Of)
	}
	if c.Seq != None {
		var args []string
		if c.Root != None {
			args = append(args, fmt.Sprintf("root %d", c.Root))
		}
		switch {
		case c.Count != None && c.Type != "":
			args = append(args, fmt.Sprintf("%d x %s", c.Count, c.Type))
		case c.Type != "" && c.Op != "MPI_Barrier":
			args = append(args, c.Type)
		}
		if len(args) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(args, ", "))
		}
	} else {
		b.WriteString(peerText(c))
		if c.Tag != None {
			if c.Tag == Any {
				b.WriteString(" tag any")
			} else {
				fmt.Fprintf(&b, " tag %d", c.Tag)
			}
		}
	}
	fmt.Fprintf(&b, " on %s", commName(c))
	if c.Seq != None {
		fmt.Fprintf(&b, " #%d", c.Seq)
	}
	return b.String()
}

func peerText(c *Call) string {
	dir := " from "
	if op := strings.ToLower(c.Op + " " + c.Of); strings.Contains(op, "send") && !strings.Contains(op, "sendrecv") {
		dir = " to "
	}
	switch c.Peer {
	case None:
		return ""
	case Any:
		return dir + "any"
	}
	return dir + fmt.Sprint(c.Peer)
}

func commName(c *Call) string {
	if c.Comm == "" {
		return fmt.Sprintf("communicator %d", c.Ctx)
	}
	return c.Comm
}

// key groups ranks waiting in the same call.
func key(c *Call) string {
	if c.Seq != None {
		return fmt.Sprintf("%s|%d|%d|%s", describe(c), c.Ctx, c.Seq, c.Type)
	}
	return fmt.Sprintf("%s|%d", describe(c), c.Ctx)
}

// procOf is the process of rank r of c's communicator.
func procOf(c *Call, r int) int {
	if c.Members != nil {
		if r >= 0 && r < len(c.Members) {
			return c.Members[r]
		}
		return -1
	}
	return r
}

func members(c *Call) []int {
	if c.Members != nil {
		return c.Members
	}
	m := make([]int, c.Size)
	for i := range m {
		m[i] = i
	}
	return m
}

// ranksText is "rank 3" or "ranks 0,2,3".
func ranksText(rs []int) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", rs[0])
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r)
	}
	return "ranks " + strings.Join(s, ",")
}

func secs(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.0f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// Report writes the report of in.
func Report(in Input) string {
	var b strings.Builder
	n := len(in.Ranks)
	fmt.Fprintf(&b, "ftmpi: hang report (%s), %d ranks\n", in.Reason, n)
	failed := map[int]bool{}
	for _, p := range in.Failed {
		failed[p] = true
	}
	for _, r := range in.Ranks {
		if r.Failed {
			failed[r.Rank] = true
		}
	}
	byRank := map[int]*Rank{}
	for i := range in.Ranks {
		byRank[in.Ranks[i].Rank] = &in.Ranks[i]
	}

	// Groups: ranks by the call their program waits in.
	type group struct {
		call  *Call
		ranks []int
		min   time.Duration
	}
	groups := map[string]*group{}
	var order []string
	var notIn, noAnswer, dead []int
	for i := range in.Ranks {
		r := &in.Ranks[i]
		switch {
		case failed[r.Rank]:
			dead = append(dead, r.Rank)
			continue
		case !r.Answered:
			noAnswer = append(noAnswer, r.Rank)
			continue
		}
		m := r.main()
		if m == nil {
			notIn = append(notIn, r.Rank)
			continue
		}
		k := key(m)
		g := groups[k]
		if g == nil {
			g = &group{call: m, min: m.Waited}
			groups[k] = g
			order = append(order, k)
		}
		g.ranks = append(g.ranks, r.Rank)
		g.min = min(g.min, m.Waited)
	}
	sort.SliceStable(order, func(i, j int) bool { return len(groups[order[i]].ranks) > len(groups[order[j]].ranks) })
	for _, k := range order {
		g := groups[k]
		who := ranksText(g.ranks)
		if len(g.ranks) > 1 {
			who = fmt.Sprintf("%d of %d ranks (%s)", len(g.ranks), n, strings.TrimPrefix(who, "ranks "))
		}
		fmt.Fprintf(&b, "  %s in %s, waiting %s\n", who, describe(g.call), secs(g.min))
	}
	for _, p := range notIn {
		fmt.Fprintf(&b, "  rank %d is not in an MPI call (computing?) for %s\n", p, secs(byRank[p].Idle))
	}
	for _, p := range noAnswer {
		fmt.Fprintf(&b, "  rank %d: no answer (stopped, or not in MPI)\n", p)
	}
	for _, p := range dead {
		fmt.Fprintf(&b, "  rank %d failed\n", p)
	}

	var findings []string
	findings = append(findings, cycles(in, byRank, failed)...)
	findings = append(findings, collectives(in, byRank, failed)...)
	findings = append(findings, agreements(in, byRank, failed)...)
	findings = append(findings, lost(in, byRank, failed)...)
	if len(findings) > 0 {
		b.WriteString("  diagnosis:\n")
		for _, f := range findings {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}
	return b.String()
}

// cycles finds cycles of point-to-point waits: a rank waiting in a call
// with a named peer waits for that peer's process.
func cycles(in Input, byRank map[int]*Rank, failed map[int]bool) []string {
	next := map[int]*Call{}
	for i := range in.Ranks {
		r := &in.Ranks[i]
		if failed[r.Rank] || !r.Answered {
			continue
		}
		for j := range r.Calls {
			c := &r.Calls[j]
			if c.Seq == None && c.PeerProc >= 0 && !c.Background {
				next[r.Rank] = c
				break
			}
		}
	}
	var out []string
	done := map[int]bool{}
	for i := range in.Ranks {
		start := in.Ranks[i].Rank
		if done[start] {
			continue
		}
		// Follow the chain from start; a node seen twice on this walk
		// closes a cycle.
		pos := map[int]int{}
		var path []int
		p := start
		for {
			if _, ok := pos[p]; ok || done[p] {
				break
			}
			if next[p] == nil {
				break
			}
			pos[p] = len(path)
			path = append(path, p)
			p = next[p].PeerProc
		}
		if k, ok := pos[p]; ok && !done[p] {
			cyc := path[k:]
			var parts []string
			ops := map[string]bool{}
			for j, q := range cyc {
				to := cyc[(j+1)%len(cyc)]
				c := next[q]
				parts = append(parts, fmt.Sprintf("%d waits for %d", q, to))
				ops[c.Op+tagText(c)+" on "+commName(c)] = true
			}
			s := strings.Join(parts, ", ")
			if len(ops) == 1 {
				for o := range ops {
					all := "all"
					if len(cyc) == 2 {
						all = "both"
					}
					s += fmt.Sprintf(", %s in %s", all, o)
				}
			} else {
				var ds []string
				for _, q := range cyc {
					ds = append(ds, fmt.Sprintf("rank %d in %s", q, describe(next[q])))
				}
				s += " (" + strings.Join(ds, "; ") + ")"
			}
			out = append(out, "deadlock: "+s)
		}
		for _, q := range path {
			done[q] = true
		}
	}
	return out
}

func tagText(c *Call) string {
	switch c.Tag {
	case None:
		return ""
	case Any:
		return " tag any"
	}
	return fmt.Sprintf(" tag %d", c.Tag)
}

// collectives names, per communicator, collective calls that differ (same
// sequence number, another operation, root, count or type; or different
// sequence numbers), and the members a collective waits for that are not
// in it.
func collectives(in Input, byRank map[int]*Rank, failed map[int]bool) []string {
	byCtx, ctxs := mainCallsByCtx(in, failed, func(m *Call) bool { return m.Seq != None })
	var out []string
	for _, ctx := range ctxs {
		list := byCtx[ctx]
		// Distinct calls, in order of first appearance.
		var kinds []string
		ranks := map[string][]int{}
		calls := map[string]*Call{}
		for _, a := range list {
			k := fmt.Sprintf("%s #%d", describeShort(a.call), a.call.Seq)
			if ranks[k] == nil {
				kinds = append(kinds, k)
				calls[k] = a.call
			}
			ranks[k] = append(ranks[k], a.rank)
		}
		c0 := list[0].call
		if len(kinds) > 1 {
			var sides []string
			for _, k := range kinds {
				sides = append(sides, fmt.Sprintf("%s in %s", ranksText(ranks[k]), k))
			}
			what := "mismatched collectives"
			seqs := map[int64]bool{}
			for _, k := range kinds {
				seqs[calls[k].Seq] = true
			}
			if len(seqs) > 1 {
				what = "collectives out of step (a rank made more or fewer collective calls)"
			}
			out = append(out, fmt.Sprintf("%s on %s: %s", what, commName(c0), strings.Join(sides, "; ")))
		}
		// Members of the communicator that are not in any of its
		// collectives: the others wait for them.
		in := map[int]bool{}
		for _, a := range list {
			in[a.rank] = true
		}
		var missing []string
		for _, p := range members(c0) {
			if in[p] {
				continue
			}
			r := byRank[p]
			switch {
			case failed[p]:
				missing = append(missing, fmt.Sprintf("rank %d (failed)", p))
			case r == nil || !r.Answered:
				missing = append(missing, fmt.Sprintf("rank %d (no answer)", p))
			case r.main() == nil:
				missing = append(missing, fmt.Sprintf("rank %d (not in MPI)", p))
			default:
				missing = append(missing, fmt.Sprintf("rank %d (in %s)", p, describe(r.main())))
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("%s in %s waits for %s", ranksText(collect(list, func(a rankCall) int { return a.rank })),
				describe(c0), strings.Join(missing, ", ")))
		}
	}
	return out
}

// rankCall is a rank with the call its program waits in.
type rankCall struct {
	rank int
	call *Call
}

// mainCallsByCtx groups the answered, live ranks whose main call keep
// takes by the call's communicator (context id), and returns the context
// ids in increasing order.
func mainCallsByCtx(in Input, failed map[int]bool, keep func(*Call) bool) (map[uint32][]rankCall, []uint32) {
	byCtx := map[uint32][]rankCall{}
	var ctxs []uint32
	for i := range in.Ranks {
		r := &in.Ranks[i]
		if failed[r.Rank] || !r.Answered {
			continue
		}
		m := r.main()
		if m == nil || !keep(m) {
			continue
		}
		if byCtx[m.Ctx] == nil {
			ctxs = append(ctxs, m.Ctx)
		}
		byCtx[m.Ctx] = append(byCtx[m.Ctx], rankCall{r.Rank, m})
	}
	slices.Sort(ctxs)
	return byCtx, ctxs
}

// agreements names, per communicator, ranks that wait in an agreement
// instance the others are not in: agreements match by their order on a
// communicator, so a rank that made one more agreement call than the
// others waits for ever in it (ranks whose agreements of one instance
// differ in kind get an error instead, MPI_ERR_OTHER, "mismatched
// agreement"). The other members are named with how many agreements
// they made on it, when their own call is on it, and what they wait in.
func agreements(in Input, byRank map[int]*Rank, failed map[int]bool) []string {
	byCtx, ctxs := mainCallsByCtx(in, failed, func(m *Call) bool { return m.Agree != nil })
	var out []string
	for _, ctx := range ctxs {
		list := byCtx[ctx]
		var sides []string
		ranksOf := map[string][]int{}
		waiting := map[int64]bool{}
		here := map[int]bool{}
		for _, a := range list {
			here[a.rank] = true
			ag := a.call.Agree
			var k string
			if ag.Waiting != None {
				waiting[ag.Waiting] = true
				k = fmt.Sprintf("in agreement #%d (%s)", ag.Waiting, ag.Kind)
			} else {
				k = fmt.Sprintf("made %s on it, in %s", agreementsText(ag.Begun), describe(a.call))
			}
			if ranksOf[k] == nil {
				sides = append(sides, k)
			}
			ranksOf[k] = append(ranksOf[k], a.rank)
		}
		if len(waiting) == 0 || len(sides) == 1 {
			continue // no agreement waited in, or every rank in the same one
		}
		var parts []string
		for _, k := range sides {
			parts = append(parts, ranksText(ranksOf[k])+" "+k)
		}
		// Members of the communicator whose call is elsewhere.
		for _, p := range members(list[0].call) {
			if here[p] {
				continue
			}
			r := byRank[p]
			switch {
			case failed[p]:
			case r == nil || !r.Answered:
				parts = append(parts, fmt.Sprintf("rank %d (no answer)", p))
			case r.main() == nil:
				parts = append(parts, fmt.Sprintf("rank %d not in MPI", p))
			default:
				parts = append(parts, fmt.Sprintf("rank %d in %s", p, describe(r.main())))
			}
		}
		out = append(out, fmt.Sprintf("agreements out of step on %s (agreements match by their order: a rank made more agreement calls than the others): %s",
			commName(list[0].call), strings.Join(parts, "; ")))
	}
	return out
}

// agreementsText is "no agreements", "agreement #0", "agreements #0-#4".
func agreementsText(n int64) string {
	switch n {
	case 0:
		return "no agreements"
	case 1:
		return "agreement #0"
	}
	return fmt.Sprintf("agreements #0-#%d", n-1)
}

func collect[T any](xs []T, f func(T) int) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// describeShort is a collective call without its communicator.
func describeShort(c *Call) string {
	d := describe(c)
	if i := strings.LastIndex(d, " on "); i >= 0 {
		return d[:i]
	}
	return d
}

// lost flags waits on a communicator that contains a failed process,
// grouped by communicator: who repairs (shrink, agree), who waits on it
// otherwise, whether it was revoked and the failure acknowledged.
func lost(in Input, byRank map[int]*Rank, failed map[int]bool) []string {
	type info struct {
		call              *Call
		gone              map[int]bool
		repair, wait      []string
		waitRanks         []int
		revoked, notAcked bool
	}
	byCtx := map[uint32]*info{}
	var ctxs []uint32
	for i := range in.Ranks {
		r := &in.Ranks[i]
		if failed[r.Rank] || !r.Answered {
			continue
		}
		for j := range r.Calls {
			c := &r.Calls[j]
			gone := map[int]bool{}
			for _, p := range c.Lost {
				gone[p] = true
			}
			for _, p := range members(c) {
				if failed[p] {
					gone[p] = true
				}
			}
			if len(gone) == 0 {
				continue
			}
			x := byCtx[c.Ctx]
			if x == nil {
				x = &info{call: c, gone: map[int]bool{}}
				byCtx[c.Ctx] = x
				ctxs = append(ctxs, c.Ctx)
			}
			for p := range gone {
				x.gone[p] = true
				if !slices.Contains(c.Acked, p) {
					x.notAcked = true
				}
			}
			x.revoked = x.revoked || c.Revoked
			if repairOp(c.Op) {
				x.repair = append(x.repair, fmt.Sprintf("rank %d is in %s", r.Rank, c.Op))
			} else {
				x.wait = append(x.wait, c.Op)
				x.waitRanks = append(x.waitRanks, r.Rank)
			}
		}
	}
	slices.Sort(ctxs)
	var out []string
	for _, ctx := range ctxs {
		x := byCtx[ctx]
		var gone []int
		for p := range x.gone {
			gone = append(gone, p)
		}
		slices.Sort(gone)
		name := commName(x.call)
		s := fmt.Sprintf("%s lost %s", name, ranksText(gone))
		var state []string
		if !x.revoked {
			state = append(state, "nobody revoked it")
		}
		if x.notAcked {
			state = append(state, "the failure is not acknowledged")
		}
		if len(state) > 0 {
			s += " (" + strings.Join(state, "; ") + ")"
		}
		var parts []string
		parts = append(parts, x.repair...)
		if len(x.waitRanks) > 0 {
			ops := slices.Compact(slices.Sorted(slices.Values(x.wait)))
			parts = append(parts, fmt.Sprintf("%s wait in %s on %s", ranksText(x.waitRanks), strings.Join(ops, "/"), name))
		}
		s += ": " + strings.Join(parts, ", ")
		switch {
		case len(x.repair) > 0 && len(x.waitRanks) > 0 && !x.revoked:
			s += fmt.Sprintf(": revoke %s (MPI_Comm_revoke) so the waiting ranks leave their calls and join the repair", name)
		case len(x.repair) == 0 && !x.revoked:
			s += fmt.Sprintf(": the waits never end; revoke %s, or acknowledge the failure and repair", name)
		}
		out = append(out, s)
	}
	return out
}

// repairOp reports whether op is a fault-tolerance call that survivors
// make together to repair a communicator.
func repairOp(op string) bool {
	switch op {
	case "MPI_Comm_shrink", "MPI_Comm_agree", "MPIX_Comm_shrink", "MPIX_Comm_agree", "MPI_Comm_ishrink", "MPI_Comm_iagree":
		return true
	}
	return false
}
