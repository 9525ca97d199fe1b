// Package procstat reads what ftmpi needs of a process from
// /proc/PID/stat: its state and its start time, which together with the
// pid identify a process across pid reuse. It only reads; it must not
// signal or otherwise act on processes.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Fields returns the fields of /proc/PID/stat that follow the command
// (Fields[0] is field 3, the state; Fields[1] the parent's pid; Fields[19]
// field 22, the start time); ok is false when there is no such process or
// its stat cannot be parsed.
func Fields(pid int) (f []string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')') // the command may hold spaces and ')'
	if i < 0 {
		return nil, false
	}
	f = strings.Fields(string(b[i+1:]))
	return f, len(f) > 0
}

// Read returns the state (field 3: "R", "S", "T", "Z", ...) and the start
// time (field 22, clock ticks since boot) of process pid; ok is false when
// there is no such process or its stat cannot be parsed.
func Read(pid int) (state string, start uint64, ok bool) {
	f, ok := Fields(pid)
	if !ok || len(f) < 20 {
		return "", 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return f[0], start, true
}

// StartTime is the start time of process pid (Read), 0 if unknown.
func StartTime(pid int) uint64 {
	_, start, _ := Read(pid)
	return start
}
