package ctest

import (
	"strings"
	"testing"
)

// TestThreadMultiple: four C threads per rank send and receive at once.
func TestThreadMultiple(t *testing.T) {
	bin := Compile(t, "testdata/threads.c", "-pthread")
	r := runC(t, "2", nil, bin)
	wantResult(t, r, "result: threads 4 ranks 2 ok 1 main 1")
}

// TestCxx: the headers compile as C++ and the ABI's handle values hold.
func TestCxx(t *testing.T) {
	bin := Compile(t, "testdata/cxx_hello.cc")
	r := runC(t, "3", nil, bin)
	wantResult(t, r, "result: c++ sum 3 abi 1.0 world 0x101 int 0x209")
}

// TestErrors: argument errors carry the MPI class and a message naming
// what was wrong; C error handlers are called with the communicator and
// the code; MPI_ERRORS_ARE_FATAL ends the job with an error naming the call.
func TestErrors(t *testing.T) {
	bin := Compile(t, "testdata/errors.c")
	r := runC(t, "1", nil, bin)
	if r.Code == 0 || strings.Contains(r.Stdout, "not reached") {
		t.Fatalf("MPI_ERRORS_ARE_FATAL did not end the job (exit %d)\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"rank: class 6 want 6 ok | MPI_Send on MPI_COMM_WORLD",
		"count: class 2 want 2 ok | MPI_Send: MPI_ERR_COUNT: invalid count: negative count -1",
		"buffer: class 1 want 1 ok | MPI_Send: MPI_ERR_BUFFER: invalid buffer: null buffer with 3 elements",
		"type: class 3 want 3 ok | MPI_Send: MPI_ERR_TYPE: datatype mismatch: MPI_DATATYPE_NULL is not a datatype",
		"comm: class 5 want 5 ok | MPI_Send: MPI_ERR_COMM: invalid communicator: invalid communicator handle 0x7001 (not a handle of this library)",
		"tag: class 4 want 4 ok | MPI_Send: MPI_ERR_TAG: invalid tag: tag -5 is negative (valid tags are 0..MPI_TAG_UB",
		"request: class 7 want 7 ok",
		"unsupported: class 58 want 58 ok | MPI_Get_hw_resource_info: MPI_ERR_UNSUPPORTED_OPERATION",
		"handler: calls 2 last 16 rc 6 world 1",
		"get_errhandler: same 1",
		"freed: null 1",
		"user: class-ok 1 string my own error",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !strings.Contains(r.Stderr, "MPI_ERRORS_ARE_FATAL") || !strings.Contains(r.Stderr, "MPI_Send") {
		t.Errorf("the fatal error is not reported on stderr")
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestUntypedMatch: MPI_PACKED matches any type and element types are not
// compared between a C send and its receive (MPI's rule for C); a message
// longer than the receive is still MPI_ERR_TRUNCATE.
func TestUntypedMatch(t *testing.T) {
	bin := Compile(t, "testdata/untyped.c")
	r := runC(t, "2", nil, bin)
	wantResult(t, r, "result: untyped ok 1 truncate 1")
}

// TestMprobe: matched probes and receives from C (MPI_Mprobe, MPI_Improbe,
// MPI_Mrecv, MPI_Imrecv, MPI_MESSAGE_NO_PROC).
func TestMprobe(t *testing.T) {
	bin := Compile(t, "testdata/mprobe.c")
	r := runC(t, "2", nil, bin)
	for _, want := range []string{"result: mprobe count 3 a 1 2 3 tag -31 b 7 8 nulled 1 noproc 1",
		"result: vector 11 12 0 13 14 count 1 imrecv 11 12 0 13 14"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Fatalf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
		}
	}
}

// TestRemoveErrorClasses: MPI_Remove_error_class/code/string (MPI-4.1),
// and MPICH's MPIX_Delete_error_* names.
func TestRemoveErrorClasses(t *testing.T) {
	bin := Compile(t, "testdata/adderr.c")
	r := runC(t, "1", nil, bin)
	wantResult(t, r, "result: busy 1 string-removed 1 empty 1 code 1 class 1 again 1 mpix 1")
}

// TestBigCountP2P: the MPI_Count forms of point-to-point and statuses.
func TestBigCountP2P(t *testing.T) {
	bin := Compile(t, "testdata/bigcount_p2p.c")
	r := runC(t, "2", nil, bin)
	wantResult(t, r, "result: bigcount w 4 5 6 n 3 u 4 5 status 3000000000 too-large 1")
}
