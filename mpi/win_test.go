package mpi_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Put, Accumulate and Get with fences at np 1..8, checked against a
// sequential reference of the same epochs.
func TestWinFencePutAccGet(t *testing.T) {
	for np := 1; np <= 8; np++ {
		t.Run(fmt.Sprint("np", np), func(t *testing.T) {
			run(t, np, func(w *mpi.World, c *mpi.Comm) error {
				return winFenceRound(c)
			})
		})
	}
}

func winFenceRound(c *mpi.Comm) error {
	p, me := c.Size(), c.Rank()
	n := p + 2 // [0,p): one slot per origin; p: sum; p+1: max
	base := make([]int64, n)
	win, err := mpi.WinCreate(c, base)
	if err != nil {
		return err
	}
	if err := win.Fence(); err != nil {
		return err
	}
	// Epoch 1: every rank puts into the next rank's slot for it, and
	// accumulates into every rank's sum and max slots.
	next := (me + 1) % p
	if err := mpi.Put(win, []int64{int64(100*me + 7)}, next, me); err != nil {
		return err
	}
	for tgt := 0; tgt < p; tgt++ {
		if err := mpi.Accumulate(win, []int64{int64(me + 1)}, tgt, p, mpi.Sum); err != nil {
			return err
		}
		if err := mpi.Accumulate(win, []int64{int64(me*3 + 1)}, tgt, p+1, mpi.Max); err != nil {
			return err
		}
	}
	if err := win.Fence(); err != nil {
		return err
	}
	// The sequential reference of rank r's window after epoch 1.
	ref := func(r int) []int64 {
		v := make([]int64, n)
		prev := (r - 1 + p) % p
		v[prev] = int64(100*prev + 7)
		for o := 0; o < p; o++ {
			v[p] += int64(o + 1)
			v[p+1] = max(v[p+1], int64(o*3+1))
		}
		return v
	}
	if !slices.Equal(base, ref(me)) {
		return fmt.Errorf("rank %d window after epoch 1 = %v, want %v", me, base, ref(me))
	}
	// Epoch 2: read the previous rank's whole window.
	prev := (me - 1 + p) % p
	got := make([]int64, n)
	if err := mpi.Get(win, got, prev, 0); err != nil {
		return err
	}
	if err := win.Fence(); err != nil {
		return err
	}
	if !slices.Equal(got, ref(prev)) {
		return fmt.Errorf("rank %d got %v from %d, want %v", me, got, prev, ref(prev))
	}
	return win.Free()
}

// Passive target: every rank increments a counter at rank 0 under an
// exclusive lock (read, then write: a lost update would show), then with
// FetchAndOp under a shared lock; no update is lost and the fetched values
// are distinct.
func TestWinLockCounter(t *testing.T) {
	const k = 15
	for _, np := range []int{1, 3, 5} {
		t.Run(fmt.Sprint("np", np), func(t *testing.T) {
			fetched := make([][]int64, np)
			run(t, np, func(w *mpi.World, c *mpi.Comm) error {
				win, base, err := mpi.WinAllocate[int64](c, 2)
				if err != nil {
					return err
				}
				for i := 0; i < k; i++ {
					if err := win.Lock(mpi.LockExclusive, 0); err != nil {
						return err
					}
					v := []int64{0}
					if err := mpi.Get(win, v, 0, 0); err != nil {
						return err
					}
					v[0]++
					if err := mpi.Put(win, v, 0, 0); err != nil {
						return err
					}
					if err := win.Unlock(0); err != nil {
						return err
					}
				}
				for i := 0; i < k; i++ {
					if err := win.Lock(mpi.LockShared, 0); err != nil {
						return err
					}
					old, err := mpi.FetchAndOp(win, int64(1), 0, 1, mpi.Sum)
					if err != nil {
						return err
					}
					if err := win.Unlock(0); err != nil {
						return err
					}
					fetched[c.Rank()] = append(fetched[c.Rank()], old)
				}
				if err := win.Fence(); err != nil {
					return err
				}
				if c.Rank() == 0 && (base[0] != int64(np*k) || base[1] != int64(np*k)) {
					return fmt.Errorf("counters %v, want %d each", base, np*k)
				}
				return win.Free()
			})
			all := slices.Concat(fetched...)
			slices.Sort(all)
			for i, v := range all {
				if v != int64(i) {
					t.Fatalf("FetchAndOp returned %v, want 0..%d once each", all, np*k-1)
				}
			}
		})
	}
}

