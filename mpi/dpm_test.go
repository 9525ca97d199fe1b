package mpi_test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// serverClient splits c into a server group (world ranks [0, cut)) and a
// client group (the rest); the server root (local rank 0) opens a port and
// publishes it as service, the clients look it up after a barrier on c,
// and both sides build the intercommunicator (the clients' root is their
// local rank croot).
func serverClient(w *mpi.World, c *mpi.Comm, cut, croot int, service string) (local, ic *mpi.Comm, server bool, err error) {
	server = c.Rank() < cut
	color := 1
	if server {
		color = 0
	}
	local, err = c.Split(color, c.Rank())
	if err != nil {
		return nil, nil, server, err
	}
	local.SetErrhandler(mpi.ErrorsReturn)
	var port string
	if server && local.Rank() == 0 {
		if port, err = w.OpenPort(nil); err != nil {
			return
		}
		if err = w.PublishName(service, nil, port); err != nil {
			return
		}
	}
	if err = c.Barrier(); err != nil { // published before any lookup
		return
	}
	if server {
		ic, err = local.Accept(port, nil, 0)
		if local.Rank() == 0 {
			if uerr := w.UnpublishName(service, nil, port); uerr != nil && err == nil {
				err = uerr
			}
			if cerr := w.ClosePort(port); cerr != nil && err == nil {
				err = cerr
			}
		}
		return
	}
	if local.Rank() == croot {
		if port, err = w.LookupName(service, nil); err != nil {
			return
		}
	}
	ic, err = local.Connect(port, nil, croot)
	return
}

// MPI-4.1 11.8.3: Accept and Connect give both groups an
// intercommunicator; point-to-point, collectives, Agree and Disconnect
// work on it.
func TestConnectAccept(t *testing.T) {
	const n, cut = 5, 2
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		_, ic, server, err := serverClient(w, c, cut, 1, "svc")
		if err != nil {
			return err
		}
		ic.SetErrhandler(mpi.ErrorsReturn)
		mine, other := span(0, cut), span(cut, n)
		if !server {
			mine, other = other, mine
		}
		if !ic.IsInter() || !slices.Equal(ic.Group().WorldRanks(), mine) || !slices.Equal(ic.RemoteGroup().WorldRanks(), other) {
			return fmt.Errorf("groups %v / %v", ic.Group().WorldRanks(), ic.RemoteGroup().WorldRanks())
		}
		// Point to point: each server rank r sends to client rank r.
		if server {
			if err := mpi.Send(ic, []int{100 + ic.Rank()}, ic.Rank(), 7); err != nil {
				return err
			}
		} else if ic.Rank() < cut {
			got := []int{0}
			if _, err := mpi.Recv(ic, got, ic.Rank(), 7); err != nil || got[0] != 100+ic.Rank() {
				return fmt.Errorf("recv %v %v", got, err)
			}
		}
		// A collective across the groups: the server root broadcasts.
		v := []int{0}
		root := mpi.ProcNull
		switch {
		case server && ic.Rank() == 0:
			root, v[0] = mpi.Root, 42
		case !server:
			root = 0
		}
		if err := mpi.Bcast(ic, v, root); err != nil {
			return err
		}
		if !server && v[0] != 42 {
			return fmt.Errorf("bcast got %d", v[0])
		}
		// Agree on an intercommunicator: the AND of the remote group's flags.
		flag, err := ic.Agree(server || c.Rank() != 3)
		if err != nil {
			return err
		}
		if server && flag {
			return fmt.Errorf("server agreed true, want false (client rank 3 said false)")
		} else if !server && !flag {
			return fmt.Errorf("client agreed false, want true")
		}
		return ic.Disconnect()
	})
}

// MPI-4.1 11.8.4: the name service.
func TestNameService(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			port, err := w.OpenPort(nil)
			if err != nil {
				return err
			}
			if err := w.PublishName("a", nil, port); err != nil {
				return err
			}
			if err := w.PublishName("a", nil, port); !errors.Is(err, mpi.ErrService) {
				return fmt.Errorf("publish twice: %v, want ErrService", err)
			}
			// Any string is published (MPICH's spawn/namepub publishes
			// "otherhost:122"); it is checked where it is used.
			if err := w.PublishName("b", nil, "otherhost:122"); err != nil {
				return fmt.Errorf("publish of a string not made by OpenPort: %v", err)
			}
			if p, err := w.LookupName("b", nil); err != nil || p != "otherhost:122" {
				return fmt.Errorf("lookup of it: %q %v", p, err)
			}
			w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
			if _, err := w.CommSelf().Connect("otherhost:122", nil, 0); !errors.Is(err, mpi.ErrPort) {
				return fmt.Errorf("connect to it: %v, want ErrPort", err)
			}
			if err := w.UnpublishName("b", nil, "otherhost:122"); err != nil {
				return fmt.Errorf("unpublish of it: %v", err)
			}
			if err := w.ClosePort("ftmpi-port:{}"); !errors.Is(err, mpi.ErrPort) {
				return fmt.Errorf("close of a malformed port: %v, want ErrPort", err)
			}
			if err := c.Barrier(); err != nil {
				return err
			}
			if err := c.Barrier(); err != nil { // rank 1 looked up
				return err
			}
			if err := w.UnpublishName("a", nil, port+"x"); !errors.Is(err, mpi.ErrService) {
				return fmt.Errorf("unpublish with another port: %v, want ErrService", err)
			}
			if err := w.UnpublishName("a", nil, port); err != nil {
				return err
			}
			if err := w.UnpublishName("a", nil, port); !errors.Is(err, mpi.ErrService) {
				return fmt.Errorf("unpublish twice: %v, want ErrService", err)
			}
			if err := w.ClosePort(port); err != nil {
				return err
			}
			if err := w.ClosePort(port); !errors.Is(err, mpi.ErrPort) {
				return fmt.Errorf("close twice: %v, want ErrPort", err)
			}
			return c.Barrier()
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		port, err := w.LookupName("a", nil)
		if err != nil {
			return err
		}
		if err := w.ClosePort(port); !errors.Is(err, mpi.ErrPort) {
			return fmt.Errorf("close of another process's port: %v, want ErrPort", err)
		}
		if _, err := w.LookupName("nobody", nil); !errors.Is(err, mpi.ErrName) {
			return fmt.Errorf("lookup of an unknown name: %v, want ErrName", err)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil { // rank 0 unpublished and closed
			return err
		}
		if _, err := w.LookupName("a", nil); !errors.Is(err, mpi.ErrName) {
			return fmt.Errorf("lookup after unpublish: %v, want ErrName", err)
		}
		// Connect to a closed port: refused.
		w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
		if _, err := w.CommSelf().Connect(port, nil, 0); !errors.Is(err, mpi.ErrPort) {
			return fmt.Errorf("connect to a closed port: %v, want ErrPort", err)
		}
		return nil
	})
}

