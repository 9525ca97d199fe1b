package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// runULFM: ULFM replacement (seed 002's recipe, as in
// internal/e2e/testdata/spawncheck "replace") under ftmpirun --on-failure
// continue. A spawned replacement runs the same program with the same
// arguments and finds itself a child (World.Parent).
func runULFM(w *mpi.World, p *params, inited time.Time) (string, error) {
	if pc := w.Parent(); pc != nil {
		return ulfmChild(w, pc, p, inited)
	}
	c := w.CommWorld()
	if err := c.SetErrhandler(mpi.ErrorsReturn); err != nil {
		return "", err
	}
	st, err := openStore(p, c.Rank())
	if err != nil {
		return "", err
	}
	if err := fresh(p, st, c.Rank()); err != nil {
		return "", err
	}
	s := initial(p, c.Rank())
	h := hooks{mayKill: true, kill: w.Kill}
	for {
		err := iterate(p, c, st, &s, h)
		if err == nil {
			break
		}
		if !isFailure(err) {
			return "", err
		}
		var t timer
		t.mark(phDetected)
		nc, err := replace(c, os.Args[1:], &t)
		if err != nil {
			return "", err
		}
		c = nc
		t.mark(phRebuilt)
		if s, err = restore(p, st, c); err != nil {
			return "", err
		}
		t.mark(phRestored)
		h = hooks{resumed: resumedHook(p, "ulfm", c, &t, s.iter, nil)}
	}
	line, err := result(p, c, &s)
	if err != nil || c.Rank() != 0 {
		return "", err
	}
	return line, nil
}

// replace repairs c after a failure: revoke, shrink, spawn one process per
// failed one, merge, tell the children which ranks they replace, and split
// back to c's rank order.
func replace(c *mpi.Comm, args []string, t *timer) (*mpi.Comm, error) {
	if err := c.Revoke(); err != nil {
		return nil, fmt.Errorf("revoke: %w", err)
	}
	shrunk, err := c.Shrink()
	if err != nil {
		return nil, fmt.Errorf("shrink: %w", err)
	}
	failed, err := c.GetFailed()
	if err != nil {
		return nil, fmt.Errorf("failed group: %w", err)
	}
	idx := make([]int, failed.Size())
	for i := range idx {
		idx[i] = i
	}
	lost, err := mpi.TranslateRanks(failed, idx, c.Group())
	if err != nil {
		return nil, fmt.Errorf("translate ranks: %w", err)
	}
	t.mark(phShrunk)
	ic, err := shrunk.Spawn("", args, len(lost), 0)
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	t.mark(phSpawned)
	merged, err := ic.Merge(false)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	list := make([]int64, merged.Size())
	for i := range list {
		list[i] = -1
	}
	for i, r := range lost {
		list[i] = int64(r)
	}
	if err := mpi.Bcast(merged, list, 0); err != nil {
		return nil, fmt.Errorf("bcast of the lost ranks: %w", err)
	}
	nc, err := merged.Split(0, c.Rank())
	if err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	if err := nc.SetErrhandler(mpi.ErrorsReturn); err != nil {
		return nil, err
	}
	return nc, nil
}

// ulfmChild is a replacement: it learns which rank it replaces, joins the
// rebuilt communicator, restores that rank's checkpoint and computes.
func ulfmChild(w *mpi.World, pc *mpi.Comm, p *params, inited time.Time) (string, error) {
	var t timer
	t.markAt(phStarted, procStart)
	t.markAt(phInited, inited)
	merged, err := pc.Merge(true)
	if err != nil {
		return "", fmt.Errorf("child: merge: %w", err)
	}
	list := make([]int64, merged.Size())
	if err := mpi.Bcast(merged, list, 0); err != nil {
		return "", fmt.Errorf("child: bcast of the lost ranks: %w", err)
	}
	me := w.Rank() // among the children
	if me >= len(list) || list[me] < 0 {
		return "", fmt.Errorf("child %d: no lost rank to replace in %v", me, list)
	}
	c, err := merged.Split(0, int(list[me]))
	if err != nil {
		return "", fmt.Errorf("child: split: %w", err)
	}
	if err := c.SetErrhandler(mpi.ErrorsReturn); err != nil {
		return "", err
	}
	t.mark(phRebuilt)
	st, err := openStore(p, c.Rank())
	if err != nil {
		return "", err
	}
	s, err := restore(p, st, c)
	if err != nil {
		return "", err
	}
	t.mark(phRestored)
	h := hooks{resumed: resumedHook(p, "ulfm", c, &t, s.iter, nil)}
	if err := iterate(p, c, st, &s, h); err != nil {
		return "", err
	}
	line, err := result(p, c, &s)
	if err != nil || c.Rank() != 0 {
		return "", err
	}
	return line, nil // a replacement of rank 0
}