// Shared locks from every rank read rank 0's window at once; LockAll and
// Flush; CompareAndSwap and GetAccumulate.
func TestWinSharedLockAtomics(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		base := []float64{1.5, 2.5, 0, 0}
		if c.Rank() != 0 {
			base = make([]float64, 4)
		}
		win, err := mpi.WinCreate(c, base)
		if err != nil {
			return err
		}
		if err := win.Lock(mpi.LockShared, 0); err != nil {
			return err
		}
		got := make([]float64, 2)
		req, err := mpi.Rget(win, got, 0, 0)
		if err != nil {
			return err
		}
		if _, err := req.Wait(); err != nil {
			return err
		}
		if err := win.Flush(0); err != nil {
			return err
		}
		if got[0] != 1.5 || got[1] != 2.5 {
			return fmt.Errorf("shared-lock Get = %v", got)
		}
		if err := win.Unlock(0); err != nil {
			return err
		}
		// Exactly one rank wins the compare-and-swap of element 2.
		if err := win.LockAll(); err != nil {
			return err
		}
		old, err := mpi.CompareAndSwap(win, float64(c.Rank()+1), 0, 0, 2)
		if err != nil {
			return err
		}
		res := make([]float64, 1)
		if err := mpi.GetAccumulate(win, []float64{1}, res, 0, 3, mpi.Sum); err != nil {
			return err
		}
		if err := win.FlushAll(); err != nil {
			return err
		}
		if err := win.UnlockAll(); err != nil {
			return err
		}
		won := 0.0
		if old == 0 {
			won = 1
		}
		total := []float64{0}
		if err := mpi.Allreduce(c, []float64{won}, total, mpi.Sum); err != nil {
			return err
		}
		if total[0] != 1 {
			return fmt.Errorf("%v ranks won the compare-and-swap", total[0])
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if c.Rank() == 0 && (base[2] < 1 || base[2] > 4 || base[3] != 4) {
			return fmt.Errorf("window after atomics %v", base)
		}
		return win.Free()
	})
}

