// Command values sends Go values - structs with slices and maps, maps of
// word counts - with SendValue, RecvValue, BcastValue and AllreduceValue
// (encoded by encoding/gob, the default codec; mpi4py's lower-case send,
// recv, bcast and allreduce), and survives a process failure with ULFM.
//
// Rank 0 broadcasts the job (a struct: a vocabulary, a seed, a number of
// documents). Document i of a fixed global sequence is a list of words
// drawn from the vocabulary by a counter-based generator seeded by i; rank
// r counts the words of the documents i ≡ r (mod size) into a
// map[string]int, reports its share to rank 0 (SendValue of a struct,
// RecvValue), and the maps are merged by AllreduceValue with a Go
// function. The result line is the same for any number of processes:
//
//	go run ./cmd/ftmpirun -n 4 ./examples/values
//
// With -kill R, rank R kills itself (SIGKILL) before it reports, in the
// first round: rank 0's RecvValue from it raises ErrProcFailed, the
// AllreduceValue fails, the survivors agree that the round failed
// (Agree), shrink the communicator and count again over the survivors;
// the result line is the same:
//
//	go run ./cmd/ftmpirun -n 4 --on-failure continue ./examples/values -kill 2
package main

import (
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/ftmpi/ftmpi/mpi"
)

// Job is what rank 0 broadcasts.
type Job struct {
	Name       string
	Vocabulary []string
	Docs       int
	WordsPer   int
	Seed       uint64
}

// Share is what a rank reports to rank 0 in a round.
type Share struct {
	Rank, Docs, Words int
	First             []string // the first words it counted
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// count counts the words of the documents i ≡ rank (mod size).
func count(job Job, rank, size int) (map[string]int, Share) {
	counts := map[string]int{}
	sh := Share{Rank: rank}
	for i := rank; i < job.Docs; i += size {
		sh.Docs++
		for k := 0; k < job.WordsPer; k++ {
			// A skewed draw: low indices are frequent.
			x := splitmix64(job.Seed ^ uint64(i)<<20 ^ uint64(k))
			j := int(x%uint64(len(job.Vocabulary))) * int(x>>32%1000) / 1000
			word := job.Vocabulary[j]
			counts[word]++
			sh.Words++
			if len(sh.First) < 3 {
				sh.First = append(sh.First, word)
			}
		}
	}
	return counts, sh
}

func merge(a, b map[string]int) map[string]int {
	out := maps.Clone(a)
	for k, v := range b {
		out[k] += v
	}
	return out
}

func main() {
	docs := flag.Int("docs", 2000, "number of documents")
	kill := flag.Int("kill", -1, "rank that kills itself (SIGKILL) in the first round")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "values:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	if err := run(w, c, *docs, *kill); err != nil {
		fmt.Fprintf(os.Stderr, "values: rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	w.Finalize()
}

func run(w *mpi.World, c *mpi.Comm, docs, kill int) error {
	// The job description, from rank 0. A failure during the broadcast
	// (a rank dying as soon as its own part returned) is repaired like a
	// failed round below.
	var job Job
	for {
		if c.Rank() == 0 {
			job = Job{
				Name:       "word count",
				Vocabulary: strings.Fields("the of and to in a is that for it as was with be by on not he this are or his from at which"),
				Docs:       docs,
				WordsPer:   50,
				Seed:       12345,
			}
		}
		j, err := mpi.BcastValue(c, job, 0)
		ok, err := agreed(c, err)
		if err != nil {
			return err
		}
		if ok {
			job = j
			break
		}
		if c, err = repair(c); err != nil {
			return err
		}
	}
	for round := 0; ; round++ {
		total, err := countRound(w, c, job, round == 0 && w.Rank() == kill)
		ok, aerr := agreed(c, err)
		if aerr != nil {
			return aerr
		}
		if ok {
			if c.Rank() == 0 {
				printResult(job, total)
			}
			return nil
		}
		// Some rank failed this round: leave it together and go on
		// without the failed processes.
		if c.Rank() == 0 {
			fmt.Printf("round %d failed (%v); shrinking\n", round, err)
		}
		if c, err = repair(c); err != nil {
			return err
		}
	}
}

// agreed makes a step's outcome uniform: whether it succeeded at every
// live process (errors are not uniform: a collective can fail at some
// ranks and succeed at others). The error is one that is not a process
// failure.
func agreed(c *mpi.Comm, stepErr error) (bool, error) {
	ok, err := c.Agree(stepErr == nil)
	if err != nil && !errors.Is(err, mpi.ErrProcFailed) {
		return false, err
	}
	return ok && err == nil, nil
}

// repair leaves a failed step together and goes on without the failed
// processes: revoke, then shrink.
func repair(c *mpi.Comm) (*mpi.Comm, error) {
	c.Revoke()
	return c.Shrink()
}

// countRound counts this rank's share, reports it to rank 0 and merges
// every rank's counts.
func countRound(w *mpi.World, c *mpi.Comm, job Job, die bool) (map[string]int, error) {
	counts, sh := count(job, c.Rank(), c.Size())
	if die {
		w.Kill() // SIGKILL: no goodbye
	}
	if c.Rank() != 0 {
		if err := mpi.SendValue(c, sh, 0, 1); err != nil {
			return nil, err
		}
	} else {
		for r := 1; r < c.Size(); r++ {
			got, _, err := mpi.RecvValue[Share](c, r, 1)
			if err != nil {
				fmt.Printf("report of rank %d: %v\n", r, err)
				return nil, err
			}
			if got.Rank != r {
				return nil, fmt.Errorf("rank %d reported as rank %d", r, got.Rank)
			}
		}
	}
	return mpi.AllreduceValue(c, counts, merge)
}

func printResult(job Job, total map[string]int) {
	words := slices.Collect(maps.Keys(total))
	slices.SortFunc(words, func(a, b string) int {
		if total[a] != total[b] {
			return total[b] - total[a]
		}
		return strings.Compare(a, b)
	})
	h := fnv.New64a()
	n := 0
	for _, wd := range words {
		fmt.Fprintf(h, "%s=%d;", wd, total[wd])
		n += total[wd]
	}
	var top []string
	for _, wd := range words[:min(5, len(words))] {
		top = append(top, fmt.Sprintf("%s:%d", wd, total[wd]))
	}
	fmt.Printf("result: %s docs=%d words=%d distinct=%d top=%s checksum=%016x\n",
		strings.ReplaceAll(job.Name, " ", "-"), job.Docs, n, len(words), strings.Join(top, ","), h.Sum64())
}
