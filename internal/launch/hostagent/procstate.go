package hostagent

import (
	"bytes"
	"os"
	"strconv"
)

// StateStopped is ProcState's state of a stopped or traced process.
const StateStopped = "stopped"

// ProcState reads the scheduler state of a local process: alive is true
// for a running, sleeping or disk-waiting process, false for a stopped,
// traced, zombie or vanished one, and for one that is exiting (a SIGKILLed
// process is still "running" while the kernel tears it down, after it
// closed its sockets: a peer that saw its connection break may ask before
// the process is a zombie).
func ProcState(pid int) (state string, alive bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone", false
	}
	return parseProcStat(b)
}

// parseProcStat is ProcState on the contents of /proc/PID/stat.
func parseProcStat(b []byte) (state string, alive bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "unknown", false
	}
	switch b[i+2] {
	case 'R', 'S', 'I', 'D':
		// After the command: state ppid pgrp session tty_nr tpgid flags ...
		const pfExiting = 0x4 // PF_EXITING: the task is in do_exit
		if f := bytes.Fields(b[i+1:]); len(f) > 6 {
			if flags, err := strconv.ParseUint(string(f[6]), 10, 64); err == nil && flags&pfExiting != 0 {
				return "exiting", false
			}
		}
	}
	switch b[i+2] {
	case 'R':
		return "running", true
	case 'S', 'I':
		return "sleeping", true
	case 'D':
		return "waiting on disk", true
	case 'T', 't':
		return StateStopped, false
	case 'Z', 'X':
		return "dead", false
	}
	return "state " + string(b[i+2]), false
}
