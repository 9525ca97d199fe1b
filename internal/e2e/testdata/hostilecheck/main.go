// Command hostilecheck is the job of the hostile-member test: rank 2 is
// not an MPI rank but a client that knows the job's secret (it reads it
// as a rank does, boot.FromEnv). It joins the bootstrap with an address
// nobody can reach, then opens an authenticated connection to rank 0 and
// to rank 1 and sends each a malformed frame (rank 0: an unknown frame
// kind, rank 1: a whole frame of 4 MiB), waits until both closed their
// connection, prints "hostile: both connections closed" and finalizes.
// Ranks 0 and 1 exchange messages meanwhile; rank 0 prints one "result:"
// line.
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/wireauth"
	"github.com/ftmpi/ftmpi/mpi"
)

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "hostilecheck: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if os.Getenv(boot.EnvRank) == "2" {
		hostile()
		return
	}
	w, err := mpi.Init()
	if err != nil {
		die("%v", err)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	rank := c.Rank()
	sum := int64(0)
	for i := 0; i < 100; i++ {
		got := []int64{0}
		if _, err := mpi.Sendrecv(c, []int64{int64(rank + i)}, 1-rank, 3, got, 1-rank, 3); err != nil {
			die("rank %d: sendrecv: %v", rank, err)
		}
		sum += got[0]
	}
	if rank == 0 {
		fmt.Printf("result: ranks 0 and 1 exchanged sum=%d\n", sum)
	}
	if err := w.Finalize(); err != nil {
		die("rank %d: finalize: %v", rank, err)
	}
}

func hostile() {
	info, ok, err := boot.FromEnv()
	if err != nil || !ok || info.Auth == nil {
		die("no identity or secret: ok=%v err=%v", ok, err)
	}
	cl, err := boot.Connect(info)
	if err != nil {
		die("connect: %v", err)
	}
	defer cl.Close()
	eps, err := cl.Exchange(boot.Endpoint{Addrs: map[string]string{"unix": "/nonexistent/hostile.sock"}})
	if err != nil {
		die("exchange: %v", err)
	}
	bad := []transport.Header{{Kind: 9, Ctx: 0, Tag: 3}, {Kind: 1, N: 4 << 20}}
	for to := 0; to < 2; to++ {
		nc, err := net.DialTimeout("unix", eps[to].Addrs["unix"], 10*time.Second)
		if err != nil {
			die("dial rank %d: %v", to, err)
		}
		nc.SetDeadline(time.Now().Add(60 * time.Second))
		if err := wireauth.Dial(nc, info.Auth, wireauth.Hello{Proto: wireauth.ProtoSock, From: 2, To: uint64(to)}); err != nil {
			die("handshake with rank %d: %v", to, err)
		}
		var reply [1]byte
		if _, err := io.ReadFull(nc, reply[:]); err != nil || reply[0] != 1 {
			die("rank %d did not accept: %v %v", to, reply, err)
		}
		var b [transport.HeaderSize]byte
		bad[to].Encode(b[:])
		wire := append(b[:], binary.LittleEndian.AppendUint64(nil, 7)...)
		nc.Write(wire)
		if _, err := io.Copy(io.Discard, nc); err != nil {
			die("rank %d did not close the connection: %v", to, err)
		}
		nc.Close()
	}
	fmt.Println("hostile: both connections closed")
	if err := cl.Finalize(); err != nil {
		die("finalize: %v", err)
	}
}
