package mpi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// replaceRow is one Replace of one killed rank among n in-process ranks
// with one spare (RunSpares), counted by the in-memory fabric from the
// moment every survivor saw the failure to the moment every member of the
// repaired communicator (the spare included) has it.
type replaceRow struct {
	N          int     `json:"n"`
	Ms         float64 `json:"ms"`
	SpareGot   int64   `json:"spare_frames_received"` // Activate, Commit(s), and whatever else reached the spare
	SpareSent  int64   `json:"spare_frames_sent"`
	BusiestOut int64   `json:"frames_max_sent_per_rank"`
	Frames     int64   `json:"frames"`
}

// replaceGrowth runs one such repair of n ranks.
func replaceGrowth(n int) (replaceRow, error) {
	row := replaceRow{N: n}
	victim := n / 2
	ready, before, after := newGate(n), newGate(n-1), newGate(n) // every rank; the survivors; then with the spare
	var once sync.Once
	var fab interface {
		Frames(int) int64
		Received(int) int64
	}
	var t0 time.Time
	var sent0, got0 []int64
	snap := func() (sent, got []int64) {
		for p := 0; p <= n; p++ {
			sent = append(sent, fab.Frames(p))
			got = append(got, fab.Received(p))
		}
		return sent, got
	}
	done := func(nc *Comm) error {
		if nc.Size() != n {
			return fmt.Errorf("repaired size %d, want %d", nc.Size(), n)
		}
		after.wait(func() {
			row.Ms = float64(time.Since(t0)) / 1e6
			sent, got := snap()
			for p := 0; p < n; p++ {
				row.BusiestOut = max(row.BusiestOut, sent[p]-sent0[p])
			}
			for p := range sent {
				row.Frames += sent[p] - sent0[p]
			}
			row.SpareGot, row.SpareSent = got[n]-got0[n], sent[n]-sent0[n]
		})
		return nil
	}
	err := RunSpares(n, 1, DefaultConfig(), func(w *World) error {
		once.Do(func() { fab = w.run.Fab })
		if nc := w.Replacement(); nc != nil {
			return done(nc)
		}
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		if err := c.Barrier(); err != nil {
			return err
		}
		ready.wait(nil) // every rank left the Barrier: the kill fails nothing but the receive
		if c.Rank() == victim {
			w.Kill()
		}
		if _, err := Recv(c, []byte{0}, victim, 1); err == nil {
			return errors.New("a receive from the killed rank returned no error")
		}
		before.wait(func() {
			sent0, got0 = snap()
			t0 = time.Now()
		})
		nc, err := c.Replace()
		if err != nil {
			return err
		}
		return done(nc)
	})
	return row, err
}

// A spare hears O(1) frames in a repair, whatever n (commit from the
// leader: one Commit, not one from every survivor): at 64 and 512 ranks
// (FTMPI_REPLACE_GROWTH_SIZES for others, the rows printed as REPLACE
// lines) the spare receives at most 8 frames (an Activate, a Commit and a
// few notices), where a Commit from every survivor is n-1 of them.
func TestReplaceGrowthInProcess(t *testing.T) {
	ns := SizesFromEnv(t, "FTMPI_REPLACE_GROWTH_SIZES", []int{64, 512}, 4)
	env := os.Getenv("FTMPI_REPLACE_GROWTH_SIZES")
	for _, n := range ns {
		type result struct {
			row replaceRow
			err error
		}
		ch := make(chan result, 1)
		go func() { r, err := replaceGrowth(n); ch <- result{r, err} }()
		var row replaceRow
		var err error
		select {
		case r := <-ch:
			row, err = r.row, r.err
		case <-time.After(5 * time.Minute):
			t.Fatalf("n=%d: the repair did not end within 5 minutes", n)
		}
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if env != "" {
			b, _ := json.Marshal(row)
			fmt.Printf("REPLACE %s\n", b)
		}
		t.Logf("n=%d: the spare received %d frames, sent %d; the busiest rank sent %d; %d in all; %.1f ms", n, row.SpareGot, row.SpareSent, row.BusiestOut, row.Frames, row.Ms)
		if row.SpareGot > 8 {
			t.Errorf("n=%d: the spare received %d frames in the repair, want at most 8 (one Commit, not one a survivor)", n, row.SpareGot)
		}
	}
}
