package rte

import (
	"sync"
	"testing"
	"time"
)

func fenceAll(j *Job, n int) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = j.Fence() }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		panic("fence never returned")
	}
	return errs
}

// The Finalize fence opens when every rank arrived or died; an abort
// opens it with an error, and the first abort is the one reported.
func TestJobFenceAndAbort(t *testing.T) {
	j := NewJob(4)
	j.Dead()
	for i, err := range fenceAll(j, 3) {
		if err != nil {
			t.Fatalf("rank %d: %v", i, err)
		}
	}
	if _, _, ok := j.Aborted(); ok {
		t.Fatal("a job nobody aborted reports an abort")
	}

	j = NewJob(3)
	j.Abort(2, 7)
	j.Abort(1, 9)
	for i, err := range fenceAll(j, 2) {
		if err == nil {
			t.Fatalf("rank %d passed the fence of an aborted job", i)
		}
	}
	if r, c, ok := j.Aborted(); !ok || r != 2 || c != 7 {
		t.Fatalf("Aborted() = %d, %d, %v; want rank 2 code 7", r, c, ok)
	}
}
