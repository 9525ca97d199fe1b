package mpi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Bad input: clear errors, never a panic or a hang.
func TestValueBadInput(t *testing.T) {
	var nilComm *mpi.Comm
	if err := mpi.SendValue(nilComm, 1, 0, 0); !errors.Is(err, mpi.ErrComm) {
		t.Fatalf("SendValue on a nil communicator: %v", err)
	}
	if _, _, err := mpi.RecvValue[int](nilComm, 0, 0); !errors.Is(err, mpi.ErrComm) {
		t.Fatalf("RecvValue on a nil communicator: %v", err)
	}
	if _, err := mpi.IrecvValue[int](nilComm, 0, 0); !errors.Is(err, mpi.ErrComm) {
		t.Fatalf("IrecvValue on a nil communicator: %v", err)
	}
	if _, err := mpi.IsendValue(nilComm, 1, 0, 0); !errors.Is(err, mpi.ErrComm) {
		t.Fatalf("IsendValue on a nil communicator: %v", err)
	}
	if _, _, err := mpi.SendrecvValue[int, int](nilComm, 1, 0, 0, 0, 0); !errors.Is(err, mpi.ErrComm) {
		t.Fatalf("SendrecvValue on a nil communicator: %v", err)
	}
	if _, err := mpi.BcastValue(nilComm, 1, 0); !errors.Is(err, mpi.ErrComm) {
		t.Fatalf("BcastValue on a nil communicator: %v", err)
	}
	if _, err := mpi.AllreduceValue(nilComm, 1, func(a, b int) int { return a + b }); !errors.Is(err, mpi.ErrComm) {
		t.Fatalf("AllreduceValue on a nil communicator: %v", err)
	}
	if err := nilComm.SetCodec(mpi.GobCodec); !errors.Is(err, mpi.ErrComm) {
		t.Fatalf("SetCodec on a nil communicator: %v", err)
	}
	type unexported struct{ a int }
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		if err := mpi.SendValue(c, 1, 3, 0); !errors.Is(err, mpi.ErrRank) {
			return fmt.Errorf("SendValue to rank 3 of 3: %v", err)
		}
		if _, _, err := mpi.RecvValue[int](c, 0, -5); !errors.Is(err, mpi.ErrTag) {
			return fmt.Errorf("RecvValue with tag -5: %v", err)
		}
		// Values gob cannot encode: ErrType naming the codec and the type.
		err := mpi.SendValue(c, make(chan int), (r+1)%3, 0)
		if !errors.Is(err, mpi.ErrType) || !strings.Contains(err.Error(), "codec gob") || !strings.Contains(err.Error(), "chan int") {
			return fmt.Errorf("SendValue of a channel: %v", err)
		}
		if err := mpi.SendValue(c, unexported{1}, (r+1)%3, 0); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("SendValue of a struct without exported fields: %v", err)
		}
		if _, err := mpi.IsendValue(c, func() {}, (r+1)%3, 0); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("IsendValue of a function: %v", err)
		}
		if repeated := repeatedPhrase(err.Error()); repeated != "" {
			return fmt.Errorf("error text repeats %q: %v", repeated, err)
		}
		// Decoding into the wrong type: ErrType naming the codec and both
		// types; the message is consumed, the communicator usable.
		if r == 0 {
			return firstErr(
				func() error { return mpi.SendValue(c, map[string]int{"a": 1}, 1, 1) },
				func() error { return mpi.SendValue(c, "not a number", 1, 2) },
				func() error { return mpi.SendValue(c, "after", 1, 3) },
				func() error { return mpi.Send(c, []float64{1.5}, 1, 4) },
				func() error { return mpi.SendValue(c, 2.5, 1, 5) },
			)
		}
		if r == 1 {
			type point struct{ X, Y int }
			_, st, err := mpi.RecvValue[point](c, 0, 1)
			if !errors.Is(err, mpi.ErrType) || !strings.Contains(err.Error(), "mpi_test.point") || !strings.Contains(err.Error(), "codec gob") || st.Source != 0 {
				return fmt.Errorf("map received as a struct: %v %+v", err, st)
			}
			if repeated := repeatedPhrase(err.Error()); repeated != "" {
				return fmt.Errorf("error text repeats %q: %v", repeated, err)
			}
			if _, _, err := mpi.RecvValue[int](c, 0, 2); !errors.Is(err, mpi.ErrType) {
				return fmt.Errorf("string received as an int: %v", err)
			}
			if s, _, err := mpi.RecvValue[string](c, 0, 3); err != nil || s != "after" {
				return fmt.Errorf("receive after decoding errors: %q %v", s, err)
			}
			// A typed message is not a value, and a value not elements.
			if _, _, err := mpi.RecvValue[float64](c, 0, 4); !errors.Is(err, mpi.ErrType) {
				return fmt.Errorf("float64 elements received as a value: %v", err)
			}
			if _, err := mpi.Recv(c, make([]byte, 64), 0, 5); !errors.Is(err, mpi.ErrType) || !strings.Contains(err.Error(), "Go value") {
				return fmt.Errorf("value received as bytes: %v", err)
			}
		}
		return nil
	})
}

