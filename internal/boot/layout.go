package boot

// The launcher's layout of a PMI job: which node each process runs on, as
// hydra and Slurm publish it (PMI_process_mapping). A process that knows
// every peer's node without reading every peer's endpoint can choose its
// transports and the host-aware algorithms at start, and read a peer's
// endpoint only when it first talks to it (issue 24 item 2).

import (
	"fmt"
	"strconv"
	"strings"
)

// pmiKeyMapping is the job attribute of the layout.
const pmiKeyMapping = "PMI_process_mapping"

// maxNodes bounds a node id of a layout (a malformed one cannot make a
// process allocate without bound).
const maxNodes = 1 << 24

// ParseProcessMapping reads MPICH's PMI_process_mapping for n processes,
// "(vector,(start,nodes,per),...)": each block puts per consecutive
// processes on each of nodes nodes numbered from start; the blocks are
// taken in turn, again from the first once all are used, until the n
// processes are placed (hydra's round-robin placement of 4 processes on 2
// nodes is "(vector,(0,2,1))": 0 and 2 on node 0). It returns the node of
// every process, by process id. It has no MPI counterpart.
func ParseProcessMapping(s string, n int) ([]int, error) {
	bad := func(why string) ([]int, error) {
		return nil, fmt.Errorf("boot: %s %q: %s", pmiKeyMapping, clipMapping(s), why)
	}
	if n < 1 {
		return bad("no process to place")
	}
	body := strings.TrimSpace(s)
	if !strings.HasPrefix(body, "(") || !strings.HasSuffix(body, ")") {
		return bad("not in parentheses")
	}
	body = strings.TrimSpace(body[1 : len(body)-1])
	kind, rest, _ := strings.Cut(body, ",")
	if strings.TrimSpace(kind) != "vector" {
		return bad("not a vector mapping")
	}
	type block struct{ start, nodes, per int }
	var blocks []block
	for rest = strings.TrimSpace(rest); rest != ""; {
		if rest[0] != '(' {
			return bad("a block does not start with '('")
		}
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return bad("a block is not closed")
		}
		f := strings.Split(rest[1:end], ",")
		if len(f) != 3 {
			return bad("a block is not (start,nodes,per)")
		}
		var b [3]int
		for i, v := range f {
			x, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || x < 0 || x >= maxNodes || (i > 0 && x == 0) {
				return bad("a block's numbers must be start >= 0, nodes >= 1 and per >= 1")
			}
			b[i] = x
		}
		if b[0]+b[1] > maxNodes {
			return bad("node ids beyond the bound")
		}
		blocks = append(blocks, block{b[0], b[1], b[2]})
		rest = strings.TrimSpace(rest[end+1:])
		if rest != "" {
			if rest[0] != ',' {
				return bad("blocks not separated by ','")
			}
			rest = strings.TrimSpace(rest[1:])
			if rest == "" {
				return bad("a trailing ','")
			}
		}
	}
	if len(blocks) == 0 {
		return bad("no block")
	}
	nodes := make([]int, n)
	p := 0
	for p < n {
		for _, b := range blocks {
			for node := b.start; node < b.start+b.nodes && p < n; node++ {
				for range b.per {
					if p == n {
						break
					}
					nodes[p] = node
					p++
				}
			}
		}
	}
	return nodes, nil
}

func clipMapping(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
