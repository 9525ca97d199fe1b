package rte

import (
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/detector"
)

// The heartbeat detector's defaults, the API's Config defaults.
const (
	DefaultHeartbeatPeriod  = detector.DefaultPeriod
	DefaultHeartbeatTimeout = detector.DefaultTimeout
)

// Heartbeats are the settings of a rank's heartbeat detector.
type Heartbeats struct {
	Period, Timeout time.Duration
	// Incarnation is this process's incarnation (its heartbeats carry it).
	Incarnation int
}

// detectorConfig is the detector's configuration for process self among
// n with the settings hb.
func detectorConfig(hb Heartbeats, self, n int) detector.Config {
	dc := detector.DefaultConfig()
	dc.N, dc.Self, dc.Incarnation = n, self, hb.Incarnation
	dc.Period, dc.Timeout = hb.Period, hb.Timeout
	return dc
}

// StartDetector starts the heartbeat detector of this process
// (ftdrive.Failures.StartDetector) over ring, with failed the processes
// known failed; warm opens the notice overlay's connections in the
// background, and this process's link in the tree of the agreements of
// world (CommWorld's members, process ids in position order; nil: none).
func (r *Rank) StartDetector(hb Heartbeats, ring, failed []int, warm bool, world []int) error {
	return r.Fails.StartDetector(detectorConfig(hb, r.Proc, r.universe), ring, failed, warm, world)
}