// Bad ports and arguments: clear errors, no hang.
func TestConnectBadPorts(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		self := w.CommSelf()
		self.SetErrhandler(mpi.ErrorsReturn)
		for _, p := range []string{"", "tcp://x", "ftmpi-port:nonsense"} {
			if _, err := self.Connect(p, nil, 0); !errors.Is(err, mpi.ErrPort) {
				return fmt.Errorf("connect to %q: %v, want ErrPort", p, err)
			}
		}
		if _, err := c.Connect("x", nil, 5); !errors.Is(err, mpi.ErrRoot) {
			return fmt.Errorf("root out of range: %v, want ErrRoot", err)
		}
		port, err := w.OpenPort(nil)
		if err != nil {
			return err
		}
		defer w.ClosePort(port)
		if _, err := self.Connect(port, nil, 0); !errors.Is(err, mpi.ErrPort) {
			return fmt.Errorf("connect to its own port: %v, want ErrPort", err)
		}
		info := mpi.NewInfo()
		info.Set("timeout", "0.05")
		if _, err := self.Accept(port, info, 0); !errors.Is(err, mpi.ErrPort) {
			return fmt.Errorf("accept with a timeout and no connector: %v, want ErrPort", err)
		}
		info.Set("timeout", "soon")
		if _, err := self.Accept(port, info, 0); !errors.Is(err, mpi.ErrInfoValue) {
			return fmt.Errorf("accept with a bad timeout: %v, want ErrInfoValue", err)
		}
		return nil
	})
}

// MPI-4.1 11.8.5 (MPI_Comm_join) over net.Pipe and a loopback TCP pair.
func TestJoin(t *testing.T) {
	for _, kind := range []string{"pipe", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			var a, b net.Conn
			if kind == "pipe" {
				a, b = net.Pipe()
			} else {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Skipf("no loopback TCP: %v", err)
				}
				done := make(chan net.Conn, 1)
				go func() {
					c, _ := ln.Accept()
					done <- c
				}()
				if a, err = net.Dial("tcp", ln.Addr().String()); err != nil {
					t.Fatal(err)
				}
				b = <-done
				ln.Close()
				if b == nil {
					t.Fatal("accept failed")
				}
			}
			defer a.Close()
			defer b.Close()
			run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
				if c.Rank() == 1 {
					return nil
				}
				end := a
				if c.Rank() == 2 {
					end = b
				}
				ic, err := w.Join(end)
				if err != nil {
					return err
				}
				ic.SetErrhandler(mpi.ErrorsReturn)
				if ic.Size() != 1 || ic.RemoteSize() != 1 {
					return fmt.Errorf("join: sizes %d/%d", ic.Size(), ic.RemoteSize())
				}
				other := 2 - c.Rank()
				if got := ic.RemoteGroup().WorldRanks(); !slices.Equal(got, []int{other}) {
					return fmt.Errorf("remote group %v, want [%d]", got, other)
				}
				out, in := []int{c.Rank()}, []int{-1}
				if _, err := mpi.Sendrecv(ic, out, 0, 1, in, 0, 1); err != nil || in[0] != other {
					return fmt.Errorf("sendrecv over the joined intercommunicator: %v %v", in, err)
				}
				return ic.Disconnect()
			})
		})
	}
}

// Join of something that is not ftmpi: an error naming it, no hang.
func TestJoinBadPeer(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		buf := make([]byte, 256)
		b.Read(buf)
		b.Write([]byte("hello, I am not MPI\n"))
		b.Close()
	}()
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		if _, err := w.Join(a); err == nil || !errors.Is(err, mpi.ErrOther) {
			return fmt.Errorf("join with a non-MPI peer: %v, want ErrOther", err)
		}
		return nil
	})
}
