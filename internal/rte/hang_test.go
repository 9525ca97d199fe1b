package rte

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The runtime makes the hang report from its delegates: both ranks of a
// job blocked in a receive from each other, the reporter's watchdog asks
// the other rank (a ctl.Hang query answered by its Rank), writes one
// report naming both calls and what the delegate said of their
// communicator, and ends the job through End; the other rank never
// reports (it is not the lowest live member).
func TestRankHangReport(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 2
	j := newTestJob(n)
	defer j.close()
	done := make(chan struct{})
	ranks := make([]*Rank, n)
	outs := make([]*syncBuf, n)
	ended := make(chan string, n)
	for i := range n {
		cfg := j.config(i)
		cfg.Hang = HangDelegate{
			Members: func() []int { return []int{0, 1} },
			Comm: func(ctx uint32) (HangComm, bool) {
				return HangComm{Size: n, Lost: []int{1}, Acked: []int{1}, Revoked: true}, ctx == 9
			},
		}
		ranks[i] = NewRank(cfg)
		outs[i] = &syncBuf{wrote: make(chan struct{}, 16)}
	}
	for i := range n {
		ranks[i].Start()
		e := BlankCall("MPI_Recv", "MPI_COMM_WORLD", 9)
		e.Peer, e.PeerProc, e.Tag = int32(1-i), int32(1-i), 5
		ranks[i].Calls.Enter(&e)
	}
	for i := range n {
		i := i
		ranks[i].StartHang(HangWatch{Timeout: 20 * time.Millisecond, Output: outs[i], Done: done,
			End: func(reason string) { ended <- reason }})
	}
	select {
	case reason := <-ended:
		if !strings.Contains(reason, "hang report") {
			t.Fatalf("End's reason %q does not name the hang report", reason)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no hang report ended the job")
	}
	rep := outs[0].String()
	for _, want := range []string{"rank 0 in MPI_Recv from 1", "rank 1 in MPI_Recv from 0", "MPI_COMM_WORLD lost"} {
		if !strings.Contains(rep, want) {
			t.Errorf("the report does not say %q:\n%s", want, rep)
		}
	}
	for _, not := range []string{"nobody revoked it", "not acknowledged"} { // the delegate said revoked and acknowledged
		if strings.Contains(rep, not) {
			t.Errorf("the report says %q:\n%s", not, rep)
		}
	}
	if s := outs[1].String(); s != "" {
		t.Errorf("rank 1, not the reporter, wrote a report:\n%s", s)
	}
	if ranks[1].ReportHang("SIGQUIT") {
		t.Error("ReportHang at rank 1 (not the reporter) reported")
	}
	close(done)
}
