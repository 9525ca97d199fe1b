package mpi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// A communicator whose processes the launcher placed on two hosts cannot
// share memory: WinAllocateShared is an ErrComm error at every process,
// naming the hosts, and nothing is created (no collective is started, so
// no process waits for another).
func TestWinAllocateSharedAcrossHosts(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- Run(3, func(w *World) error {
			w.rt.Hosts.Add([]boot.Endpoint{{Rank: 0, Host: "node-a"}, {Rank: 1, Host: "node-a"}, {Rank: 2, Host: "node-b"}})
			c := w.CommWorld()
			c.SetErrhandler(ErrorsReturn)
			_, _, err := c.WinAllocateShared(8, 8, nil)
			if ErrorClass(err) != ErrComm || !strings.Contains(err.Error(), `rank 2 on "node-b"`) {
				return fmt.Errorf("rank %d: %v, want MPI_ERR_COMM naming rank 2's host", c.Rank(), err)
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
		t.Fatal("the job did not end within 60 s")
	}
}
