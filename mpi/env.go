package mpi

import (
	"os"
	"runtime"
	"runtime/debug"
)

// Inquiry of the environment (MPI-4.1 9.1): versions, the processor name,
// thread levels.

// The MPI standard level ftmpi claims (MPI_VERSION, MPI_SUBVERSION).
const (
	Version    = 3
	Subversion = 1
)

// GetVersion returns the MPI standard level ftmpi claims (MPI_Get_version):
// 3.1. ftmpi follows the MPI-3.1 interface with some MPI-4 calls
// (persistent collectives, DupWithInfo, MPI-4 error semantics of ULFM) but
// claims no MPI-4.0: sessions, partitioned communication and the MPI-4
// tool events are not provided. Parts of MPI-3.1 are not provided yet
// either (one-sided communication, I/O): the level says which standard
// the calls follow.
func GetVersion() (version, subversion int) { return Version, Subversion }

// GetLibraryVersion describes the library (MPI_Get_library_version): the
// ftmpi module version as the Go build recorded it ("(devel)" for a build
// inside the module itself), the standard level and the Go version.
func GetLibraryVersion() string {
	v := "(unknown)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = moduleVersion(bi)
	}
	return "ftmpi " + v + " (MPI 3.1, fault tolerance: ULFM and run-through; " + runtime.Version() + ")"
}

// moduleVersion finds the ftmpi module among the build's modules.
func moduleVersion(bi *debug.BuildInfo) string {
	const path = "github.com/ftmpi/ftmpi"
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return m.Version + " => " + m.Replace.Path
			}
			return m.Version
		}
	}
	return "(unknown)"
}

// GetProcessorName returns the name of the host this process runs on
// (MPI_Get_processor_name): its host name. The ranks of an in-process job
// (Run) all return this process's host name.
func GetProcessorName() (string, error) {
	name, err := os.Hostname()
	if err != nil {
		return "", newErr(ErrOther, "MPI_Get_processor_name", nil, NoPeer, "%v", err)
	}
	return name, nil
}

// Thread support levels (MPI_THREAD_*), in increasing order.
const (
	ThreadSingle     = 0 // MPI_THREAD_SINGLE
	ThreadFunneled   = 1 // MPI_THREAD_FUNNELED
	ThreadSerialized = 2 // MPI_THREAD_SERIALIZED
	ThreadMultiple   = 3 // MPI_THREAD_MULTIPLE
)

// QueryThread returns the thread support level (MPI_Query_thread):
// always ThreadMultiple. Every call may be made from any goroutine,
// concurrently with others (a single Request is not waited on from two
// goroutines at once, as MPI requires).
func QueryThread() int { return ThreadMultiple }

// InitThread is Init that also takes the thread level the program needs
// and returns the level provided (MPI_Init_thread): always ThreadMultiple,
// which satisfies any required level. A required level outside
// ThreadSingle..ThreadMultiple is an ErrArg error and does not initialise.
//
// MPI_Is_thread_main has no counterpart: goroutines are not bound to
// threads, and no goroutine is special to ftmpi.
func InitThread(required int) (*World, int, error) {
	if required < ThreadSingle || required > ThreadMultiple {
		return nil, 0, newErr(ErrArg, "MPI_Init_thread", nil, NoPeer, "required thread level %d out of range [%d, %d]", required, ThreadSingle, ThreadMultiple)
	}
	w, err := Init()
	if err != nil {
		return nil, 0, err
	}
	return w, ThreadMultiple, nil
}
