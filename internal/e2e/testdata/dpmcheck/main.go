// Command dpmcheck exercises connect/accept under ftmpirun for the
// end-to-end tests. Rank 0 prints one "result:" line.
//
//	rootkill  servers (ranks 0, 1) accept, clients (ranks 2, 3; root 3)
//	          connect; the client root is SIGKILLed by the launcher once
//	          the roots have found each other (its trace line), while it
//	          waits for rank 2, which enters Connect only after it saw the
//	          failure: every survivor gets ErrProcFailed, nobody hangs
//	join      ranks 0 and 1 join over a loopback TCP connection (rank 0
//	          listens, sends the address to rank 1) and exchange over the
//	          intercommunicator
//	spawn     the job publishes a port under a name and spawns 2 children
//	          (another job of the launcher), which look the name up,
//	          connect and exchange with the servers
package main

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dpmcheck rootkill|spawn")
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dpmcheck:", err)
		os.Exit(1)
	}
	w.CommWorld().SetErrhandler(mpi.ErrorsReturn)
	w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
	switch os.Args[1] {
	case "rootkill":
		rootkill(w)
	case "spawn":
		spawnServe(w)
	case "join":
		join(w)
	case "child":
		child(w)
	default:
		fmt.Fprintln(os.Stderr, "dpmcheck: unknown mode", os.Args[1])
		os.Exit(2)
	}
	w.Finalize()
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "dpmcheck:", err)
		os.Exit(1)
	}
}

func class(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, mpi.ErrProcFailed):
		return "procfailed"
	}
	return err.Error()
}

func rootkill(w *mpi.World) {
	c := w.CommWorld()
	server := c.Rank() < 2
	color := 1
	if server {
		color = 0
	}
	local, err := c.Split(color, c.Rank())
	must(err)
	local.SetErrhandler(mpi.ErrorsReturn)
	var port string
	if c.Rank() == 0 {
		port, err = w.OpenPort(nil)
		must(err)
		must(w.PublishName("rootkill", nil, port))
	}
	must(c.Barrier())
	var ic *mpi.Comm
	switch c.Rank() {
	case 0, 1:
		ic, err = local.Accept(port, nil, 0)
	case 2:
		// Enter only once the client root is dead: it is then stuck in
		// Connect waiting for this process when the kill lands.
		if _, rerr := mpi.Recv(c, []int{0}, 3, 5); !errors.Is(rerr, mpi.ErrProcFailed) {
			fmt.Fprintf(os.Stderr, "dpmcheck: receive from the client root: %v\n", rerr)
			os.Exit(1)
		}
		ic, err = local.Connect("", nil, 1)
	case 3:
		port, err = w.LookupName("rootkill", nil)
		must(err)
		info := mpi.NewInfo()
		must(info.Set("ftmpi_trace", "true")) // the launcher kills this process on the trace line
		ic, err = local.Connect(port, info, 1)
		fmt.Fprintf(os.Stderr, "dpmcheck: the client root survived: %v %v\n", ic, err)
		os.Exit(1)
	}
	fmt.Printf("dpmcheck: rank %d: intercomm=%v err=%s\n", c.Rank(), ic != nil, class(err))
	if c.Rank() == 0 {
		must(w.UnpublishName("rootkill", nil, port))
		must(w.ClosePort(port))
		fmt.Printf("result: rootkill server-root=%s\n", class(err))
	}
}

func spawnServe(w *mpi.World) {
	c := w.CommWorld()
	var port string
	var err error
	if c.Rank() == 0 {
		port, err = w.OpenPort(nil)
		must(err)
		must(w.PublishName("dpm-svc", nil, port))
	}
	parent, err := c.Spawn("", []string{"child"}, 2, 0)
	must(err)
	ic, err := c.Accept(port, nil, 0)
	must(err)
	ic.SetErrhandler(mpi.ErrorsReturn)
	// Each server sends its rank+1 to the client of the same rank, which
	// answers with ten times it; Allreduce across the groups gives each
	// group the sum of the other's contributions.
	must(mpi.Send(ic, []int{c.Rank() + 1}, c.Rank(), 1))
	got := []int{0}
	_, err = mpi.Recv(ic, got, c.Rank(), 2)
	must(err)
	sum := []int{0}
	must(mpi.Allreduce(ic, []int{0}, sum, mpi.Sum))
	served := ic.RemoteSize()
	must(ic.Disconnect())
	must(parent.Disconnect())
	if c.Rank() == 0 {
		must(w.UnpublishName("dpm-svc", nil, port))
		must(w.ClosePort(port))
		fmt.Printf("result: spawn served=%d reply0=%d sum=%d\n", served, got[0], sum[0])
	}
}

func child(w *mpi.World) {
	c := w.CommWorld()
	var port string
	var err error
	if c.Rank() == 0 {
		if _, err := w.LookupName("nobody", nil); !errors.Is(err, mpi.ErrName) {
			fmt.Fprintf(os.Stderr, "dpmcheck: lookup of an unknown name through the launcher: %v, want ErrName\n", err)
			os.Exit(1)
		}
		if err := w.PublishName("dpm-svc", nil, "ftmpi-port:{\"proc\":1,\"port\":1}"); !errors.Is(err, mpi.ErrService) {
			fmt.Fprintf(os.Stderr, "dpmcheck: publish of a name the parents published: %v, want ErrService\n", err)
			os.Exit(1)
		}
		port, err = w.LookupName("dpm-svc", nil)
		must(err)
	}
	ic, err := c.Connect(port, nil, 0)
	must(err)
	ic.SetErrhandler(mpi.ErrorsReturn)
	v := []int{0}
	_, err = mpi.Recv(ic, v, c.Rank(), 1)
	must(err)
	must(mpi.Send(ic, []int{10 * v[0]}, c.Rank(), 2))
	must(mpi.Allreduce(ic, []int{v[0]}, []int{0}, mpi.Sum))
	must(ic.Disconnect())
	must(w.Parent().Disconnect())
}

func join(w *mpi.World) {
	c := w.CommWorld()
	var conn net.Conn
	switch c.Rank() {
	case 0:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		must(err)
		must(mpi.SendValue(c, ln.Addr().String(), 1, 3))
		conn, err = ln.Accept()
		must(err)
		ln.Close()
	case 1:
		addr, _, err := mpi.RecvValue[string](c, 0, 3)
		must(err)
		conn, err = net.Dial("tcp", addr)
		must(err)
	default:
		return
	}
	defer conn.Close()
	ic, err := w.Join(conn)
	must(err)
	ic.SetErrhandler(mpi.ErrorsReturn)
	in := []int{-1}
	_, err = mpi.Sendrecv(ic, []int{100 + c.Rank()}, 0, 1, in, 0, 1)
	must(err)
	remote := ic.RemoteGroup().WorldRanks()
	must(ic.Disconnect())
	if c.Rank() == 0 {
		fmt.Printf("result: join remote=%v got=%d\n", remote, in[0])
	}
}
