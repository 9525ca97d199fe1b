package rte

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/rte/dpm"
	"go.uber.org/goleak"
)

// The runtime owns connect/accept's port table and its ctl.Port frames
// (the API registers no handler): a connect to a process that never made
// its table is refused by the runtime ("not open"), Ports makes the table
// once from the delegate (its job in the port names), and a connect to a
// closed port of it is refused by that table.
func TestRankPorts(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := newTestJob(2)
	defer j.close()
	var rs [2]*Rank
	for i := range rs {
		cfg := j.config(i)
		cfg.Ports = PortDelegate{Job: func() string { return "job-x" }, Code: func(error) int { return 99 }}
		rs[i] = NewRank(cfg)
		rs[i].Start()
	}
	connect := func(port string) error {
		t := rs[1].portTable()
		_, _, err := t.Connect(port, t.Mine([]int{1}, nil), dpm.Cancel{Stop: j.stop, Deadline: time.After(20 * time.Second)}) // before the runtime took ctl.Port: no answer, ErrPort "timed out"
		return err
	}
	unopened := dpm.PortName{Job: "job-x", Proc: 0, Port: 1}.String()
	if err := connect(unopened); !errors.Is(err, dpm.ErrPort) || !strings.Contains(err.Error(), "not open") {
		t.Fatalf("connect to a process without a table: %v, want a refusal (not open)", err)
	}
	tab := rs[0].portTable()
	if rs[0].portTable() != tab {
		t.Fatal("Ports made a second table")
	}
	port := tab.Open()
	if pn, err := dpm.ParsePort(port); err != nil || pn.Job != "job-x" || pn.Proc != 0 {
		t.Fatalf("port %q (%+v, %v): want job-x's, of process 0", port, pn, err)
	}
	if err := tab.Close(port); err != nil {
		t.Fatal(err)
	}
	if err := connect(port); !errors.Is(err, dpm.ErrPort) {
		t.Fatalf("connect to a closed port: %v, want ErrPort", err)
	}
}

// IntercommCreate's endpoint exchange: without sockets no endpoint is
// known, and the encoding decodes to none; a malformed encoding is an
// error, not a panic.
func TestEndpointsCodec(t *testing.T) {
	raw := EndpointsOf(nil, []int{0, 1})
	if eps, err := dpm.DecodeEndpoints(raw); err != nil || len(eps) != 0 {
		t.Fatalf("endpoints without sockets: %v, %v", eps, err)
	}
	r := &Rank{Proc: 0}
	if err := r.AddEncodedEndpoints(nil, raw); err != nil {
		t.Fatal(err)
	}
	if err := r.AddEncodedEndpoints(nil, []byte("{not")); err == nil {
		t.Fatal("a malformed encoding added")
	}
}
