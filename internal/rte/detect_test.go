package rte

import (
	"testing"
	"time"
)

// The heartbeat settings reach the detector's configuration (moved from
// package mpi with the detector's start).
func TestHeartbeatsReachDetector(t *testing.T) {
	hb := Heartbeats{Period: 30 * time.Millisecond, Timeout: 400 * time.Millisecond, Incarnation: 1}
	dc := detectorConfig(hb, 2, 5)
	if dc.Period != hb.Period || dc.Timeout != hb.Timeout || dc.N != 5 || dc.Self != 2 || dc.Incarnation != 1 {
		t.Fatalf("detector config %+v from %+v", dc, hb)
	}
	if err := dc.Validate(); err != nil {
		t.Fatal(err)
	}
	if DefaultHeartbeatTimeout <= DefaultHeartbeatPeriod {
		t.Fatalf("default timeout %v not above the default period %v", DefaultHeartbeatTimeout, DefaultHeartbeatPeriod)
	}
}
