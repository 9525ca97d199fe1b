package mpi

import "github.com/ftmpi/ftmpi/internal/ft/detector"

// The heartbeat detector, the failure-notice broadcast and the turning of
// suspicions into failures are driven by internal/rte/ftdrive (World.rt.Fails).

// detectorConfig is the heartbeat detector's configuration for process
// rank among size, incarnation inc.
func detectorConfig(cfg Config, rank, size, inc int) detector.Config {
	dc := detector.DefaultConfig()
	dc.N, dc.Self, dc.Incarnation = size, rank, inc
	dc.Period, dc.Timeout = cfg.HeartbeatPeriod, cfg.HeartbeatTimeout
	return dc
}
