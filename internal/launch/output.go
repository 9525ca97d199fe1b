package launch

import (
	"fmt"
	"io"
	"strconv"
	"sync"
)

// output serializes everything ftmpirun prints: each rank line and each
// message of the launcher is written with a single Write under one lock,
// so lines of different ranks never mix.
type output struct {
	mu     sync.Mutex
	stdout io.Writer
	stderr io.Writer
	tag    bool
	buf    []byte
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
	w := o.stdout
	if stderr {
		w = o.stderr
	}
	_, _ = w.Write(b)
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