// Bad input: clear errors of the right class, never a panic or a hang.
func TestWinBadInput(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int32, 4))
		if err != nil {
			return err
		}
		check := func(what string, err error, class *mpi.Class) error {
			if !errors.Is(err, class) {
				return fmt.Errorf("%s: %v, want %v", what, err, class)
			}
			return nil
		}
		other := 1 - c.Rank()
		for _, e := range []error{
			check("Put past the window", mpi.Put(win, make([]int32, 2), other, 3), mpi.ErrRMARange),
			check("Get at a negative displacement", mpi.Get(win, make([]int32, 1), other, -1), mpi.ErrRMARange),
			check("Put of the wrong element type", mpi.Put(win, []float32{1}, other, 0), mpi.ErrType),
			check("Put to rank out of range", mpi.Put(win, []int32{1}, 2, 0), mpi.ErrRank),
			check("Accumulate with a user op", mpi.Accumulate(win, []int32{1}, other, 0, mpi.NewOp(func(in, inout []int32) {}, true)), mpi.ErrOp),
			check("Accumulate with NoOp", mpi.Accumulate(win, []int32{1}, other, 0, mpi.NoOp), mpi.ErrOp),
			check("Accumulate with nil op", mpi.Accumulate(win, []int32{1}, other, 0, nil), mpi.ErrOp),
			check("Unlock without Lock", win.Unlock(other), mpi.ErrRMASync),
			check("Flush without Lock", win.Flush(other), mpi.ErrRMASync),
			check("UnlockAll without LockAll", win.UnlockAll(), mpi.ErrRMASync),
			check("Lock with a bad type", win.Lock(7, other), mpi.ErrLocktype),
		} {
			if e != nil {
				return e
			}
		}
		if err := win.Lock(mpi.LockShared, other); err != nil {
			return err
		}
		if err := check("Lock twice", win.Lock(mpi.LockShared, other), mpi.ErrRMASync); err != nil {
			return err
		}
		if err := check("Fence in a lock epoch", win.Fence(), mpi.ErrRMASync); err != nil {
			return err
		}
		if err := check("Free in a lock epoch", win.Free(), mpi.ErrRMASync); err != nil {
			return err
		}
		if err := win.Unlock(other); err != nil {
			return err
		}
		// Replace stores.
		if err := win.Fence(); err != nil {
			return err
		}
		if err := mpi.Accumulate(win, []int32{9}, other, 1, mpi.Replace); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if err := win.Free(); err != nil {
			return err
		}
		for _, e := range []error{
			check("Put on a freed window", mpi.Put(win, []int32{1}, other, 0), mpi.ErrWin),
			check("Fence on a freed window", win.Fence(), mpi.ErrWin),
			check("Free twice", win.Free(), mpi.ErrWin),
		} {
			if e != nil {
				return e
			}
		}
		_, _, err = mpi.WinAllocate[int32](c, -1)
		return check("WinAllocate of a negative size", err, mpi.ErrArg)
	})
}

// Seed 002 A.2.4, 003 17.11: a Put to a killed target returns nil; the
// next Fence raises ErrProcFailed at every survivor and does not hang; the
// operations between live processes completed; GetFailed names the dead
// process, after which fences among the survivors succeed again.
func TestWinFailureAtFence(t *testing.T) {
	const np, victim = 4, 3
	made := newCountGate(np) // every member made the window
	run(t, np, func(w *mpi.World, c *mpi.Comm) error {
		base := make([]int64, 2*np) // a slot per origin and epoch
		win, err := mpi.WinCreate(c, base)
		if err != nil {
			return err
		}
		if err := win.Fence(); err != nil { // opens the first epoch
			return err
		}
		made.done()
		if c.Rank() == victim {
			made.wait(t)
			w.Kill()
		}
		if err := mpi.Put(win, []int64{int64(c.Rank() + 1)}, victim, c.Rank()); err != nil {
			return fmt.Errorf("Put to the killed target: %v, want nil", err)
		}
		next := (c.Rank() + 1) % victim // the survivors 0..victim-1 in a ring
		if err := mpi.Put(win, []int64{int64(c.Rank() + 10)}, next, c.Rank()); err != nil {
			return err
		}
		if err := win.Fence(); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("Fence after a failure: %v, want ErrProcFailed", err)
		}
		prev := (c.Rank() + victim - 1) % victim
		if base[prev] != int64(prev+10) {
			return fmt.Errorf("rank %d: the Put from live rank %d did not complete: %v", c.Rank(), prev, base)
		}
		g, err := win.GetFailed()
		if err != nil {
			return err
		}
		if g.Size() != 1 {
			return fmt.Errorf("GetFailed has %d processes, want 1", g.Size())
		}
		wg, _ := win.Group()
		if r, _ := mpi.TranslateRanks(g, []int{0}, wg); len(r) != 1 || r[0] != victim {
			return fmt.Errorf("GetFailed names rank %v, want %d", r, victim)
		}
		// The failure is reported: fences among the survivors succeed.
		if err := mpi.Put(win, []int64{int64(c.Rank() + 20)}, next, np+c.Rank()); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return fmt.Errorf("Fence after GetFailed: %v", err)
		}
		if base[np+prev] != int64(prev+20) {
			return fmt.Errorf("second epoch: %v", base)
		}
		return win.Free()
	})
}

