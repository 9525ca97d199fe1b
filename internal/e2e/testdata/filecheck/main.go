// Command filecheck writes a file collectively across real processes
// through a strided view (blocks of every rank interleaved) and checks it
// byte by byte. Mode "ok": every rank writes its blocks with WriteAtAll;
// rank 0 prints "result: filecheck ok np=N bytes=B". Mode "kill" (ULFM,
// np >= 3): rank 2 prints "filecheck: rank 2 opened" once every rank has
// opened the file (each sent it a message after) and SIGKILLs itself before the collective write; every
// survivor's WriteAtAll raises ErrProcFailed (no hang; or ErrRevoked once
// another survivor revoked the file), the survivors
// revoke the file, acknowledge the failure (File.GetFailed), close it
// (Close succeeds once every survivor acknowledged), shrink, reopen it on
// the shrunk communicator and rewrite the layout of np-1 ranks; rank 0
// checks the file byte by byte and prints "result: filecheck rewritten
// np=N-1 bytes=B". Mode "runthrough" (np >= 3): the same kill, then
// WriteAtAll raises ErrRankFailStop, File.Validate recognises rank 2, the
// collective write runs over the survivors (rank 2's blocks stay zero),
// and rank 0 prints "result: filecheck runthrough ok bytes=B".
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ftmpi/ftmpi/mpi"
)

const blk, rounds = 16, 32 // int64 per block, blocks per rank

func fail(format string, a ...any) {
	fmt.Printf("filecheck: FAIL: %s\n", fmt.Sprintf(format, a...))
	os.Exit(1)
}

func check(what string, err error) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func val(rank, i int) int64 { return int64(rank)<<32 | int64(i+1) }

// setView gives rank r of c its blocks: blk int64 every blk*size.
func setView(f *mpi.File, c *mpi.Comm) error {
	vec, err := mpi.TypeVector(1, blk, blk, mpi.Int64)
	if err != nil {
		return err
	}
	ft, err := mpi.TypeCreateResized(vec, 0, 8*blk*c.Size())
	if err != nil {
		return err
	}
	if err := ft.Commit(); err != nil {
		return err
	}
	return f.SetView(int64(8*blk*c.Rank()), mpi.Int64, ft)
}

func mine(rank int) []int64 {
	x := make([]int64, blk*rounds)
	for i := range x {
		x[i] = val(rank, i)
	}
	return x
}

// expected is the file of np ranks' blocks; dead ranks' blocks are zero.
func expected(np int, dead int) []byte {
	var b bytes.Buffer
	for k := range rounds {
		for r := range np {
			for i := range blk {
				v := int64(0)
				if r != dead {
					v = val(r, k*blk+i)
				}
				binary.Write(&b, binary.LittleEndian, v)
			}
		}
	}
	return b.Bytes()
}

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	mode := "ok"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	// The file lives in a directory rank 0 makes.
	name := make([]byte, 256)
	if c.Rank() == 0 {
		dir, err := os.MkdirTemp("", "filecheck-")
		check("MkdirTemp", err)
		copy(name, dir)
	}
	check("Bcast", mpi.Bcast(c, name, 0))
	dir := string(bytes.TrimRight(name, "\x00"))
	path := filepath.Join(dir, "data")
	if mode == "runthrough" {
		c.EnableRunThrough()
	}
	f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, nil)
	check("FileOpen", err)
	check("SetView", setView(f, c))
	np := c.Size()
	switch mode {
	case "ok":
		check("WriteAtAll", mpi.WriteAtAll(f, 0, mine(c.Rank())))
		check("Close", f.Close())
		check("Barrier", c.Barrier())
		if c.Rank() == 0 {
			verify(path, expected(np, -1))
			fmt.Printf("result: filecheck ok np=%d bytes=%d\n", np, len(expected(np, -1)))
		}
	case "kill", "runthrough":
		// Every rank has opened the file and set its view: each tells
		// rank 2 it is past that point, and rank 2 dies once it heard
		// from all (not right after a collective that others may still
		// be finishing).
		if c.Rank() == 2 {
			for r := 0; r < np; r++ {
				if r != 2 {
					_, err := mpi.Recv(c, make([]byte, 1), r, 9)
					check("Recv arrived", err)
				}
			}
			fmt.Println("filecheck: rank 2 opened")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		check("Send arrived", mpi.Send(c, []byte{1}, 2, 9))
		// ULFM: ErrRevoked where another survivor revoked the file first.
		err := mpi.WriteAtAll(f, 0, mine(c.Rank()))
		if !errors.Is(err, mpi.ErrProcFailed) && (mode == "runthrough" || !errors.Is(err, mpi.ErrRevoked)) {
			fail("rank %d: WriteAtAll with a killed rank: %v, want ErrProcFailed", c.Rank(), err)
		}
		if mode == "runthrough" {
			g, err := f.Validate()
			check("Validate", err)
			if g.Size() != 1 {
				fail("Validate: %d failed processes", g.Size())
			}
			check("WriteAtAll after Validate", mpi.WriteAtAll(f, 0, mine(c.Rank())))
			check("Sync", f.Sync())
			check("Close", f.Close())
			if c.Rank() == 0 {
				verify(path, expected(np, 2))
				fmt.Printf("result: filecheck runthrough ok bytes=%d\n", len(expected(np, 2)))
			}
			break
		}
		f.Revoke()
		for i := 0; ; i++ {
			if _, err := f.GetFailed(); err != nil {
				fail("GetFailed: %v", err)
			}
			err := f.Close()
			if err == nil || errors.Is(err, mpi.ErrRevoked) {
				break
			}
			if !errors.Is(err, mpi.ErrProcFailed) || i == 50 {
				fail("rank %d: Close: %v", c.Rank(), err)
			}
		}
		c.Revoke()
		s, err := c.Shrink()
		check("Shrink", err)
		f, err = mpi.FileOpen(s, path, mpi.ModeRdwr, nil)
		check("FileOpen after Shrink", err)
		check("SetView after Shrink", setView(f, s))
		check("WriteAtAll after Shrink", mpi.WriteAtAll(f, 0, mine(s.Rank())))
		check("SetSize", f.SetSize(int64(8*blk*rounds*s.Size())))
		check("Close", f.Close())
		check("Barrier", s.Barrier())
		if s.Rank() == 0 {
			verify(path, expected(s.Size(), -1))
			fmt.Printf("result: filecheck rewritten np=%d bytes=%d\n", s.Size(), len(expected(s.Size(), -1)))
		}
		fmt.Printf("filecheck: rank %d survived\n", c.Rank())
		c = s
	default:
		fail("unknown mode %q", mode)
	}
	if c.Rank() == 0 {
		os.RemoveAll(dir)
	}
	w.Finalize()
}

func verify(path string, want []byte) {
	got, err := os.ReadFile(path)
	check("ReadFile", err)
	if len(got) != len(want) {
		fail("the file has %d bytes, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			fail("byte %d is %#x, want %#x", i, got[i], want[i])
		}
	}
}
