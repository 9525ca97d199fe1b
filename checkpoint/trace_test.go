package checkpoint

import (
	"bytes"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/trace"
	"github.com/ftmpi/ftmpi/mpi"
)

// Config.Trace under mpi.Run (issue 23 item 4): every rank writes its
// timeline, merged by trace.MergeDir as ftmpi-trace merge does; the
// checkpoints written and read are in it, and the recovery of a killed
// rank (told, revoked, agreed, repaired by a shrink and a checkpoint
// read) at every survivor.
func TestTimelineUnderRunHasCheckpointsAndTheRepair(t *testing.T) {
	tdir, cdir := t.TempDir(), t.TempDir()
	cfg := mpi.DefaultConfig()
	cfg.Trace = tdir
	done := make(chan error, 1)
	go func() {
		done <- mpi.RunConfig(4, cfg, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			me := c.Rank()
			// Round 0 saves, round 1 is a barrier; rank 2 dies at the
			// start of round 1, once every rank agreed the save was
			// made (as ExampleComm_Shrink: each round's outcome agreed).
			for round := 0; round < 2; {
				if round == 1 && me == 2 {
					w.Kill()
				}
				var err error
				if round == 0 {
					err = SaveFile(c, cdir, 1, []byte{byte(me), 7})
				} else {
					err = c.Barrier()
				}
				if ok, aerr := c.Agree(err == nil); ok && aerr == nil {
					round++
					continue
				}
				c.Revoke()
				c.FailureAck()
				nc, err := c.Shrink()
				if err != nil {
					return err
				}
				c = nc
				if round == 0 {
					continue // the save is redone on the survivors
				}
				blocks, err := LoadFile(c, cdir, 1, me)
				if err != nil {
					return err
				}
				if !bytes.Equal(blocks[0], []byte{byte(me), 7}) {
					t.Errorf("rank %d read %v", me, blocks[0])
				}
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the job did not end within 60s")
	}
	f, names, err := trace.MergeDir(tdir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 4 {
		t.Fatalf("%d trace files, want one per rank: %v", len(names), names)
	}
	ckpt := map[int]map[string]bool{}
	for _, ev := range f.TraceEvents {
		if ev.Cat == trace.CatCheckpoint {
			if ckpt[ev.Pid] == nil {
				ckpt[ev.Pid] = map[string]bool{}
			}
			ckpt[ev.Pid][ev.Name] = true
		}
	}
	fails := trace.Phases(f)
	if len(fails) != 1 || fails[0].Proc != 2 || len(fails[0].Ranks) != 3 {
		t.Fatalf("failures %+v, want rank 2's with 3 survivors", fails)
	}
	for _, r := range fails[0].Ranks {
		if !ckpt[r.Pid][trace.NameCkptW] || !ckpt[r.Pid][trace.NameCkptR] {
			t.Errorf("%s: checkpoint events %v, want a write and a read", r.Label, ckpt[r.Pid])
		}
		for _, ph := range []string{"told", "revoked", "agreed", "repaired"} {
			if _, ok := r.At[ph]; !ok {
				t.Errorf("%s has no %s phase: %v", r.Label, ph, r.At)
			}
		}
	}
	if err := fails[0].Ordered(); err != nil {
		t.Error(err)
	}
}