// A codec that panics is an error (ErrOther), not a panic.
type panicCodec struct{}

func (panicCodec) Name() string                { return "panicky" }
func (panicCodec) Marshal(any) ([]byte, error) { panic("marshal bug") }
func (panicCodec) Unmarshal([]byte, any) error { panic("unmarshal bug") }

func TestValueCodecPanics(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			if err := mpi.SendValue(c, 1, 1, 0); err != nil {
				return err
			}
			if err := c.SetCodec(panicCodec{}); err != nil {
				return err
			}
			if err := mpi.SendValue(c, 1, 1, 0); !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "marshal bug") {
				return fmt.Errorf("SendValue with a panicking codec: %v", err)
			}
			return nil
		}
		if err := c.SetCodec(panicCodec{}); err != nil {
			return err
		}
		if _, _, err := mpi.RecvValue[int](c, 0, 0); !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "unmarshal bug") {
			return fmt.Errorf("RecvValue with a panicking codec: %v", err)
		}
		return nil
	})
}

// A member that cannot encode its value, or whose arguments are wrong,
// fails the value collective at every member (the others with its reason)
// without a hang, also when the others' messages are large (rendezvous);
// the communicator stays usable (the sequence of collective calls stays
// aligned).
func TestValueCollectiveLocalFailure(t *testing.T) {
	big := strings.Repeat("b", 200<<10)
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		var v any = big
		if r == 2 {
			v = make(chan int) // gob cannot encode it
		}
		_, err := mpi.AllgatherValue(c, v)
		if !errors.Is(err, mpi.ErrType) || r != 2 && !strings.Contains(err.Error(), "rank 2") {
			return fmt.Errorf("AllgatherValue with an unencodable value at rank 2: %v", err)
		}
		if _, err := mpi.GatherValue(c, v, 0); !errors.Is(err, mpi.ErrType) && r == 0 {
			return fmt.Errorf("GatherValue with an unencodable value at rank 2: %v", err)
		}
		var bv any = big
		if r == 1 {
			bv = make(chan int)
		}
		if _, err := mpi.BcastValue(c, bv, 1); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("BcastValue of an unencodable value: %v", err)
		}
		var vs []string
		if r == 3 {
			vs = []string{big, big} // 2 values for 4 ranks
		}
		if _, err := mpi.ScatterValue(c, vs, 3); !errors.Is(err, mpi.ErrCount) {
			return fmt.Errorf("ScatterValue with 2 values for 4 ranks: %v", err)
		}
		if _, err := mpi.AlltoallValue(c, make([]string, 4-r/3)); !errors.Is(err, mpi.ErrCount) {
			return fmt.Errorf("AlltoallValue with 3 values at rank 3: %v", err)
		}
		_, err = mpi.AllreduceValue(c, big, func(a, b string) string {
			if len(a) > 2*len(big) {
				panic("too long")
			}
			return a + b
		})
		if !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "too long") {
			return fmt.Errorf("AllreduceValue whose function panics at rank 0: %v", err)
		}
		if _, err := mpi.ReduceValue[int](c, 1, nil, 0); !errors.Is(err, mpi.ErrOp) {
			return fmt.Errorf("ReduceValue with a nil function: %v", err)
		}
		// Still in step.
		all, err := mpi.AllgatherValue(c, fmt.Sprint(r))
		if err != nil || strings.Join(all, "") != "0123" {
			return fmt.Errorf("AllgatherValue after the failures: %v %v", all, err)
		}
		return nil
	})
}

