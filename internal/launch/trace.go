package launch

import (
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/trace"
)

// envTrace is the ranks' variable naming where they write their timeline
// (mpi.Config.Trace).
const envTrace = "FTMPI_TRACE"

// startTrace prepares --trace: a directory for the ranks' files and the
// head's recorder (kept in cfg across relaunches). done writes the head's
// file, merges every file into cfg.Trace and removes the directory.
func startTrace(cfg *Config) (done func(out *output), err error) {
	dir, err := os.MkdirTemp("", "ftmpi-trace-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cfg.trDir = dir
	cfg.trc = trace.New(trace.LauncherPid, "ftmpirun", trace.Limits{})
	cfg.trc.SetMeta("os_pid", os.Getpid())
	if h, err := os.Hostname(); err == nil {
		cfg.trc.SetMeta("host", h)
	}
	dest, rec := cfg.Trace, cfg.trc
	return func(out *output) {
		defer os.RemoveAll(dir)
		if err := rec.File().WriteFile(trace.FileName(dir+"/", trace.LauncherPid, 0, 0, os.Getpid())); err != nil {
			out.logf("--trace: %v", err)
			return
		}
		f, names, err := trace.MergeDir(dir)
		if err != nil {
			out.logf("--trace: %v", err)
			return
		}
		if err := f.WriteFile(dest); err != nil {
			out.logf("--trace: %v", err)
			return
		}
		out.logf("trace of %d processes and the launcher written to %s (see: ftmpi-trace phases %s)", len(names)-1, dest, dest)
	}, nil
}

// traceEvent records what the launcher saw (an injected signal, a
// process's end) in its timeline. Not under h.mu.
func (h *head) traceEvent(ev policy.Event) {
	r := h.trc.Load()
	if r == nil {
		return
	}
	switch e := ev.(type) {
	case policy.Inject:
		r.Instant(trace.CatFailure, trace.NameKill, map[string]any{"proc": e.Rank, "signal": e.Signal.String(), "at": e.At.String(), "on": e.On})
	case policy.Exited:
		a := map[string]any{"proc": e.Exit.Rank, "inc": e.Exit.Incarnation, "code": e.Exit.Code(), "pid": e.Exit.Pid}
		if e.Exit.Signal != 0 {
			a["signal"] = e.Exit.Signal.String()
		}
		r.Instant(trace.CatFailure, trace.NameExit, a)
		if e.Exit.Code() != 0 {
			// In the process's own lane too: it wrote nothing of its death.
			label := fmt.Sprintf("rank %d", e.Exit.Rank)
			if e.Exit.Rank >= h.size {
				label = fmt.Sprintf("proc %d", e.Exit.Rank)
			}
			r.InstantIn(e.Exit.Rank, label, trace.CatFailure, "died", a)
		}
	}
}

// traceActions records the policy's decisions (respawns, spawns, its log
// lines) in the launcher's timeline.
func (h *head) traceActions(acts []policy.Action) {
	r := h.trc.Load()
	if r == nil {
		return
	}
	for _, a := range acts {
		switch a.Kind {
		case policy.Respawn:
			r.Instant(trace.CatLauncher, trace.NameRespawn, map[string]any{"proc": a.Rank, "inc": a.Incarnation, "epoch": a.Epoch})
		case policy.StartChildren:
			r.Instant(trace.CatLauncher, trace.NameSpawn, map[string]any{"first_proc": a.Start.Base, "count": a.Start.K, "command": a.Start.Command, "spares": a.Start.Spares})
		case policy.Log:
			if a.Since == "" {
				r.Instant(trace.CatLauncher, trace.NameLog, map[string]any{"text": a.Text})
			}
		case policy.Signal:
			r.Instant(trace.CatLauncher, "signal", map[string]any{"proc": a.Rank, "inc": a.Incarnation, "signal": a.Sig.String()})
		}
	}
}
