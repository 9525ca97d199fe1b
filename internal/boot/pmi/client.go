package pmi

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ftmpi/ftmpi/internal/bound"
)

// Environment variables a PMI launcher sets for its processes.
const (
	EnvFD    = "PMI_FD"    // the inherited descriptor of the PMI connection (hydra, Slurm)
	EnvPort  = "PMI_PORT"  // "host:port" of the PMI server when there is no PMI_FD (hydra -pmi-port)
	EnvID    = "PMI_ID"    // the process's id for PMI_PORT (hydra)
	EnvRank  = "PMI_RANK"  // the process's rank in the PMI job
	EnvSize  = "PMI_SIZE"  // the number of processes of the PMI job
	EnvJobID = "PMI_JOBID" // the job id (Slurm; required in its fullinit)
	// EnvVersion (ftmpi's own) picks the protocol: "1", "2", or unset/"auto"
	// (PMI-2, or PMI-1 when the server refuses PMI-2 at init).
	EnvVersion = "FTMPI_PMI"
	// EnvTimeout (ftmpi's own) bounds the start-up fence (a Go duration
	// from MinFenceTimeout to MaxFenceTimeout; default DefaultFenceTimeout).
	EnvTimeout = "FTMPI_PMI_TIMEOUT"
)

// Default deadlines.
const (
	DefaultTimeout      = 30 * time.Second // one exchange other than a fence
	DefaultFenceTimeout = 60 * time.Second // a fence: every process of the job must reach it
	MinFenceTimeout     = time.Millisecond // bounds of EnvTimeout
	MaxFenceTimeout     = 24 * time.Hour
)

// Env is what the launcher told a process in its environment.
type Env struct {
	FD      int    // PMI_FD (-1: none)
	Port    string // PMI_PORT ("" : none)
	ID      string // PMI_ID
	Rank    int    // PMI_RANK (-1: not set; the server tells it at init)
	Size    int    // PMI_SIZE (0: not set)
	JobID   string // PMI_JOBID
	Version int    // 0 auto, 1 or 2 (EnvVersion)
	Fence   time.Duration
}

// FromEnv reads Env through lookup. ok is false (and err nil) when the
// process was not started by a PMI launcher (neither PMI_FD nor PMI_PORT
// set); a malformed value is an error naming the variable.
func FromEnv(lookup func(string) (string, bool)) (e Env, ok bool, err error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	e = Env{FD: -1, Rank: -1, Port: get(EnvPort), ID: get(EnvID), JobID: get(EnvJobID), Fence: DefaultFenceTimeout}
	fd := get(EnvFD)
	if fd == "" && e.Port == "" {
		return Env{}, false, nil
	}
	num := func(k, v string, min int) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return 0, fmt.Errorf("pmi: %s=%q must be an integer >= %d", k, v, min)
		}
		return n, nil
	}
	if fd != "" {
		if e.FD, err = num(EnvFD, fd, 0); err != nil {
			return Env{}, false, err
		}
	} else if _, _, err := net.SplitHostPort(e.Port); err != nil {
		return Env{}, false, fmt.Errorf("pmi: %s=%q must be host:port", EnvPort, e.Port)
	}
	if v := get(EnvRank); v != "" {
		if e.Rank, err = num(EnvRank, v, 0); err != nil {
			return Env{}, false, err
		}
	}
	if v := get(EnvSize); v != "" {
		if e.Size, err = num(EnvSize, v, 1); err != nil {
			return Env{}, false, err
		}
		if e.Rank >= e.Size {
			return Env{}, false, fmt.Errorf("pmi: %s=%d out of range for %s=%d", EnvRank, e.Rank, EnvSize, e.Size)
		}
	}
	switch v := get(EnvVersion); v {
	case "", "auto":
	case "1", "2":
		e.Version, _ = strconv.Atoi(v)
	default:
		return Env{}, false, fmt.Errorf("pmi: %s=%q must be 1, 2 or auto", EnvVersion, v)
	}
	if v := get(EnvTimeout); v != "" {
		d, err := bound.Duration(EnvTimeout, v, MinFenceTimeout, MaxFenceTimeout)
		if err != nil {
			return Env{}, false, fmt.Errorf("pmi: %w", err)
		}
		e.Fence = d
	}
	return e, true, nil
}