// ULFM: RecvValue from a failed rank raises ErrProcFailed; a blocking
// wildcard RecvValue ErrProcFailed; IrecvValue with a wildcard ErrPending
// (the request pending) until FailureAck, then it completes.
func TestValueULFMRecvFromKilled(t *testing.T) {
	killed, acked := newGate(), newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			killed.open()
			w.Kill()
		case 0:
			killed.wait(t)
			if _, _, err := mpi.RecvValue[string](c, 2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("RecvValue from the killed rank: %v", err)
			}
			if _, _, err := mpi.RecvValue[string](c, mpi.AnySource, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("wildcard RecvValue with an unacknowledged failure: %v", err)
			}
			if _, _, err := mpi.SendrecvValue[int, int](c, 1, 2, 0, 2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("SendrecvValue with the killed rank: %v", err)
			}
			if err := mpi.SendValue(c, "x", 2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("SendValue to the killed rank: %v", err)
			}
			req, err := mpi.IrecvValue[string](c, mpi.AnySource, 0)
			if err != nil {
				return err
			}
			if _, err := req.Wait(); !errors.Is(err, mpi.ErrPending) {
				return fmt.Errorf("wildcard IrecvValue: want ErrPending, got %v", err)
			}
			if _, done, err := req.Test(); done || !errors.Is(err, mpi.ErrPending) {
				return fmt.Errorf("Test of the pending IrecvValue: %v %v", done, err)
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			acked.open()
			v, err := req.Wait()
			if err != nil || v != "after ack" || req.Status().Source != 1 {
				return fmt.Errorf("IrecvValue after FailureAck: %q %+v %v", v, req.Status(), err)
			}
		case 1:
			acked.wait(t)
			return mpi.SendValue(c, "after ack", 0, 0)
		}
		return nil
	})
}

// ULFM: a value collective with a dead member fails with ErrProcFailed
// at every survivor; on a revoked communicator value calls raise
// ErrRevoked; after Shrink they work on the survivors.
func TestValueULFMCollectiveDeadMember(t *testing.T) {
	passed := newArrivals(3)
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 3 {
			w.Kill()
			return nil
		}
		if _, _, err := mpi.RecvValue[int](c, 3, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("RecvValue from the killed rank: %v", err)
		}
		if _, err := mpi.BcastValue(c, "v", 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("BcastValue with a dead member: %v", err)
		}
		if _, err := mpi.AllreduceValue(c, 1, func(a, b int) int { return a + b }); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("AllreduceValue with a dead member: %v", err)
		}
		// Every survivor saw the failure before one revokes.
		passed.arrive()
		passed.g.wait(t)
		if err := c.Revoke(); err != nil {
			return err
		}
		if err := mpi.SendValue(c, 1, (c.Rank()+1)%3, 0); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("SendValue on a revoked communicator: %v", err)
		}
		if _, _, err := mpi.RecvValue[int](c, mpi.AnySource, 0); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("RecvValue on a revoked communicator: %v", err)
		}
		if _, err := mpi.GatherValue(c, 1, 0); !errors.Is(err, mpi.ErrRevoked) && !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("GatherValue on a revoked communicator: %v", err)
		}
		req, err := c.Ishrink()
		if err != nil {
			return err
		}
		s, err := req.Wait()
		if err != nil {
			return err
		}
		defer s.Free()
		got, err := mpi.AllreduceValue(s, []int{s.Rank()}, func(a, b []int) []int { return append(a, b...) })
		if err != nil || fmt.Sprint(got) != "[0 1 2]" {
			return fmt.Errorf("AllreduceValue on the shrunk communicator: %v %v", got, err)
		}
		return nil
	})
}

