// The race detector's instrumentation allocates: allocation counts are
// checked without it.

//go:build !race

package main

import (
	"testing"
	"unsafe"
)

// Go tests of the binding itself (the C scenarios are in ctest): they call
// the exported functions as C does, on a singleton MPI_COMM_SELF.

const tByte = 0x247 // MPI_BYTE

// testInit starts MPI once for the tests (a singleton).
func testInit(t testing.TB) {
	var flag _Ctype_int
	ftmpi_Initialized(&flag)
	if flag != 0 {
		return
	}
	if rc := ftmpi_Init(nil, nil); rc != cSuccess {
		t.Fatalf("MPI_Init: %d", rc)
	}
}

// The binding of the point-to-point hot path allocates nothing of its own:
// blocking MPI_Send and MPI_Recv (with a status) nothing at all, MPI_Wait
// and MPI_Test nothing on top of what the request's start allocated (the
// status of a completion stayed on the heap: 1 allocation per call).
func TestP2PBindingAllocs(t *testing.T) {
	testInit(t)
	buf := make([]byte, 8)
	p := unsafe.Pointer(&buf[0])
	var req _Ctype_uintptr_t
	var st _Ctype_MPI_Status
	var flag _Ctype_int
	check := func(what string, rc _Ctype_int) {
		if rc != cSuccess {
			t.Fatalf("%s: error %d", what, rc)
		}
	}
	if n := testing.AllocsPerRun(500, func() {
		check("MPI_Send", ftmpi_Send(p, 1, tByte, 0, 1, hSelf))
		check("MPI_Recv", ftmpi_Recv(p, 1, tByte, 0, 1, hSelf, &st))
	}); n != 0 {
		t.Errorf("MPI_Send + MPI_Recv: %v allocations, want 0", n)
	}
	started := testing.AllocsPerRun(500, func() {
		check("MPI_Isend", ftmpi_Isend(p, 1, tByte, 0, 1, hSelf, &req))
		check("MPI_Recv", ftmpi_Recv(p, 1, tByte, 0, 1, hSelf, &st))
		check("MPI_Request_free", ftmpi_Request_free(&req))
	})
	for _, c := range []struct {
		name string
		end  func()
	}{
		{"MPI_Wait", func() { check("MPI_Wait", ftmpi_Wait(&req, &st)) }},
		{"MPI_Test", func() {
			check("MPI_Test", ftmpi_Test(&req, &flag, &st))
			if flag == 0 {
				t.Fatal("MPI_Test: a send its receive matched is not complete")
			}
		}},
	} {
		n := testing.AllocsPerRun(500, func() {
			check("MPI_Isend", ftmpi_Isend(p, 1, tByte, 0, 1, hSelf, &req))
			check("MPI_Recv", ftmpi_Recv(p, 1, tByte, 0, 1, hSelf, &st))
			c.end()
		})
		if n > started {
			t.Errorf("MPI_Isend + MPI_Recv + %s: %v allocations, %v without the %s: it allocates", c.name, n, started, c.name)
		}
	}
}

// BenchmarkSendRecvSelf is a blocking MPI_Send and MPI_Recv on
// MPI_COMM_SELF through the binding.
func BenchmarkSendRecvSelf(b *testing.B) {
	testInit(b)
	buf := make([]byte, 8)
	p := unsafe.Pointer(&buf[0])
	var st _Ctype_MPI_Status
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ftmpi_Send(p, 1, tByte, 0, 1, hSelf)
		ftmpi_Recv(p, 1, tByte, 0, 1, hSelf, &st)
	}
}
