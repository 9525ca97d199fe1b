package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// job is one launch running on h1. Its standard output and error are
// pipes of its own (not exec's copying goroutines): the launcher's exit
// is seen when it happens even if a process it left behind (an ssh to a
// silent host) still holds them.
type job struct {
	cmd     *exec.Cmd
	lines   chan string // stdout lines, closed at stdout's end
	mu      sync.Mutex
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	outEnd  chan struct{} // stdout and stderr read to their end
	outR    *os.File
	errR    *os.File
	done    chan struct{} // the launcher exited (ended, err set)
	began   time.Time
	ended   time.Time
	err     error
	label   string
	logStem string
}

func (r *runner) startJob(label, name string, args, env []string) (*job, error) {
	r.n++
	j := &job{label: label, lines: make(chan string, 1024), done: make(chan struct{}), outEnd: make(chan struct{})}
	j.cmd = r.h.Command(1, name, args...)
	j.cmd.Env = append(os.Environ(), env...)
	j.cmd.Dir = os.TempDir()
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var outW, errW *os.File
	var err error
	if j.outR, outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if j.errR, errW, err = os.Pipe(); err != nil {
		j.outR.Close()
		outW.Close()
		return nil, err
	}
	j.cmd.Stdout, j.cmd.Stderr = outW, errW
	if r.c.logDir != "" {
		j.logStem = filepath.Join(r.c.logDir, fmt.Sprintf("%03d-%s", r.n, strings.ReplaceAll(label, " ", "_")))
		_ = os.WriteFile(j.logStem+".cmd", []byte(strings.Join(append(append(env, name), args...), " ")+"\n"), 0o644)
	}
	j.began = time.Now()
	err = j.cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		j.outR.Close()
		j.errR.Close()
		return nil, err
	}
	var reading sync.WaitGroup
	reading.Add(2)
	go func() {
		defer reading.Done()
		sc := bufio.NewScanner(j.outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			j.mu.Lock()
			j.stdout.WriteString(l + "\n")
			j.mu.Unlock()
			select {
			case j.lines <- l:
			default:
			}
		}
		close(j.lines)
	}()
	go func() {
		defer reading.Done()
		b := make([]byte, 32<<10)
		for {
			n, err := j.errR.Read(b)
			j.mu.Lock()
			j.stderr.Write(b[:n])
			j.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		reading.Wait()
		j.outR.Close()
		j.errR.Close()
		close(j.outEnd)
	}()
	go func() {
		j.err = j.cmd.Wait()
		j.ended = time.Now()
		close(j.done)
	}()
	return j, nil
}

// finish waits (at most 2 s) until the output is read to its end (what
// the launcher wrote before it exited), then unblocks the readers if a
// leftover process still holds the pipes, and keeps the logs.
func (j *job) finish() {
	select {
	case <-j.outEnd:
	case <-time.After(2 * time.Second):
		j.outR.SetReadDeadline(time.Now())
		j.errR.SetReadDeadline(time.Now())
		<-j.outEnd
	}
	if j.logStem != "" {
		_ = os.WriteFile(j.logStem+".out", []byte(j.out()), 0o644)
		_ = os.WriteFile(j.logStem+".err", []byte(j.errText()), 0o644)
	}
}

func (j *job) out() string     { j.mu.Lock(); defer j.mu.Unlock(); return j.stdout.String() }
func (j *job) errText() string { j.mu.Lock(); defer j.mu.Unlock(); return j.stderr.String() }

// waitLine waits for a stdout line holding s, at most d.
func (j *job) waitLine(s string, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case l, ok := <-j.lines:
			if !ok {
				return false
			}
			if strings.Contains(l, s) {
				return true
			}
		case <-t.C:
			return false
		}
	}
}

// wait waits for the end of the job, at most d; after that it kills its
// process group and reports false.
func (j *job) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	go func() {
		for range j.lines { // nobody reads lines any more
		}
	}()
	ok := true
	select {
	case <-j.done:
	case <-t.C:
		_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-j.done
		ok = false
	}
	j.finish()
	return ok
}

// tail is the end of the job's stderr, for messages.
func (j *job) tail() string {
	s := strings.TrimSpace(j.errText())
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}
