// Package pmi is a client of the Process Management Interface that
// foreign launchers offer their processes: the PMI-1 text protocol
// (MPICH's simple PMI, as mpiexec.hydra speaks it) and the PMI-2 wire
// protocol (as Slurm's srun --mpi=pmi2 and hydra speak it), over the
// descriptor the launcher hands down (PMI_FD) or a TCP port (PMI_PORT).
//
// A process uses it to start: it learns its rank and the job's size,
// puts values into the job's key-value space, takes part in a fence, and
// gets the values of the others. Values longer than the server's limits
// are split over several keys (PutLong, GetLong). Every exchange has a
// deadline, so a launcher that never answers (a peer died before the
// fence) ends in an error, never a hang; a malformed reply is an error
// naming what was wrong.
//
// The codecs (this file) are pure and fuzzed; Conn (client.go) is the I/O.
// The package must not know ftmpi's endpoints or MPI: internal/boot
// builds the bootstrap on it. It must hold no process-global state.
package pmi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Msg is one parsed PMI message: its command and its other fields.
type Msg struct {
	Cmd    string
	Fields map[string]string
}

// Get returns field k ("" if absent).
func (m Msg) Get(k string) string { return m.Fields[k] }

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("malformed PMI message")

// maxLine bounds one PMI-1 line and one PMI-2 message as read (the
// servers' own limits are about 1 KiB; anything much longer is garbage).
const maxLine = 64 << 10

// lenWidth is the width of a PMI-2 message's length prefix.
const lenWidth = 6

// FormatV1 formats a PMI-1 line: "cmd=CMD k1=v1 k2=v2\n". kv holds
// alternating keys and values.
func FormatV1(cmd string, kv ...string) string {
	var b strings.Builder
	b.WriteString("cmd=")
	b.WriteString(cmd)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteByte(' ')
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(kv[i+1])
	}
	b.WriteByte('\n')
	return b.String()
}

// ParseV1 parses one PMI-1 line (with or without its newline): fields
// "key=value" separated by spaces, the first one "cmd=...". A value runs
// to the next space; it may contain '='.
func ParseV1(line string) (Msg, error) {
	line = strings.TrimSuffix(line, "\n")
	if len(line) > maxLine {
		return Msg{}, fmt.Errorf("%w: PMI-1 line of %d bytes", ErrMalformed, len(line))
	}
	m := Msg{Fields: map[string]string{}}
	first := true
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return Msg{}, fmt.Errorf("%w: PMI-1 field %q is not key=value in %q", ErrMalformed, f, clip(line))
		}
		if first {
			if k != "cmd" || v == "" {
				return Msg{}, fmt.Errorf("%w: PMI-1 line %q does not start with cmd=", ErrMalformed, clip(line))
			}
			m.Cmd = v
			first = false
			continue
		}
		if _, dup := m.Fields[k]; dup {
			return Msg{}, fmt.Errorf("%w: PMI-1 field %q twice in %q", ErrMalformed, k, clip(line))
		}
		m.Fields[k] = v
	}
	if first {
		return Msg{}, fmt.Errorf("%w: empty PMI-1 line", ErrMalformed)
	}
	return m, nil
}

// FormatV2 formats a PMI-2 message with its length prefix: the body
// "cmd=CMD;k1=v1;k2=v2;" (a ';' inside a value doubled) after its length
// in lenWidth characters. kv holds alternating keys and values.
func FormatV2(cmd string, kv ...string) []byte {
	var b strings.Builder
	b.WriteString("cmd=")
	b.WriteString(escapeV2(cmd))
	b.WriteByte(';')
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(escapeV2(kv[i]))
		b.WriteByte('=')
		b.WriteString(escapeV2(kv[i+1]))
		b.WriteByte(';')
	}
	body := b.String()
	return []byte(fmt.Sprintf("%-*d%s", lenWidth, len(body), body))
}

func escapeV2(s string) string { return strings.ReplaceAll(s, ";", ";;") }

// ParseV2Len parses the lenWidth-character length prefix of a PMI-2
// message (space padded on either side, as Slurm and hydra write it).
func ParseV2Len(h []byte) (int, error) {
	if len(h) != lenWidth {
		return 0, fmt.Errorf("%w: PMI-2 length prefix of %d bytes", ErrMalformed, len(h))
	}
	s := strings.TrimSpace(string(h))
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strings.ContainsAny(s, "+- ") {
		return 0, fmt.Errorf("%w: PMI-2 length prefix %q is not a length", ErrMalformed, h)
	}
	if n > maxLine {
		return 0, fmt.Errorf("%w: PMI-2 message of %d bytes (at most %d)", ErrMalformed, n, maxLine)
	}
	return n, nil
}

// ParseV2 parses the body of a PMI-2 message: "key=value;" pairs, the
// first one "cmd=...", a ";;" inside a key or value standing for ';'.
// The last ';' may be missing.
func ParseV2(body []byte) (Msg, error) {
	if len(body) > maxLine {
		return Msg{}, fmt.Errorf("%w: PMI-2 message of %d bytes", ErrMalformed, len(body))
	}
	m := Msg{Fields: map[string]string{}}
	var pairs []string
	var cur strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != ';' {
			cur.WriteByte(c)
			continue
		}
		if i+1 < len(body) && body[i+1] == ';' {
			cur.WriteByte(';')
			i++
			continue
		}
		pairs = append(pairs, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		pairs = append(pairs, cur.String())
	}
	if len(pairs) == 0 {
		return Msg{}, fmt.Errorf("%w: empty PMI-2 message", ErrMalformed)
	}
	for i, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return Msg{}, fmt.Errorf("%w: PMI-2 field %q is not key=value in %q", ErrMalformed, clip(p), clip(string(body)))
		}
		if i == 0 {
			if k != "cmd" || v == "" {
				return Msg{}, fmt.Errorf("%w: PMI-2 message %q does not start with cmd=", ErrMalformed, clip(string(body)))
			}
			m.Cmd = v
			continue
		}
		if _, dup := m.Fields[k]; dup {
			return Msg{}, fmt.Errorf("%w: PMI-2 field %q twice in %q", ErrMalformed, k, clip(string(body)))
		}
		m.Fields[k] = v
	}
	return m, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// validKey reports why key cannot be a PMI key within maxKey bytes.
func validKey(key string, maxKey int) error {
	if key == "" {
		return fmt.Errorf("pmi: empty key")
	}
	if len(key) > maxKey {
		return fmt.Errorf("pmi: key %q is %d bytes, the server allows %d", key, len(key), maxKey)
	}
	if strings.ContainsAny(key, " =;\n\t\r") {
		return fmt.Errorf("pmi: key %q holds a space, '=', ';' or a line break", key)
	}
	return nil
}

// validValue reports why v cannot be a PMI value (both protocols: no
// space, ';' or line break; PutLong encodes anything).
func validValue(v string) error {
	if strings.ContainsAny(v, " ;\n\t\r") {
		return fmt.Errorf("pmi: value %q holds a space, ';' or a line break", clip(v))
	}
	return nil
}