// Dial opens the PMI connection e names (the inherited descriptor, whose
// original is closed, or the TCP port) and initialises it (Open).
func Dial(e Env) (*Conn, error) {
	var c net.Conn
	if e.FD >= 0 {
		f := os.NewFile(uintptr(e.FD), "pmi")
		if f == nil {
			return nil, fmt.Errorf("pmi: %s=%d is not an open descriptor", EnvFD, e.FD)
		}
		var err error
		c, err = net.FileConn(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("pmi: %s=%d is not a socket: %w", EnvFD, e.FD, err)
		}
	} else {
		var err error
		c, err = net.DialTimeout("tcp", e.Port, DefaultTimeout)
		if err != nil {
			return nil, fmt.Errorf("pmi: dial %s=%s: %w", EnvPort, e.Port, err)
		}
	}
	pc, err := Open(c, e, DefaultTimeout)
	if err != nil {
		c.Close()
		return nil, err
	}
	return pc, nil
}

// Conn is an initialised PMI connection. Its methods are not safe for
// concurrent use (a process uses it from Init only).
type Conn struct {
	c       net.Conn
	r       *bufio.Reader
	v       int // 1 or 2
	timeout time.Duration
	fence   time.Duration

	rank, size, appnum int
	kvs                string // PMI-1 KVS name; PMI-2 job id
	jobid              string // PMI-2: the job id sent with kvs-get ("": none)
	maxKey, maxVal     int
}

// maxLineV1 is the line length of MPICH's simple PMI (PMIU_MAXLINE), which
// hydra's server also reads with: a put must fit in it.
const maxLineV1 = 1024

// PMI-2 limits (MPICH's and Slurm's PMI2_MAX_KEYLEN, PMI2_MAX_VALLEN).
const (
	maxKeyV2 = 64
	maxValV2 = 1024
)

// Open initialises the PMI connection c (init, then get_maxes, get_appnum
// and get_my_kvsname for PMI-1; fullinit and job-getid for PMI-2).
// timeout bounds each exchange; e.Fence bounds fences.
func Open(c net.Conn, e Env, timeout time.Duration) (*Conn, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	fence := e.Fence
	if fence <= 0 {
		fence = DefaultFenceTimeout
	}
	pc := &Conn{c: c, r: bufio.NewReader(c), timeout: timeout, fence: fence, rank: e.Rank, size: e.Size}
	if e.Port != "" && e.FD < 0 {
		if err := pc.initack(e.ID); err != nil {
			return nil, err
		}
	}
	want := e.Version
	if want == 0 {
		want = 2
	}
	v, err := pc.init(want)
	if err != nil {
		return nil, err
	}
	if v != want {
		if e.Version != 0 || v != 1 {
			return nil, fmt.Errorf("pmi: the server speaks PMI-%d, PMI-%d was asked for (%s)", v, want, EnvVersion)
		}
	}
	pc.v = v
	if v == 1 {
		err = pc.openV1()
	} else {
		err = pc.openV2(e)
	}
	if err != nil {
		return nil, err
	}
	if pc.size < 1 || pc.rank < 0 || pc.rank >= pc.size {
		return nil, fmt.Errorf("pmi: the server gave rank %d of size %d", pc.rank, pc.size)
	}
	return pc, nil
}

// Version is the protocol in use (1 or 2).
func (pc *Conn) Version() int { return pc.v }

// Rank is the process's rank in the PMI job.
func (pc *Conn) Rank() int { return pc.rank }

// Size is the number of processes of the PMI job.
func (pc *Conn) Size() int { return pc.size }

// AppNum is the process's application number (MPMD launches).
func (pc *Conn) AppNum() int { return pc.appnum }

// KVSName is the job's key-value space (PMI-1) or job id (PMI-2).
func (pc *Conn) KVSName() string { return pc.kvs }

