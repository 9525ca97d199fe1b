// Command counter fills a distributed hash table through a shared ticket
// counter, with passive-target one-sided atomics only: no call is needed
// at the targets.
//
// Work item t of the round's list is handled by whoever takes ticket t:
// each rank first takes -static tickets statically (rank r's k-th is
// r + k*size: so every rank has work, and a kill at a rank's K-th ticket,
// K <= -static, happens whatever the speed of the others), then draws the
// rest from a counter in rank 0's window (MPI_Fetch_and_op under
// MPI_Win_lock_all, MPI_Win_flush to learn that the ticket is real). The drawer computes the
// item's value and inserts (key, value) into the hash table: the key's
// owner rank and home slot come from a hash, the insertion runs under an
// exclusive lock of the owner's table window (MPI_Win_lock), claims a slot
// by MPI_Compare_and_swap of the key (open addressing: the next slot when
// another key is there) and stores the value with a check word by MPI_Put.
// At the end every rank sums the values of its table; the result line is
// the same for any number of ranks:
//
//	go run ./cmd/ftmpirun -n 4 ./examples/counter
//	go run ./examples/counter
//
// Under failures (ULFM, seed 002): a rank killed while holding a table lock
// (-kill-holding R@K: world rank R SIGKILLs itself in its K-th insertion,
// after claiming the slot and storing the value, before MPI_Win_unlock), or while
// holding none (-kill R@K: after drawing its K-th ticket, before inserting
// it). The lock of a dead holder is released at the target (ftmpi's rule),
// so the other ranks waiting for it go on; a survivor notices the failure
// at a synchronisation call (MPI_Win_flush of the counter when the counter's
// rank died, MPI_Win_unlock of a dead owner) and stops drawing; the round
// ends with an agreement (MPIX_Comm_agree) that the survivors share. After
// a failed round they shrink the communicator, agree on what was committed
// (the entries of the survivors' tables whose check word is right: an
// insertion's claim and store are there or not, whoever died), and re-issue
// the missing items (the ones drawn and never inserted, and the ones whose
// owner died) in a new round over the survivors, with new windows. The
// result line is that of a failure-free run:
//
//	go run ./cmd/ftmpirun -n 4 --on-failure continue ./examples/counter -kill-holding 2@3
//	go run ./cmd/ftmpirun -n 4 --on-failure continue ./examples/counter -kill 0@3
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ftmpi/ftmpi/mpi"
)

type params struct {
	items, work, static int
	kill, killHolding   map[int]int // world rank -> its K-th ticket
	out                 io.Writer   // rank 0's lines
}

// parseKills parses "R@K,R@K".
func parseKills(flagName, s string) (map[int]int, error) {
	out := map[int]int{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		r, k, ok := strings.Cut(part, "@")
		rank, err1 := strconv.Atoi(r)
		n, err2 := strconv.Atoi(k)
		if !ok || err1 != nil || err2 != nil || rank < 0 || n < 1 {
			return nil, fmt.Errorf("-%s %q: want RANK@K (K >= 1), comma-separated", flagName, part)
		}
		out[rank] = n
	}
	return out, nil
}

func main() {
	p := params{out: os.Stdout}
	flag.IntVar(&p.items, "items", 200, "work items")
	flag.IntVar(&p.work, "work", 20000, "rounds of the hash computing an item's value")
	flag.IntVar(&p.static, "static", 4, "tickets per rank handed out statically (rank r's k-th is r + k*size) before the counter")
	kill := flag.String("kill", "", "RANK@K[,...]: world rank RANK kills itself (SIGKILL) after drawing its K-th ticket, holding no lock")
	killHolding := flag.String("kill-holding", "", "RANK@K[,...]: world rank RANK kills itself (SIGKILL) in its K-th insertion, holding the owner's lock")
	flag.Parse()
	var err error
	if p.kill, err = parseKills("kill", *kill); err == nil {
		p.killHolding, err = parseKills("kill-holding", *killHolding)
	}
	if err == nil && (p.items < 1 || p.work < 0 || p.static < 0) {
		err = fmt.Errorf("-items must be positive, -work and -static not negative")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "counter:", err)
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "counter:", err)
		os.Exit(1)
	}
	if _, err := run(w, p); err != nil {
		fmt.Fprintf(os.Stderr, "counter: rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	w.Finalize()
}
