// Command nshostsctl brings namespace hosts up and down by hand (see
// package nshosts and bench/nshosts.sh):
//
//	nshostsctl up N DIR    make hosts h1..hN, files in DIR; prints how to use them
//	nshostsctl down DIR    kill everything on them and remove them and DIR
//
// It is for tests and benchmarks by hand and must not be used on a
// machine whose network namespaces others rely on.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/ftmpi/ftmpi/internal/nshosts"
)

func main() {
	if len(os.Args) < 3 {
		usage()
	}
	switch os.Args[1] {
	case "up":
		if len(os.Args) != 4 {
			usage()
		}
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintf(os.Stderr, "nshostsctl: host count %q is not a number\n", os.Args[2])
			os.Exit(2)
		}
		h, err := nshosts.Up(n, os.Args[3])
		if err != nil {
			fmt.Fprintln(os.Stderr, "nshostsctl:", err)
			os.Exit(1)
		}
		fmt.Printf("hosts h1..h%d on %s and %s, namespaces %s-h1..h%d\n", n, h.Subnet4(), h.Subnet6(), h.Prefix, n)
		fmt.Printf("run on h1:   ip netns exec %s ftmpirun --launch-agent 'ssh -F %s' --host h1:2,h2:2 ...\n", h.NS(1), h.SSHConfig)
		fmt.Printf("tear down:   bench/nshosts.sh down %s\n", h.Dir)
	case "down":
		if len(os.Args) != 3 {
			usage()
		}
		if err := nshosts.Down(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "nshostsctl:", err)
			os.Exit(1)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: nshostsctl up N DIR | nshostsctl down DIR")
	os.Exit(2)
}
