package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// output serializes everything ftmpirun prints: each rank line and each
// message of the launcher is written with a single Write under one lock,
// so lines of different ranks never mix. A write to stdout that fails
// with EPIPE (ftmpirun ... | head -1: the reader is gone) closes broken,
// once: the launch then ends the job as if interrupted (see runOnce).
type output struct {
	mu     sync.Mutex
	stdout io.Writer
	stderr io.Writer
	tag    bool
	stamp  bool       // --timestamp-output
	merge  bool       // --merge-stderr-to-stdout
	files  *rankFiles // --output-filename; nil: none
	buf    []byte
	fbuf   []byte

	broken     chan struct{} // nil: not watched
	brokenOnce sync.Once
}

// wrote notes the outcome of a write to stdout.
func (o *output) wrote(err error) {
	if err != nil && o.broken != nil && errors.Is(err, syscall.EPIPE) {
		o.brokenOnce.Do(func() { close(o.broken) })
	}
}

func (o *output) rankLine(rank int, stderr bool, line []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.merge {
		stderr = false
	}
	b := o.buf[:0]
	if o.stamp {
		b = time.Now().AppendFormat(b, stampFormat)
		b = append(b, ' ')
	}
	if o.files != nil {
		// The files get the line as the rank wrote it (and its time).
		f := append(append(o.fbuf[:0], b...), line...)
		if len(line) == 0 || line[len(line)-1] != '\n' {
			f = append(f, '\n')
		}
		o.files.write(o, rank, stderr, f)
		if cap(f) <= 64<<10 {
			o.fbuf = f
		}
	}
	if o.tag {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(rank), 10)
		b = append(b, "] "...)
	}
	b = append(b, line...)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		b = append(b, '\n') // a flushed partial line still ends the line
	}
	if stderr {
		_, _ = o.stderr.Write(b)
	} else {
		_, err := o.stdout.Write(b)
		o.wrote(err)
	}
	if cap(b) <= 64<<10 {
		o.buf = b
	}
}

// logf prints a launcher message ("ftmpirun: ...") on stderr.
func (o *output) logf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = fmt.Fprintf(o.stderr, "ftmpirun: "+format+"\n", args...)
}

// stampFormat is the time prefix of --timestamp-output: local time to the
// microsecond.
const stampFormat = "2006-01-02 15:04:05.000000"

// rankFiles holds the files of --output-filename: dir/rank.R/stdout and
// stderr (only stdout when stderr is merged into it), R zero-padded to
// width digits, as Open MPI 4.1 lays them out. A process id not known at
// the start (a spawned process) gets its files at its first line.
type rankFiles struct {
	dir    string
	width  int
	merge  bool
	m      map[int][2]*os.File
	closed bool
	failed bool // a write failed: said once
}

// openRankFiles creates dir and the files of processes 0..n-1.
func openRankFiles(dir string, n int, merge bool) (*rankFiles, error) {
	rf := &rankFiles{dir: dir, width: len(strconv.Itoa(n)), merge: merge, m: map[int][2]*os.File{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for r := 0; r < n; r++ {
		if _, err := rf.open(r); err != nil {
			rf.close()
			return nil, err
		}
	}
	return rf, nil
}

func (rf *rankFiles) open(rank int) ([2]*os.File, error) {
	if fs, ok := rf.m[rank]; ok {
		return fs, nil
	}
	var fs [2]*os.File
	d := filepath.Join(rf.dir, fmt.Sprintf("rank.%0*d", rf.width, rank))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fs, err
	}
	for i, name := range []string{"stdout", "stderr"} {
		if i == 1 && rf.merge {
			break
		}
		f, err := os.OpenFile(filepath.Join(d, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o644)
		if err != nil {
			if fs[0] != nil {
				fs[0].Close()
			}
			return fs, err
		}
		fs[i] = f
	}
	rf.m[rank] = fs
	return fs, nil
}

// write appends line to the rank's file; o.mu is held.
func (rf *rankFiles) write(o *output, rank int, stderr bool, line []byte) {
	if rf.closed {
		return
	}
	fs, err := rf.open(rank)
	if err == nil {
		f := fs[0]
		if stderr && fs[1] != nil {
			f = fs[1]
		}
		_, err = f.Write(line)
	}
	if err != nil && !rf.failed {
		rf.failed = true
		fmt.Fprintf(o.stderr, "ftmpirun: --output-filename: %v (no more output is written to files)\n", err)
	}
}

// close closes every file; o.mu is held, or nobody writes any more.
func (rf *rankFiles) close() {
	rf.closed = true
	for _, fs := range rf.m {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
}

// closeFiles closes the files of --output-filename, if any.
func (o *output) closeFiles() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.files != nil {
		o.files.close()
	}
}