// exchange writes req (nil: nothing) and reads one reply within d, which
// must be the command want.
func (pc *Conn) exchange(req []byte, want string, d time.Duration, what string) (Msg, error) {
	_ = pc.c.SetDeadline(time.Now().Add(d))
	defer pc.c.SetDeadline(time.Time{})
	if req != nil {
		if _, err := pc.c.Write(req); err != nil {
			return Msg{}, pc.ioErr(what, err, d)
		}
	}
	var m Msg
	var err error
	if pc.v == 2 {
		m, err = pc.readV2()
	} else {
		m, err = pc.readV1()
	}
	if err != nil {
		return Msg{}, pc.ioErr(what, err, d)
	}
	if m.Cmd != want {
		return Msg{}, fmt.Errorf("pmi: %s: the server answered %q, want %q", what, m.Cmd, want)
	}
	if rc := m.Get("rc"); rc != "" && rc != "0" {
		msg := m.Get("msg")
		if msg == "" {
			msg = m.Get("errmsg")
		}
		return m, fmt.Errorf("pmi: %s: the server failed it (rc=%s %s)", what, rc, msg)
	}
	return m, nil
}

func (pc *Conn) ioErr(what string, err error, d time.Duration) error {
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return fmt.Errorf("pmi: %s: no answer from the launcher within %v", what, d)
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("pmi: %s: the launcher closed the connection", what)
	}
	return fmt.Errorf("pmi: %s: %w", what, err)
}

func (pc *Conn) readV1() (Msg, error) {
	line, err := pc.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return Msg{}, fmt.Errorf("%w: PMI-1 line longer than %d bytes", ErrMalformed, pc.r.Size())
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return Msg{}, err
	}
	return ParseV1(string(line))
}

func (pc *Conn) readV2() (Msg, error) {
	var h [lenWidth]byte
	if _, err := io.ReadFull(pc.r, h[:]); err != nil {
		return Msg{}, err
	}
	n, err := ParseV2Len(h[:])
	if err != nil {
		return Msg{}, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(pc.r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Msg{}, err
	}
	return ParseV2(body)
}

// initack is the PMI_PORT preamble: the process names itself by PMI_ID;
// the server answers initack and sets size, rank and debug.
func (pc *Conn) initack(id string) error {
	if id == "" {
		return fmt.Errorf("pmi: %s is set but %s is missing", EnvPort, EnvID)
	}
	pc.v = 1
	if _, err := pc.exchange([]byte(FormatV1("initack", "pmiid", id)), "initack", pc.timeout, "initack"); err != nil {
		return err
	}
	for range 3 {
		m, err := pc.exchange(nil, "set", pc.timeout, "initack")
		if err != nil {
			return err
		}
		for k, v := range m.Fields {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("pmi: initack: set %s=%q is not an integer", k, v)
			}
			switch k {
			case "size":
				pc.size = n
			case "rank":
				pc.rank = n
			}
		}
	}
	return nil
}

// init sends the PMI-1 style init line that picks the wire protocol and
// returns the version the server answers with.
func (pc *Conn) init(v int) (int, error) {
	pc.v = 1
	sub := "1"
	if v == 2 {
		sub = "0"
	}
	m, err := pc.exchange([]byte(FormatV1("init", "pmi_version", strconv.Itoa(v), "pmi_subversion", sub)), "response_to_init", pc.timeout, "init")
	if err != nil {
		if m.Cmd == "response_to_init" && v == 2 {
			// The server refuses PMI-2: try PMI-1 on the same connection.
			return pc.init(1)
		}
		return 0, err
	}
	got, err := strconv.Atoi(m.Get("pmi_version"))
	if err != nil || (got != 1 && got != 2) {
		return 0, fmt.Errorf("pmi: init: the server answered pmi_version=%q", m.Get("pmi_version"))
	}
	return got, nil // the server's choice (Open checks it against the one asked for)
}