// Seed 003 17.11, 002 A.2.4 (2): Unlock of a target that failed inside
// the epoch raises ErrProcFailed (the Put in the epoch returned nil), and
// so does a later Lock of it; neither waits for it.
func TestWinLockFailedTarget(t *testing.T) {
	made := newCountGate(3) // every member made the window (rank 0: and locked rank 2)
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int64, 1))
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := win.Lock(mpi.LockExclusive, 2); err != nil {
				return err
			}
		}
		made.done()
		switch c.Rank() {
		case 2:
			made.wait(t)
			w.Kill()
		case 0:
			// Wait until the failure is known here.
			if _, err := mpi.Recv(c, make([]int, 1), 2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Recv from the killed rank: %v", err)
			}
			if err := mpi.Put(win, []int64{1}, 2, 0); err != nil {
				return fmt.Errorf("Put to a failed target: %v, want nil", err)
			}
			if err := win.Unlock(2); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Unlock of a failed target: %v", err)
			}
			if err := win.Lock(mpi.LockExclusive, 2); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Lock of a failed target: %v", err)
			}
			if err := win.Unlock(2); !errors.Is(err, mpi.ErrRMASync) {
				return fmt.Errorf("Unlock after a failed Lock: %v", err)
			}
			// A live target still works.
			if err := win.Lock(mpi.LockExclusive, 1); err != nil {
				return err
			}
			if err := win.Unlock(1); err != nil {
				return err
			}
		}
		return win.Free()
	})
}

// A lock holder killed while holding an exclusive lock: its lock is
// released at the target, and the other ranks acquire it.
func TestWinLockHolderKilled(t *testing.T) {
	const np = 4
	held := newGate()
	made := newCountGate(np) // every member made the window
	run(t, np, func(w *mpi.World, c *mpi.Comm) error {
		win, base, err := mpi.WinAllocate[int64](c, 1)
		if err != nil {
			return err
		}
		made.done()
		if c.Rank() == 1 {
			if err := win.Lock(mpi.LockExclusive, 0); err != nil {
				return err
			}
			made.wait(t)
			held.open()
			w.Kill() // dies holding the lock
		}
		held.wait(t)
		if c.Rank() != 0 {
			// Every survivor but the target increments under the lock.
			if err := win.Lock(mpi.LockExclusive, 0); err != nil {
				return err
			}
			if err := mpi.Accumulate(win, []int64{1}, 0, 0, mpi.Sum); err != nil {
				return err
			}
			if err := win.Unlock(0); err != nil {
				return err
			}
		}
		if _, err := win.GetFailed(); err != nil {
			return err
		}
		err = win.Fence()
		if err != nil {
			// The failure may become known here only after GetFailed ran.
			if !errors.Is(err, mpi.ErrProcFailed) {
				return err
			}
			if _, err := win.GetFailed(); err != nil {
				return err
			}
		}
		if c.Rank() == 0 && base[0] != np-2 {
			return fmt.Errorf("counter %d, want %d", base[0], np-2)
		}
		return win.Free()
	})
}

