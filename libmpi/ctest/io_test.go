package ctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIO: MPI-IO from C at np 4 (io_basic.c): a collective write through
// per-rank views read back as exact bytes and through another rank's
// view, positions and offsets, nonblocking and split collective accesses,
// the shared file pointer in rank order (write_ordered, read_ordered) and
// in a token order (write_shared), MPI_ERR_NO_SUCH_FILE returned; a
// strided memory datatype written through an interleaved filetype, read
// back whole; a file error handler written in C.
func TestIO(t *testing.T) {
	bin := Compile(t, "testdata/io_basic.c")
	dir := t.TempDir()
	p1, p2, p3 := filepath.Join(dir, "blocks"), filepath.Join(dir, "shared"), filepath.Join(dir, "interleaved")
	r := runC(t, "4", nil, bin, p1, p2, p3)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"rank 0: missing class 42 want 42",
		"rank 0: wrote 4 pos 4 byteoff 8 size 64 return 1 amode 1",
		"rank 3: wrote 4 pos 4 byteoff 56 size 64 return 1 amode 1",
		"rank 0: next block 10 11 12 13 count 4",
		"rank 3: next block 0 1 2 3 count 4",
		"result: file 0 1 2 3 10 11 12 13 20 21 22 23 30 31 32 33 bytes 64 view 0 1 1 native",
		"result: tail bytes 4",
		"rank 0: nonblocking wrote 4 read 1001 (4) split 1001",
		"rank 3: nonblocking wrote 4 read 1000 (4) split 1000",
		"rank 1: closed 1",
		"rank 0: ordered back a 1",
		"rank 3: ordered back dddd 4",
		"result: shared pos 18",
		"result: shared abbcccddddR0R1R2R3 size 18",
		"rank 0: interleaved wrote 6 back 0 1 2 3 4 5",
		"rank 3: interleaved wrote 6 back 300 301 302 303 304 305",
		"rank 2: file errh calls 2 last 35 same 1 rc 1",
		"result: interleaved 0 1 100 101 200 201 300 301 2 3 102 103 202 203 302 303 4 5 104 105 204 205 304 305",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	b, err := os.ReadFile(p1)
	if err != nil || len(b) != 96 || b[4] != 1 || b[64] != 0xe8 || b[65] != 0x03 {
		t.Errorf("file %s: %v, %d bytes %v", p1, err, len(b), b)
	}
	if _, err := os.Stat(p2); !os.IsNotExist(err) {
		t.Errorf("MPI_MODE_DELETE_ON_CLOSE left %s: %v", p2, err)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestIODatarep: data representations from C at np 2 (io_datarep.c): an
// "external32" view writes big-endian ints collectively and reads them
// back; MPI_File_get_view names it; an unknown representation is
// MPI_ERR_UNSUPPORTED_DATAREP; a filetype with a negative displacement is
// MPI_ERR_IO.
func TestIODatarep(t *testing.T) {
	bin := Compile(t, "testdata/io_datarep.c")
	r := runC(t, "2", nil, bin, filepath.Join(t.TempDir(), "rep"))
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"rank 0: unknown datarep class 57 want 57",
		"rank 1: negative filetype class 35 want 35",
		"rank 0: view datarep external32",
		"rank 0: external32 back 1020305 -2",
		"rank 1: external32 back 1020304 -2",
		"result: bytes 01 02 03 04 ff ff ff fe 01 02 03 05 ff ff ff fe",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
