package launch

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"syscall"
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
	buf    []byte

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
	b := o.buf[:0]
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
