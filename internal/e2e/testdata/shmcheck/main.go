// Command shmcheck drives the shared-memory transport's failure cases in
// a real job (run it under ftmpirun --transport shm).
//
//	shmcheck hang         every rank talks to every other (each pair maps
//	                      its segment), prints "ready pid N" and sleeps: the
//	                      test SIGKILLs the launcher
//	shmcheck fullring GO  rank 1 prints "ready pid N" (the test stops it);
//	                      rank 0 waits for the file GO, prints "sending",
//	                      and sends 48 KiB messages to rank 1 until a send
//	                      fails (the ring fills: rank 1 is stopped, then
//	                      killed); it prints "result: fullring
//	                      procfailed=<bool>"
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: shmcheck hang | fullring GOFILE")
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmcheck:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	switch os.Args[1] {
	case "hang":
		// Every pair exchanges a message.
		for d := 1; d < c.Size(); d++ {
			to, from := (c.Rank()+d)%c.Size(), (c.Rank()-d+c.Size())%c.Size()
			if _, err := mpi.Sendrecv(c, []int{c.Rank()}, to, 0, make([]int, 1), from, 0); err != nil {
				fmt.Fprintln(os.Stderr, "shmcheck:", err)
				os.Exit(1)
			}
		}
		fmt.Printf("ready pid %d\n", os.Getpid())
		time.Sleep(time.Hour) // the launcher's death ends the job
	case "fullring":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: shmcheck fullring GOFILE")
			os.Exit(2)
		}
		if err := c.Barrier(); err != nil { // the pair is set up
			fmt.Fprintln(os.Stderr, "shmcheck:", err)
			os.Exit(1)
		}
		switch c.Rank() {
		case 1:
			fmt.Printf("ready pid %d\n", os.Getpid())
			time.Sleep(time.Hour) // stopped, then killed
		case 0:
			for {
				if _, err := os.Stat(os.Args[2]); err == nil {
					break
				}
				time.Sleep(time.Millisecond) // polling for the test's file
			}
			fmt.Println("sending")
			buf := make([]byte, 48<<10)
			for i := 0; ; i++ {
				if err := mpi.Send(c, buf, 1, 0); err != nil {
					fmt.Fprintf(os.Stderr, "rank 0: send %d: %v\n", i, err)
					fmt.Printf("result: fullring procfailed=%v\n", errors.Is(err, mpi.ErrProcFailed))
					break
				}
			}
		}
	}
	w.Finalize()
}