func (pc *Conn) openV1() error {
	m, err := pc.exchange([]byte(FormatV1("get_maxes")), "maxes", pc.timeout, "get_maxes")
	if err != nil {
		return err
	}
	ints := map[string]*int{"keylen_max": &pc.maxKey, "vallen_max": &pc.maxVal}
	var kvsMax int
	ints["kvsname_max"] = &kvsMax
	for k, dst := range ints {
		n, err := strconv.Atoi(m.Get(k))
		if err != nil || n < 1 {
			return fmt.Errorf("pmi: get_maxes: %s=%q is not a positive integer", k, m.Get(k))
		}
		*dst = n
	}
	if m, err = pc.exchange([]byte(FormatV1("get_appnum")), "appnum", pc.timeout, "get_appnum"); err != nil {
		return err
	}
	if pc.appnum, err = strconv.Atoi(m.Get("appnum")); err != nil {
		return fmt.Errorf("pmi: get_appnum: appnum=%q is not an integer", m.Get("appnum"))
	}
	if m, err = pc.exchange([]byte(FormatV1("get_my_kvsname")), "my_kvsname", pc.timeout, "get_my_kvsname"); err != nil {
		return err
	}
	pc.kvs = m.Get("kvsname")
	if pc.kvs == "" || len(pc.kvs) > kvsMax {
		return fmt.Errorf("pmi: get_my_kvsname: kvsname=%q (at most %d bytes)", pc.kvs, kvsMax)
	}
	if pc.size <= 0 {
		return fmt.Errorf("pmi: PMI-1 needs %s (the launcher did not set it)", EnvSize)
	}
	if pc.rank < 0 {
		return fmt.Errorf("pmi: PMI-1 needs %s (the launcher did not set it)", EnvRank)
	}
	return nil
}

func (pc *Conn) openV2(e Env) error {
	kv := []string{}
	if e.JobID != "" {
		kv = append(kv, "pmijobid", e.JobID) // Slurm refuses fullinit without it
	}
	rank := e.Rank
	if rank < 0 {
		rank = pc.rank
	}
	if rank >= 0 {
		kv = append(kv, "pmirank", strconv.Itoa(rank))
	}
	kv = append(kv, "threaded", "FALSE")
	m, err := pc.exchange(FormatV2("fullinit", kv...), "fullinit-response", pc.timeout, "fullinit")
	if err != nil {
		return err
	}
	for k, dst := range map[string]*int{"rank": &pc.rank, "size": &pc.size} {
		n, err := strconv.Atoi(m.Get(k))
		if err != nil {
			return fmt.Errorf("pmi: fullinit: %s=%q is not an integer", k, m.Get(k))
		}
		*dst = n
	}
	if v := m.Get("appnum"); v != "" {
		if pc.appnum, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("pmi: fullinit: appnum=%q is not an integer", v)
		}
	}
	if m, err = pc.exchange(FormatV2("job-getid"), "job-getid-response", pc.timeout, "job-getid"); err != nil {
		return err
	}
	pc.kvs = m.Get("jobid")
	pc.jobid = e.JobID
	pc.maxKey, pc.maxVal = maxKeyV2, maxValV2
	return nil
}

// Put stores key=value in the job's key-value space (visible to the
// others after the next Fence). The value must be within the server's
// limits (ChunkSize) and hold no space, ';' or line break.
func (pc *Conn) Put(key, value string) error {
	if err := validKey(key, pc.maxKey); err != nil {
		return err
	}
	if err := validValue(value); err != nil {
		return err
	}
	if len(value) > pc.ChunkSize(key) {
		return fmt.Errorf("pmi: value of key %q is %d bytes, at most %d fit (PutLong splits it)", key, len(value), pc.ChunkSize(key))
	}
	what := "put " + key
	if pc.v == 1 {
		_, err := pc.exchange([]byte(FormatV1("put", "kvsname", pc.kvs, "key", key, "value", value)), "put_result", pc.timeout, what)
		return err
	}
	_, err := pc.exchange(FormatV2("kvs-put", "key", key, "value", value), "kvs-put-response", pc.timeout, what)
	return err
}

// ChunkSize is how many bytes of value fit in one Put of key: the
// server's value limit, and for PMI-1 the line limit.
func (pc *Conn) ChunkSize(key string) int {
	if pc.v == 1 {
		line := len(FormatV1("put", "kvsname", pc.kvs, "key", key, "value", ""))
		return max(0, min(pc.maxVal, maxLineV1-line))
	}
	return max(0, min(pc.maxVal, maxValV2-len("cmd=kvs-put;key=;value=;")-len(key)))
}

