// Command slurmtestctl brings a throw-away Slurm cluster up and down by
// hand (see package slurmtest and bench/slurm-start.sh):
//
//	slurmtestctl up N DIR    start nodes h1..hN and a login host, files in DIR;
//	                         prints the login namespace and SLURM_CONF as shell
//	                         assignments (eval them)
//	slurmtestctl down DIR    kill everything of the cluster and remove it and DIR
//	slurmtestctl check       say whether a cluster can be started here and why
//	                         not (starts a 1-node cluster and tears it down);
//	                         exits 0 either way (CI's log, .ci/run)
//
// The daemons outlive the command (they are reparented to init) until down.
//
// It runs daemons as root and must not be used outside tests and
// benchmarks.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ftmpi/ftmpi/internal/slurmtest"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "check" {
		check()
		return
	}
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
			fmt.Fprintf(os.Stderr, "slurmtestctl: node count %q is not a number\n", os.Args[2])
			os.Exit(2)
		}
		// CPUs each node advertises: SLURMTEST_CPUS (default 16, so that
		// np 16 fits on any node count without oversubscription errors).
		cpus := 16
		if v := os.Getenv("SLURMTEST_CPUS"); v != "" {
			if cpus, err = strconv.Atoi(v); err != nil || cpus < 1 {
				fmt.Fprintf(os.Stderr, "slurmtestctl: SLURMTEST_CPUS=%q is not a positive number\n", v)
				os.Exit(2)
			}
		}
		c, err := slurmtest.Up(n, os.Args[3], slurmtest.Options{CPUs: cpus})
		if err != nil {
			fmt.Fprintln(os.Stderr, "slurmtestctl:", err)
			os.Exit(1)
		}
		fmt.Printf("SLURM_LOGIN_NS=%s\nSLURM_CONF=%s\nSLURM_NODES=%s\n", c.Hosts.NS(c.Login()), c.Conf, c.NodeList())
	case "down":
		if len(os.Args) != 3 {
			usage()
		}
		if err := slurmtest.Down(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "slurmtestctl:", err)
			os.Exit(1)
		}
	default:
		usage()
	}
}

// check prints whether the Slurm scenarios (internal/e2e/slurm) can run
// here: Available's answer, then whether a 1-node cluster starts (its
// daemons, namespaces and munge) and is torn down. A machine where they
// cannot is not an error: the scenarios skip there when Available says
// no, and fail when it says yes but a cluster does not start, which this
// line then explains.
func check() {
	const p = "slurmtestctl check:"
	if err := slurmtest.Available(); err != nil {
		fmt.Printf("%s uid %d: the Slurm scenarios will skip: %v\n", p, os.Geteuid(), err)
		return
	}
	start := time.Now()
	c, err := slurmtest.Up(1, "", slurmtest.Options{})
	if err != nil {
		fmt.Printf("%s uid %d: the tools are here, but a 1-node cluster did not start in %v (the Slurm scenarios would fail): %v\n",
			p, os.Geteuid(), time.Since(start).Round(time.Millisecond), err)
		return
	}
	up := time.Since(start)
	if err := c.Close(); err != nil {
		fmt.Printf("%s a 1-node cluster started in %v, but its teardown failed: %v\n", p, up.Round(time.Millisecond), err)
		return
	}
	fmt.Printf("%s a 1-node cluster started in %v and was torn down: the Slurm scenarios will run (not under -race, by design)\n",
		p, up.Round(time.Millisecond))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: slurmtestctl up N DIR | slurmtestctl down DIR | slurmtestctl check")
	os.Exit(2)
}
