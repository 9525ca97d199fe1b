package mpi

import "time"

// epoch is the origin of Wtime: the start of the process (a constant once
// the package is initialized, read-only after).
var epoch = time.Now()

// Wtime returns the elapsed wall-clock time in seconds since an arbitrary
// origin in the past, fixed for the life of the process (MPI_Wtime). It
// reads the monotonic clock, so differences of two calls are durations
// unaffected by changes of the system clock. Times of different processes
// are not comparable (WtimeIsGlobal is false).
func Wtime() float64 { return time.Since(epoch).Seconds() }

// Wtick returns the resolution of Wtime in seconds (MPI_Wtick): Go's
// monotonic clock counts nanoseconds.
func Wtick() float64 { return 1e-9 }

// WtimeIsGlobal is the value of MPI_WTIME_IS_GLOBAL: false, the clocks of
// the processes are not synchronized.
const WtimeIsGlobal = false