// Fence waits until every process of the job has reached its fence
// (PMI-1 barrier_in/barrier_out, PMI-2 kvs-fence) and makes every Put
// before it visible. It fails after the fence deadline.
func (pc *Conn) Fence() error {
	if pc.v == 1 {
		_, err := pc.exchange([]byte(FormatV1("barrier_in")), "barrier_out", pc.fence, "fence")
		return err
	}
	_, err := pc.exchange(FormatV2("kvs-fence"), "kvs-fence-response", pc.fence, "fence")
	return err
}

// Get returns the value of key (found false: no such key). It has the
// fence's deadline: a server may hold a get until the key is put (hydra
// does), so a get of a process that never put is the wait of a fence.
func (pc *Conn) Get(key string) (value string, found bool, err error) {
	if err := validKey(key, pc.maxKey); err != nil {
		return "", false, err
	}
	what := "get " + key
	if pc.v == 1 {
		v, found, has, err := pc.getV1(key, pc.fence, what)
		if err != nil || !found {
			return "", false, err
		}
		if !has {
			return "", false, fmt.Errorf("pmi: %s: get_result without a value", what)
		}
		return v, true, nil
	}
	kv := []string{}
	if pc.jobid != "" {
		kv = append(kv, "jobid", pc.jobid, "srcid", "-1")
	}
	m, err := pc.exchange(FormatV2("kvs-get", append(kv, "key", key)...), "kvs-get-response", pc.fence, what)
	if err != nil {
		return "", false, err
	}
	switch m.Get("found") {
	case "TRUE":
		v, ok := m.Fields["value"]
		if !ok {
			return "", false, fmt.Errorf("pmi: %s: found=TRUE without a value", what)
		}
		return v, true, nil
	case "FALSE":
		return "", false, nil
	}
	return "", false, fmt.Errorf("pmi: %s: found=%q must be TRUE or FALSE", what, m.Get("found"))
}

// getV1 is PMI-1's get of key within deadline d: found is false when the
// server answers rc=-1 (no such key), has is false when its answer
// carries no value.
func (pc *Conn) getV1(key string, d time.Duration, what string) (value string, found, has bool, err error) {
	m, err := pc.exchange([]byte(FormatV1("get", "kvsname", pc.kvs, "key", key)), "get_result", d, what)
	if err != nil {
		if m.Cmd == "get_result" {
			return "", false, false, nil // rc=-1
		}
		return "", false, false, err
	}
	v, ok := m.Fields["value"]
	return v, true, ok, nil
}

// JobAttr returns an attribute of the job that the launcher publishes
// (found false: it does not), such as PMI_process_mapping: PMI-2's
// info-getjobattr (Slurm), PMI-1's get of the key (hydra's proxy answers
// it). It has the deadline of a request other than a fence, and no MPI
// counterpart.
func (pc *Conn) JobAttr(key string) (value string, found bool, err error) {
	if err := validKey(key, max(pc.maxKey, len(key))); err != nil {
		return "", false, err
	}
	what := "job attribute " + key
	if pc.v == 1 {
		v, found, has, err := pc.getV1(key, pc.timeout, what)
		return v, found && has, err
	}
	m, err := pc.exchange(FormatV2("info-getjobattr", "key", key), "info-getjobattr-response", pc.timeout, what)
	if err != nil {
		if m.Cmd == "info-getjobattr-response" {
			return "", false, nil
		}
		return "", false, err
	}
	switch m.Get("found") {
	case "TRUE":
		v, ok := m.Fields["value"]
		if !ok {
			return "", false, fmt.Errorf("pmi: %s: found=TRUE without a value", what)
		}
		return v, true, nil
	case "FALSE", "":
		return "", false, nil
	}
	return "", false, fmt.Errorf("pmi: %s: found=%q must be TRUE or FALSE", what, m.Get("found"))
}

// maxChunks bounds how many keys one long value may take.
const maxChunks = 4096

