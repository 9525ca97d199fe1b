// Command bigxfer sends one large message from rank 1 to rank 0 (a single
// Send and Recv of SIZE MiB) and checks its contents. Rank 0 prints
// "result: bigxfer bytes=<n> intact=<bool>".
//
//	bigxfer SIZE_MIB
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	mib, err := 0, error(nil)
	if len(os.Args) == 2 {
		mib, err = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) != 2 || err != nil || mib <= 0 {
		fmt.Fprintf(os.Stderr, "usage: bigxfer SIZE_MIB (got %q)\n", os.Args[1:])
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigxfer:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	buf := make([]byte, mib<<20)
	switch c.Rank() {
	case 0:
		st, err := mpi.Recv(c, buf, 1, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bigxfer: recv:", err)
			os.Exit(1)
		}
		intact := true
		for k := range buf {
			if buf[k] != byte(k*31+7) {
				intact = false
				break
			}
		}
		fmt.Printf("result: bigxfer bytes=%d intact=%v\n", st.Count, intact)
	case 1:
		for k := range buf {
			buf[k] = byte(k*31 + 7)
		}
		if err := mpi.Send(c, buf, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "bigxfer: send:", err)
			os.Exit(1)
		}
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "bigxfer:", err)
		os.Exit(1)
	}
}
