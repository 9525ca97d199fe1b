package mpi_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/ftmpi/ftmpi/mpi"
)

// repeatedPhrase returns a part of s, as split at ": " (the joints
// between what each layer of an error adds), of two words or more that
// stands again in a later part (case-insensitive, whole words), or "".
func repeatedPhrase(s string) string {
	words := func(p string) string {
		return " " + strings.Join(strings.FieldsFunc(strings.ToLower(p), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
		}), " ") + " "
	}
	parts := strings.Split(s, ": ")
	for i, p := range parts {
		w := words(p)
		if strings.Count(w, " ") < 3 { // fewer than two words
			continue
		}
		for _, q := range parts[i+1:] {
			if strings.Contains(words(q), w) {
				return strings.TrimSpace(w)
			}
		}
	}
	return ""
}

func TestRepeatedPhraseFinder(t *testing.T) {
	if p := repeatedPhrase("MPI_Recv: MPI_ERR_TYPE: datatype mismatch: datatype mismatch: x"); p != "datatype mismatch" {
		t.Fatalf("repeatedPhrase missed the repetition: %q", p)
	}
	if p := repeatedPhrase("MPI_Send: MPI_ERR_REVOKED: communicator revoked: the communicator revoked earlier"); p != "communicator revoked" {
		t.Fatalf("repeatedPhrase missed a repetition inside a later part: %q", p)
	}
	if p := repeatedPhrase("MPI_Recv on MPI_COMM_WORLD (peer 1): MPI_ERR_TYPE: datatype mismatch: message has type int32, receive buffer has type float64"); p != "" {
		t.Fatalf("repeatedPhrase found %q where nothing repeats", p)
	}
}

// The error texts of the common failure paths never repeat a phrase (the
// class and the engine's own error used to say the same thing twice:
// "MPI_ERR_TYPE: datatype mismatch: datatype mismatch: ...").
func TestErrorTextsDoNotRepeat(t *testing.T) {
	var mu sync.Mutex
	var got []error
	keep := func(what string, err error) error {
		if err == nil {
			return fmt.Errorf("%s: no error", what)
		}
		mu.Lock()
		got = append(got, err)
		mu.Unlock()
		return nil
	}
	killed := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 0:
			if err := mpi.Send(c, []int32{1, 2}, 1, 1); err != nil { // datatype mismatch
				return err
			}
			if err := mpi.Send(c, make([]int64, 16), 1, 2); err != nil { // truncated
				return err
			}
			if err := mpi.Send(c, make([]int64, 1<<15), 1, 3); err != nil { // truncated, rendezvous
				return err
			}
			if err := keep("send to an invalid rank", mpi.Send(c, []int{1}, 7, 0)); err != nil {
				return err
			}
			if err := keep("send with an invalid tag", mpi.Send(c, []int{1}, 1, -5)); err != nil {
				return err
			}
			killed.wait(t)
			if _, err := mpi.Recv(c, make([]int, 1), 2, 0); keep("receive from a failed rank", err) != nil {
				return err
			}
			if err := keep("send to a failed rank", mpi.Send(c, []int{1}, 2, 0)); err != nil {
				return err
			}
			if err := keep("collective with a failed member", c.Barrier()); err != nil {
				return err
			}
			if err := c.Revoke(); err != nil {
				return err
			}
			if err := keep("send on a revoked communicator", mpi.Send(c, []int{1}, 1, 0)); err != nil {
				return err
			}
		case 1:
			if _, err := mpi.Recv(c, make([]float64, 2), 0, 1); keep("datatype mismatch", err) != nil {
				return err
			}
			if _, err := mpi.Recv(c, make([]int64, 4), 0, 2); keep("truncation", err) != nil {
				return err
			}
			if _, err := mpi.Recv(c, make([]int64, 4), 0, 3); keep("rendezvous truncation", err) != nil {
				return err
			}
		case 2:
			killed.open()
			w.Kill()
		}
		return nil
	})
	cfg := mpi.DefaultConfig()
	cfg.EagerLimit = -1
	if err := keep("invalid configuration", mpi.RunConfig(1, cfg, func(*mpi.World) error { return nil })); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Fatalf("collected %d errors, want 10: %v", len(got), got)
	}
	for _, err := range got {
		if p := repeatedPhrase(err.Error()); p != "" {
			t.Errorf("error text repeats %q: %v", p, err)
		}
	}
}

// A collective that fails because a member died names the member that
// died, not whichever peer the algorithm happened to be waiting on when
// the failure poisoned the collective.
func TestCollectiveErrorNamesFailedMember(t *testing.T) {
	for rep := 0; rep < 5; rep++ {
		run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
			if c.Rank() == 3 {
				w.Kill()
			}
			out := make([]int, 1)
			err := mpi.Allreduce(c, []int{c.Rank()}, out, mpi.Sum)
			if !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Allreduce with a failed member: want ErrProcFailed, got %v", err)
			}
			var me *mpi.Error
			if !errors.As(err, &me) || me.Peer != 3 {
				return fmt.Errorf("Allreduce error should name the failed rank 3: %v", err)
			}
			return nil
		})
	}
}