// Run-through: collectives are inactive until Validate (ErrRankFailStop),
// then run on the alive processes; the failed ones' elements are zero.
func TestValueRunThroughCollectives(t *testing.T) {
	run(t, 5, func(w *mpi.World, c *mpi.Comm) error {
		if err := c.EnableRunThrough(); err != nil {
			return err
		}
		if c.Rank() == 1 || c.Rank() == 4 {
			w.Kill()
			return nil
		}
		if err := firstErr(func() error { return awaitFailure(c, 1) }, func() error { return awaitFailure(c, 4) }); err != nil {
			return err
		}
		if _, err := mpi.AllgatherValue(c, c.Rank()); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("AllgatherValue before Validate: %v", err)
		}
		if _, err := c.Validate(); err != nil {
			return err
		}
		all, err := mpi.AllgatherValue(c, fmt.Sprint("r", c.Rank()))
		if err != nil || strings.Join(all, ",") != "r0,,r2,r3," {
			return fmt.Errorf("AllgatherValue after Validate: %q %v", all, err)
		}
		got, err := mpi.BcastValue(c, map[string]int{"from": c.Rank()}, 3)
		if err != nil || got["from"] != 3 {
			return fmt.Errorf("BcastValue after Validate: %v %v", got, err)
		}
		s, err := mpi.AllreduceValue(c, fmt.Sprint(c.Rank()), func(a, b string) string { return a + "," + b })
		if err != nil || s != "0,2,3" {
			return fmt.Errorf("AllreduceValue after Validate: %q %v", s, err)
		}
		return nil
	})
}

// Run-through with rank 0 failed: AllreduceValue folds at the lowest
// alive rank.
func TestValueRunThroughRankZeroFailed(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if err := c.EnableRunThrough(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			w.Kill()
			return nil
		}
		if err := awaitFailure(c, 0); err != nil {
			return err
		}
		if _, err := c.Validate(); err != nil {
			return err
		}
		s, err := mpi.AllreduceValue(c, fmt.Sprint(c.Rank()), func(a, b string) string { return a + "," + b })
		if err != nil || s != "1,2" {
			return fmt.Errorf("AllreduceValue without rank 0: %q %v", s, err)
		}
		return nil
	})
}

// Value collectives are for intracommunicators; point-to-point values
// work on an intercommunicator (ranks of the remote group).
func TestValueIntercomm(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		local, inter, inA, err := halves(c, 2, 0, 5)
		if err != nil {
			return err
		}
		defer local.Free()
		defer inter.Free()
		if _, err := mpi.BcastValue(inter, 1, mpi.Root); !errors.Is(err, mpi.ErrComm) {
			return fmt.Errorf("BcastValue on an intercommunicator: %v", err)
		}
		if _, err := mpi.AllgatherValue(inter, 1); !errors.Is(err, mpi.ErrComm) {
			return fmt.Errorf("AllgatherValue on an intercommunicator: %v", err)
		}
		if inA {
			return mpi.SendValue(inter, fmt.Sprint("to ", inter.Rank()), inter.Rank(), 0)
		}
		s, st, err := mpi.RecvValue[string](inter, mpi.AnySource, 0)
		if err != nil || s != fmt.Sprint("to ", inter.Rank()) || st.Source != inter.Rank() {
			return fmt.Errorf("RecvValue over an intercommunicator: %q %+v %v", s, st, err)
		}
		return nil
	})
}
