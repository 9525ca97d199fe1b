package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// JEvent is one event of a Chrome trace-event file ("JSON Object
// Format": {"traceEvents": [...]}). TS and Dur are microseconds.
type JEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	TS   int64          `json:"ts"`
	Dur  int64          `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	S    string         `json:"s,omitempty"` // instant scope: "p" process, "g" global
	Args map[string]any `json:"args,omitempty"`
}

// File is a trace-event file: the events and what was left out.
type File struct {
	TraceEvents     []JEvent       `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit,omitempty"`
	OtherData       map[string]any `json:"otherData,omitempty"`
}

// File returns what r recorded as a trace-event file: the process's name
// ("M" process_name, with its metadata), then its events.
func (r *Recorder) File() *File {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	meta := map[string]any{"name": r.label}
	for k, v := range r.meta {
		meta[k] = v
	}
	evs := append([]Event(nil), r.events...)
	names := map[int]string{}
	for p, l := range r.names {
		names[p] = l
	}
	r.mu.Unlock()
	f := &File{DisplayTimeUnit: "ms", OtherData: map[string]any{}}
	sort := r.pid
	if r.pid == LauncherPid {
		sort = -1
	}
	f.TraceEvents = append(f.TraceEvents,
		JEvent{Name: "process_name", Ph: "M", Pid: r.pid, Args: meta},
		JEvent{Name: "process_sort_index", Ph: "M", Pid: r.pid, Args: map[string]any{"sort_index": sort}},
		JEvent{Name: "thread_name", Ph: "M", Pid: r.pid, Tid: 0, Args: map[string]any{"name": "fault tolerance"}})
	for p, l := range names {
		f.TraceEvents = append(f.TraceEvents,
			JEvent{Name: "process_name", Ph: "M", Pid: p, Args: map[string]any{"name": l, "named_by": r.label}},
			JEvent{Name: "process_sort_index", Ph: "M", Pid: p, Args: map[string]any{"sort_index": p, "named_by": r.label}})
	}
	lanes := map[int]bool{}
	for _, ev := range evs {
		je := JEvent{Name: ev.Name, Cat: ev.Cat, Ph: string(ev.Ph), TS: ev.TS, Dur: ev.Dur, Pid: r.pid, Tid: ev.Tid, Args: ev.Args}
		if ev.In != 0 {
			je.Pid = ev.In - 1
		}
		if ev.Ph == 'i' {
			je.S = "p"
		}
		if ev.Cat == CatMPI {
			a := map[string]any{}
			if ev.Comm != "" {
				a["comm"] = ev.Comm
			}
			if ev.Peer >= 0 {
				a["peer"] = ev.Peer
			}
			if ev.Root >= 0 {
				a["root"] = ev.Root
			}
			if ev.Tag >= 0 {
				a["tag"] = ev.Tag
			}
			if ev.Seq >= 0 {
				a["seq"] = ev.Seq
			}
			je.Args = a
			if !lanes[ev.Tid] {
				lanes[ev.Tid] = true
				f.TraceEvents = append(f.TraceEvents, JEvent{Name: "thread_name", Ph: "M", Pid: r.pid, Tid: ev.Tid,
					Args: map[string]any{"name": fmt.Sprintf("MPI calls %d", ev.Tid)}})
			}
		}
		f.TraceEvents = append(f.TraceEvents, je)
	}
	calls, short, ft := r.Dropped()
	f.OtherData[fmt.Sprintf("dropped.%d", r.pid)] = map[string]int64{"calls": calls, "short_calls": short, "ft": ft}
	return f
}

// Write writes f as JSON.
func (f *File) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(f); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteFile writes f to path atomically (a temporary file renamed).
func (f *File) WriteFile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ftmpi-trace-*")
	if err != nil {
		return err
	}
	if err := f.Write(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Parse reads a trace-event file: the object format, or a bare array of
// events (the "JSON Array Format").
func Parse(data []byte) (*File, error) {
	s := strings.TrimSpace(string(data))
	if strings.HasPrefix(s, "[") {
		var evs []JEvent
		if err := json.Unmarshal([]byte(s), &evs); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		return &File{TraceEvents: evs}, nil
	}
	var f File
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if f.TraceEvents == nil {
		return nil, fmt.Errorf("trace: no traceEvents array")
	}
	return &f, nil
}

// ReadFile parses the trace-event file at path.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Merge joins files into one: every event, metadata once per (pid, tid,
// name) (a process's own name wins over the one another process gave it),
// then the rest sorted by time (stable: the order of one process's events
// at the same instant is kept). otherData keys are joined.
func Merge(files ...*File) *File {
	out := &File{DisplayTimeUnit: "ms", OtherData: map[string]any{}}
	seen := map[string]int{} // metadata key -> index in out.TraceEvents
	var rest []JEvent
	for _, f := range files {
		if f == nil {
			continue
		}
		for k, v := range f.OtherData {
			out.OtherData[k] = v
		}
		for _, ev := range f.TraceEvents {
			if ev.Ph == "M" {
				key := fmt.Sprintf("%d/%d/%s", ev.Pid, ev.Tid, ev.Name)
				if i, ok := seen[key]; ok {
					if _, other := out.TraceEvents[i].Args["named_by"]; other {
						if _, other := ev.Args["named_by"]; !other {
							out.TraceEvents[i] = ev
						}
					}
					continue
				}
				seen[key] = len(out.TraceEvents)
				out.TraceEvents = append(out.TraceEvents, ev)
				continue
			}
			rest = append(rest, ev)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].TS < rest[j].TS })
	out.TraceEvents = append(out.TraceEvents, rest...)
	return out
}

// MergeDir merges every *.json file of dir (the per-process files of a
// job) and returns the merged file and the files' names.
func MergeDir(dir string) (*File, []string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	var files []*File
	for _, n := range names {
		f, err := ReadFile(n)
		if err != nil {
			return nil, names, err
		}
		files = append(files, f)
	}
	return Merge(files...), names, nil
}

// FileName is the name of the per-process file of process pid,
// incarnation inc, Reinit epoch epoch, OS process ospid, under FTMPI_TRACE
// (a directory, or a prefix): unique within a job.
func FileName(dest string, pid, inc, epoch, ospid int) string {
	base := fmt.Sprintf("proc%d.inc%d.epoch%d.pid%d.json", pid, inc, epoch, ospid)
	if st, err := os.Stat(dest); (err == nil && st.IsDir()) || strings.HasSuffix(dest, "/") {
		return filepath.Join(dest, base)
	}
	return dest + "." + base
}
