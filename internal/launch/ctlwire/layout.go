package ctlwire

// The layout of a lazy start (issue 24 item 2): what a rank needs of every
// process at start-up under ftmpirun when it reads a peer's endpoint only
// when it first dials it (OpEndpoints): each process's host (its name and
// cores, as the process published them) and incarnation. The launcher
// sends it instead of every endpoint, in a form whose size grows with the
// hosts and the placement's pattern, not with the processes: a run is
// (count, host, incarnation), and the runs are taken again from the first
// until every process is placed, as MPICH's PMI_process_mapping's blocks
// are (block placement over h hosts is h runs, round-robin h runs too).

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Lazy start's vocabulary.
const (
	// FenceLayout is the Kind of a fence or rejoin request whose rank
	// reads peers' endpoints on demand: the reply's KV holds only
	// LayoutKey (and the request's Host, Cores and Incarnation are the
	// rank's facts for it).
	FenceLayout = "layout"
	// LayoutKey is the key of the layout (FormatLayout) in such a reply.
	LayoutKey = "layout"
	// MaxLookup bounds the process ids of one OpEndpoints request.
	MaxLookup = 4096
	// maxLayoutProcs bounds the processes of a layout (the launcher's
	// process ids are below 1<<24).
	maxLayoutProcs = 1 << 24
	maxLayoutName  = 4096
)

// LayoutHost is one host of a Layout: its name (boot.Info.Host) and its
// cores as the launcher counts them (0: not told).
type LayoutHost struct {
	Name  string `json:"n"`
	Cores int    `json:"c,omitempty"`
}

// Layout is every process's host and incarnation, by process id.
type Layout struct {
	Hosts []LayoutHost
	Host  []int // index in Hosts; -1: the process published nothing (gone before the fence)
	Inc   []int
}

// layoutWire is a Layout on the wire: P processes, placed by the runs R
// ([count, host, incarnation]) taken in turn until all P are.
type layoutWire struct {
	H []LayoutHost `json:"h"`
	R [][3]int     `json:"r"`
	P int          `json:"p"`
}

// FormatLayout encodes l (Host and Inc of equal length; hosts indexes in
// range or -1). The runs are those of the shortest period of the
// (host, incarnation) sequence.
func FormatLayout(l Layout) string {
	n := len(l.Host)
	same := func(i, j int) bool { return l.Host[i] == l.Host[j] && l.Inc[i] == l.Inc[j] }
	// The shortest period k (seq[i] == seq[i-k] for every i >= k), from
	// the prefix function.
	pi := make([]int, n)
	for i := 1; i < n; i++ {
		k := pi[i-1]
		for k > 0 && !same(i, k) {
			k = pi[k-1]
		}
		if same(i, k) {
			k++
		}
		pi[i] = k
	}
	period := n
	if n > 0 {
		period = n - pi[n-1]
	}
	w := layoutWire{H: l.Hosts, P: n, R: [][3]int{}}
	if w.H == nil {
		w.H = []LayoutHost{}
	}
	for i := 0; i < period; i++ {
		if k := len(w.R) - 1; k >= 0 && w.R[k][1] == l.Host[i] && w.R[k][2] == l.Inc[i] {
			w.R[k][0]++
			continue
		}
		w.R = append(w.R, [3]int{1, l.Host[i], l.Inc[i]})
	}
	b, err := json.Marshal(w)
	if err != nil {
		panic(err) // plain data: cannot happen
	}
	return string(b)
}

// ErrLayout is the error of ParseLayout for a value that is not a layout.
var ErrLayout = errors.New("ctlwire: malformed layout")

// ParseLayout decodes a FormatLayout value and returns its first n
// processes. Every defect (malformed JSON, fewer than n processes, a
// count, host or incarnation out of range, a name too long) is an error
// wrapping ErrLayout; nothing allocates beyond the bounds or panics.
func ParseLayout(s string, n int) (Layout, error) {
	bad := func(format string, args ...any) (Layout, error) {
		return Layout{}, fmt.Errorf("%w: %s", ErrLayout, fmt.Sprintf(format, args...))
	}
	var w layoutWire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return bad("%v", err)
	}
	switch {
	case n < 0 || n > maxLayoutProcs:
		return bad("%d processes asked for", n)
	case w.P < n || w.P > maxLayoutProcs:
		return bad("%d processes, %d needed", w.P, n)
	case len(w.R) == 0 && n > 0:
		return bad("no run")
	}
	for i, h := range w.H {
		if len(h.Name) > maxLayoutName || h.Cores < 0 {
			return bad("host %d: a name of %d bytes or %d cores", i, len(h.Name), h.Cores)
		}
	}
	for i, r := range w.R {
		if r[0] < 1 || r[0] > w.P || r[1] < -1 || r[1] >= len(w.H) || r[2] < 0 {
			return bad("run %d %v: count 1..%d, host -1..%d, incarnation >= 0", i, r, w.P, len(w.H)-1)
		}
	}
	l := Layout{Hosts: w.H, Host: make([]int, n), Inc: make([]int, n)}
	for p := 0; p < n; {
		for _, r := range w.R {
			for range r[0] {
				if p == n {
					break
				}
				l.Host[p], l.Inc[p] = r[1], r[2]
				p++
			}
		}
	}
	return l, nil
}