// Seed 002 A.3.2: after Revoke at one member, every later operation and
// synchronisation on the window raises ErrRevoked at every member; Free
// still releases it.
func TestWinRevoke(t *testing.T) {
	made := newCountGate(3) // every member made the window
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int64, 2))
		if err != nil {
			return err
		}
		made.done()
		if c.Rank() == 0 {
			made.wait(t)
			if err := win.Revoke(); err != nil {
				return err
			}
		}
		// The others learn of it in the fence (which cannot complete
		// without rank 0).
		if err := win.Fence(); c.Rank() != 0 && !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("Fence on a revoked window: %v", err)
		}
		if !win.IsRevoked() {
			return fmt.Errorf("IsRevoked false after the revocation")
		}
		for what, err := range map[string]error{
			"Put":        mpi.Put(win, []int64{1}, 1, 0),
			"Get":        mpi.Get(win, []int64{1}, 1, 0),
			"Accumulate": mpi.Accumulate(win, []int64{1}, 1, 0, mpi.Sum),
			"Fence":      win.Fence(),
			"Lock":       win.Lock(mpi.LockShared, 1),
			"Flush":      win.Flush(1),
		} {
			if !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("%s on a revoked window: %v", what, err)
			}
		}
		if err := win.Free(); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("Free of a revoked window: %v", err)
		}
		return nil
	})
}

// Generalized active target: each rank exposes its window to its left
// neighbour and accesses its right one, for several epochs; Test polls
// the exposure epoch to its end.
func TestWinPostStartCompleteWait(t *testing.T) {
	for _, np := range []int{1, 2, 5} {
		t.Run(fmt.Sprint("np", np), func(t *testing.T) {
			run(t, np, func(w *mpi.World, c *mpi.Comm) error {
				p, me := c.Size(), c.Rank()
				next, prev := (me+1)%p, (me+p-1)%p
				win, base, err := mpi.WinAllocate[int32](c, 1)
				if err != nil {
					return err
				}
				wg, _ := win.Group()
				gn, _ := wg.Incl([]int{next})
				gp, _ := wg.Incl([]int{prev})
				for e := int32(1); e <= 3; e++ {
					if err := win.Post(gp); err != nil {
						return err
					}
					if err := win.Start(gn); err != nil {
						return err
					}
					if err := mpi.Put(win, []int32{100*e + int32(me)}, next, 0); err != nil {
						return err
					}
					if err := win.Complete(); err != nil {
						return err
					}
					if e%2 == 0 {
						for {
							done, err := win.Test()
							if err != nil {
								return err
							}
							if done {
								break
							}
							runtime.Gosched()
						}
					} else if err := win.Wait(); err != nil {
						return err
					}
					if base[0] != 100*e+int32(prev) {
						return fmt.Errorf("epoch %d: window %d, want %d", e, base[0], 100*e+int32(prev))
					}
				}
				if err := errors.Join(win.Complete(), win.Wait()); !errors.Is(err, mpi.ErrRMASync) {
					return fmt.Errorf("Complete and Wait outside epochs: %v", err)
				}
				return win.Free()
			})
		})
	}
}

// Seed 002 A.2.4 item 1, 003 17.11: an origin killed inside an access
// epoch: the target's Wait raises ErrProcFailed without waiting for it;
// a target killed before posting: the origin's Start returns and its
// Complete raises ErrProcFailed; the live pair's epoch completes.
func TestWinPSCWFailure(t *testing.T) {
	made := newCountGate(4) // every member made the window
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		win, base, err := mpi.WinAllocate[int32](c, 4)
		if err != nil {
			return err
		}
		made.done()
		wg, _ := win.Group()
		grp := func(r ...int) *mpi.Group { g, _ := wg.Incl(r); return g }
		switch c.Rank() {
		case 1, 3: // 1: origin to 0; 3: target of 2; both die
			made.wait(t)
			w.Kill()
		case 0: // target of 1 and 2
			if err := win.Post(grp(1, 2)); err != nil {
				return err
			}
			if err := win.Wait(); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Wait with a failed origin: %v", err)
			}
			if base[2] != 7 {
				return fmt.Errorf("the live origin's Put is missing: %v", base)
			}
		case 2: // origin to 0 and 3
			if err := win.Start(grp(0, 3)); err != nil {
				return err
			}
			if err := mpi.Put(win, []int32{7}, 0, 2); err != nil {
				return err
			}
			if err := mpi.Put(win, []int32{7}, 3, 2); err != nil {
				return fmt.Errorf("Put to a failed target: %v, want nil", err)
			}
			if err := win.Complete(); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Complete with a failed target: %v", err)
			}
		}
		return win.Free()
	})
}