// PutLong stores any value under key, base64-encoded and split over as
// many keys as the server's limits need: key holds "N:" and the first
// piece, key#1 .. key#N-1 the others.
func (pc *Conn) PutLong(key string, value []byte) error {
	enc := base64.RawURLEncoding.EncodeToString(value)
	// The first piece shares its key with the count.
	first := pc.ChunkSize(key) - len(strconv.Itoa(maxChunks)) - 1
	rest := pc.ChunkSize(key + "#" + strconv.Itoa(maxChunks)) // the longest other key
	if first < 1 || rest < 1 {
		return fmt.Errorf("pmi: key %q leaves no room for a value", key)
	}
	n := 1
	if len(enc) > first {
		n += (len(enc) - first + rest - 1) / rest
	}
	if n > maxChunks {
		return fmt.Errorf("pmi: value of key %q is %d bytes, more than %d keys", key, len(value), maxChunks)
	}
	head := enc[:min(first, len(enc))]
	enc = enc[len(head):]
	if err := pc.Put(key, strconv.Itoa(n)+":"+head); err != nil {
		return err
	}
	for i := 1; i < n; i++ {
		piece := enc[:min(rest, len(enc))]
		enc = enc[len(piece):]
		if err := pc.Put(key+"#"+strconv.Itoa(i), piece); err != nil {
			return err
		}
	}
	return nil
}

// GetLong returns the value PutLong stored under key (found false: no
// such key).
func (pc *Conn) GetLong(key string) (value []byte, found bool, err error) {
	v, found, err := pc.Get(key)
	if err != nil || !found {
		return nil, found, err
	}
	ns, head, ok := strings.Cut(v, ":")
	n, aerr := strconv.Atoi(ns)
	if !ok || aerr != nil || n < 1 || n > maxChunks {
		return nil, false, fmt.Errorf("pmi: key %q holds %q, not a count of pieces", key, clip(v))
	}
	var b strings.Builder
	b.WriteString(head)
	for i := 1; i < n; i++ {
		k := key + "#" + strconv.Itoa(i)
		p, ok, err := pc.Get(k)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, fmt.Errorf("pmi: key %q: piece %d of %d is missing", key, i, n)
		}
		b.WriteString(p)
	}
	out, err := base64.RawURLEncoding.DecodeString(b.String())
	if err != nil {
		return nil, false, fmt.Errorf("pmi: key %q: %v", key, err)
	}
	return out, true, nil
}

// Finalize tells the launcher the process is done with PMI (not a fence)
// and closes the connection.
func (pc *Conn) Finalize() error { return pc.FinalizeWithin(pc.timeout) }

// FinalizeWithin is Finalize with deadline d.
func (pc *Conn) FinalizeWithin(d time.Duration) error {
	var err error
	if pc.v == 1 {
		_, err = pc.exchange([]byte(FormatV1("finalize")), "finalize_ack", d, "finalize")
	} else {
		_, err = pc.exchange(FormatV2("finalize"), "finalize-response", d, "finalize")
	}
	pc.c.Close()
	return err
}

// abortWait is how long Abort waits for the launcher to end the process.
const abortWait = 5 * time.Second

// Abort asks the launcher to end the whole job with code and waits (at
// most abortWait) for it to do so: a process that exited at once would be
// a crash to the launcher, which might then end the job with another
// code. lineV1 sends the PMI-1 abort line even on a PMI-2 connection:
// hydra reads each command's protocol from its first bytes and has no
// PMI-2 abort (Slurm has).
func (pc *Conn) Abort(code int, msg string, lineV1 bool) error {
	msg = strings.Map(func(r rune) rune {
		if r == ' ' || r == ';' || r == '\n' || r == '\t' || r == '\r' || r == '=' {
			return '_'
		}
		return r
	}, msg)
	var req []byte
	if pc.v == 1 || lineV1 {
		req = []byte(FormatV1("abort", "exitcode", strconv.Itoa(code)))
	} else {
		req = FormatV2("abort", "isworld", "TRUE", "msg", msg)
	}
	_ = pc.c.SetDeadline(time.Now().Add(pc.timeout))
	if _, err := pc.c.Write(req); err != nil {
		return pc.ioErr("abort", err, pc.timeout)
	}
	_ = pc.c.SetReadDeadline(time.Now().Add(abortWait))
	_, _ = io.Copy(io.Discard, pc.r) // until the launcher kills us, closes, or the wait ends
	return nil
}

// Close closes the connection without finalizing.
func (pc *Conn) Close() error { return pc.c.Close() }
