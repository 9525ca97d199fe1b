package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// Phases of a recovery, as wall-clock times (Unix nanoseconds) taken by
// the ranks; the job combines them with an Allreduce(MPI_MAX), so each is
// the moment the last rank concerned got there. 0: not applicable.
const (
	phDetected = iota // a survivor learnt of the failure (Reinit: its rollback began)
	phShrunk          // ULFM: revoke + shrink done at a survivor
	phSpawned         // ULFM: Comm.Spawn returned at a survivor (children initialised)
	phStarted         // a replacement process started (main); relaunch: every rank of the new job
	phInited          // a replacement's mpi.Init returned; relaunch: every rank's
	phRebuilt         // every rank holds the communicator of the recovered job
	phRestored        // every rank loaded the checkpoint
	nPhases
)

var phaseNames = [nPhases]string{"detected", "shrunk", "spawned", "started", "inited", "rebuilt", "restored"}

// timer collects this process's phase times.
type timer struct {
	t [nPhases]int64
}

func (t *timer) mark(ph int) { t.t[ph] = time.Now().UnixNano() }

func (t *timer) markAt(ph int, at time.Time) { t.t[ph] = at.UnixNano() }

// report is one JSON result line (cmd/ftmpi-bench style: name, impl, np,
// unit), printed by rank 0 once every rank has resumed.
type report struct {
	Name     string   `json:"name"`
	Impl     string   `json:"impl"`
	Mode     string   `json:"mode"`
	NP       int      `json:"np"`
	M        int      `json:"m"`
	Every    int      `json:"every"`
	FailAt   int      `json:"fail_at"`
	Victim   int      `json:"victim"`
	Restored int      `json:"restored_iter"` // the checkpoint the job went back to
	Recovery float64  `json:"recovery_ms"`   // kill -> every rank resumed (rank 0 done with the first iteration)
	Detect   *float64 `json:"detect_ms"`     // kill -> the last survivor knew
	// DetectFirst: kill -> the first survivor knew (not a phase: the
	// spread between it and Detect is the survivors' scheduling).
	DetectFirst *float64 `json:"detect_first_ms"`
	Shrink      *float64 `json:"shrink_ms"`  // ULFM: detected -> revoke + shrink done
	Respawn     *float64 `json:"respawn_ms"` // detected -> replacement(s) initialised (ULFM: Spawn returned)
	Rebuild     *float64 `json:"rebuild_ms"` // -> every rank holds the recovered communicator
	Load        *float64 `json:"load_ms"`    // -> every rank loaded the checkpoint
	Iter        *float64 `json:"iter_ms"`    // -> the first iteration done (rank 0)
	// At: every phase in ms after the kill.
	At   map[string]float64 `json:"at_ms"`
	Unit string             `json:"unit"`
}

// phases are the milestones of a recovery over all ranks: the latest
// time of each, and the earliest detection.
type phases struct {
	last        [nPhases]int64
	firstDetect int64 // the first survivor knew (0: unknown)
}

// gatherPhases combines every rank's phase times on c (one Allreduce with
// MPI_MAX; the earliest detection as the maximum of its negation).
func gatherPhases(c *mpi.Comm, t *timer) (phases, error) {
	var in, out [nPhases + 1]int64
	copy(in[:], t.t[:])
	in[nPhases] = math.MinInt64
	if d := t.t[phDetected]; d != 0 {
		in[nPhases] = -d
	}
	var ph phases
	if err := mpi.Allreduce(c, in[:], out[:], mpi.Max); err != nil {
		return ph, err
	}
	copy(ph.last[:], out[:nPhases])
	if out[nPhases] != math.MinInt64 {
		ph.firstDetect = -out[nPhases]
	}
	return ph, nil
}

func ms(d int64) float64 { return math.Round(float64(d)/1e4) / 100 }

// makeReport builds the line from the kill time, the combined phases and
// rank 0's resume time.
func makeReport(p *params, mode string, np, restoredIter int, kill int64, phs phases, resumed int64) report {
	ph := phs.last
	r := report{Name: "recovery", Impl: "ftmpi", Mode: mode, NP: np, M: p.m, Every: p.every, FailAt: p.failAt,
		Victim: p.victim, Restored: restoredIter, Recovery: ms(resumed - kill), At: map[string]float64{}, Unit: "ms"}
	for i, v := range ph {
		if v != 0 {
			r.At[phaseNames[i]] = ms(v - kill)
		}
	}
	r.At["resumed"] = ms(resumed - kill)
	span := func(from, to int64) *float64 {
		if from == 0 || to == 0 {
			return nil
		}
		v := ms(to - from)
		return &v
	}
	r.Detect = span(kill, ph[phDetected])
	r.DetectFirst = span(kill, phs.firstDetect)
	ready := ph[phInited] // the replacement is ready
	if mode == "ulfm" {
		r.Shrink = span(ph[phDetected], ph[phShrunk])
		ready = ph[phSpawned]
	}
	r.Respawn = span(ph[phDetected], ready)
	r.Rebuild = span(ready, ph[phRebuilt])
	r.Load = span(ph[phRebuilt], ph[phRestored])
	r.Iter = span(ph[phRestored], resumed)
	return r
}

func (r report) print(w io.Writer) {
	b, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recovery:", err)
		return
	}
	fmt.Fprintln(w, string(b))
}