// Seed 003 17.4.2 and 17.11.1: GroupFailed is local and recognises
// nothing (a fence still raises ErrRankFailStop); Validate (Ivalidate at
// rank 0) gives every survivor the same group, and fences succeed
// afterwards.
func TestWinGroupFailedValidate(t *testing.T) {
	made := newCountGate(4) // every member made the window
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int8, 1))
		if err != nil {
			return err
		}
		made.done()
		if c.Rank() == 2 {
			made.wait(t)
			w.Kill()
		}
		if err := win.Fence(); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("Fence with an unrecognised failure: %v", err)
		}
		g, err := win.GroupFailed()
		if err != nil {
			return err
		}
		// The window's failed processes known here, in the window's
		// ranks: rank 2 (the fence above raised for it).
		wg0, _ := win.Group()
		if r, err := mpi.TranslateRanks(g, []int{0}, wg0); g.Size() != 1 || err != nil || r[0] != 2 {
			return fmt.Errorf("GroupFailed: %d processes, rank %v (%v); want rank 2 only", g.Size(), r, err)
		}
		if err := win.Fence(); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("Fence after GroupFailed (%d failed): %v", g.Size(), err)
		}
		var v *mpi.Group
		if c.Rank() == 0 { // Validate and Ivalidate match each other
			req, err := win.Ivalidate()
			if err != nil {
				return err
			}
			if v, err = req.Wait(); err != nil {
				return err
			}
		} else if v, err = win.Validate(); err != nil {
			return err
		}
		wg, _ := win.Group()
		r, err := mpi.TranslateRanks(v, []int{0}, wg)
		if err != nil || v.Size() != 1 || r[0] != 2 {
			return fmt.Errorf("Validate gave %v (size %d): %v", r, v.Size(), err)
		}
		if err := mpi.Put(win, []int8{1}, (c.Rank()+1)%2, 0); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return fmt.Errorf("Fence after Validate: %v", err)
		}
		return win.Free()
	})
}

// Seed 003 17.11 under run-through: WinCreate on a collectively inactive
// communicator (an unrecognised failure) raises ErrRankFailStop at every
// survivor; after Comm.Validate it succeeds, the recognised failure is
// recognised in the window, and fences among the survivors succeed.
func TestWinCreateRunThrough(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if err := c.EnableRunThrough(); err != nil {
			return err
		}
		if c.Rank() == 2 {
			w.Kill()
		}
		// Learn of the failure (a receive from the dead rank fails).
		if _, err := mpi.Recv(c, make([]int, 1), 2, 0); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("Recv from the killed rank: %v", err)
		}
		if _, err := mpi.WinCreate(c, make([]int, 1)); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("WinCreate on an inactive communicator: %v", err)
		}
		if _, err := c.Validate(); err != nil {
			return err
		}
		win, err := mpi.WinCreate(c, make([]int, 1))
		if err != nil {
			return fmt.Errorf("WinCreate after Validate: %v", err)
		}
		if err := win.Fence(); err != nil {
			return fmt.Errorf("first Fence with a recognised failure only: %v", err)
		}
		if err := mpi.Put(win, []int{1}, 1-c.Rank(), 0); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return fmt.Errorf("Fence with a recognised failure only: %v", err)
		}
		return win.Free()
	})
}

// countGate opens once done was called n times.
type countGate struct {
	mu sync.Mutex
	n  int
	g  *gate
}

func newCountGate(n int) *countGate { return &countGate{n: n, g: newGate()} }

func (c *countGate) done() {
	c.mu.Lock()
	c.n--
	if c.n == 0 {
		c.g.open()
	}
	c.mu.Unlock()
}

func (c *countGate) wait(t *testing.T) { c.g.wait(t) }
