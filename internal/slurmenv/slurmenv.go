// Package slurmenv reads a Slurm allocation from the environment that
// salloc and sbatch give the programs they run: the job's nodes
// (SLURM_JOB_NODELIST, a hostlist expression such as "n[1-3,5],m7") and
// how many processes each may take (SLURM_JOB_CPUS_PER_NODE or
// SLURM_TASKS_PER_NODE, such as "4(x3),2"). It is pure: parsers over
// strings; it must not start a process or do I/O, and ftmpirun decides
// what to do with the result.
package slurmenv

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts bounds what one hostlist or count list may expand to (a typo
// like "n[1-999999999]" must be an error, not an allocation of gigabytes).
const MaxHosts = 1 << 16

// Environment variables read by FromEnv.
const (
	EnvJobID        = "SLURM_JOB_ID"
	EnvNodeList     = "SLURM_JOB_NODELIST"
	EnvCPUsPerNode  = "SLURM_JOB_CPUS_PER_NODE"
	EnvTasksPerNode = "SLURM_TASKS_PER_NODE"
	EnvNTasks       = "SLURM_NTASKS"
)

// Host is one node of an allocation and its slots.
type Host struct {
	Name  string
	Slots int
}

// Alloc is a Slurm allocation as its environment describes it.
type Alloc struct {
	JobID string
	Hosts []Host
	// SlotsFrom names the variable the slots were read from.
	SlotsFrom string
}

// FromEnv reads the allocation ftmpirun runs in. ok is false when
// SLURM_JOB_ID or SLURM_JOB_NODELIST is unset (not inside salloc/sbatch);
// with an error, a holds only the job id.
// Slots come from SLURM_TASKS_PER_NODE when the job was given a task count
// (SLURM_NTASKS is set: sbatch -n), else from SLURM_JOB_CPUS_PER_NODE (a
// slot per allocated CPU), as mpirun does.
func FromEnv(getenv func(string) string) (a Alloc, ok bool, err error) {
	a.JobID = getenv(EnvJobID)
	list := getenv(EnvNodeList)
	if a.JobID == "" || list == "" {
		return Alloc{}, false, nil
	}
	// An error still names the job.
	fail := func(err error) (Alloc, bool, error) { return Alloc{JobID: a.JobID}, true, err }
	names, err := Hostlist(list)
	if err != nil {
		return fail(fmt.Errorf("%s: %v", EnvNodeList, err))
	}
	a.SlotsFrom = EnvCPUsPerNode
	if getenv(EnvNTasks) != "" && getenv(EnvTasksPerNode) != "" || getenv(EnvCPUsPerNode) == "" {
		a.SlotsFrom = EnvTasksPerNode
	}
	counts := getenv(a.SlotsFrom)
	if counts == "" {
		return fail(fmt.Errorf("neither %s nor %s is set: cannot tell how many processes each node takes", EnvCPUsPerNode, EnvTasksPerNode))
	}
	slots, err := Counts(counts)
	if err != nil {
		return fail(fmt.Errorf("%s: %v", a.SlotsFrom, err))
	}
	if len(slots) != len(names) {
		return fail(fmt.Errorf("%s=%q gives %d nodes but %s=%q gives %d", EnvNodeList, list, len(names), a.SlotsFrom, counts, len(slots)))
	}
	for i, n := range names {
		if slots[i] < 1 {
			return fail(fmt.Errorf("%s=%q: node %s has %d slots", a.SlotsFrom, counts, n, slots[i]))
		}
		a.Hosts = append(a.Hosts, Host{Name: n, Slots: slots[i]})
	}
	return a, true, nil
}

// Hostlist expands a Slurm hostlist expression: names separated by commas,
// each with zero or more bracketed range lists ("n[1-3,5]", "r[1-2]n[01-02]";
// a range's first number sets the zero padding, as "n[08-10]" gives n08,
// n09, n10). The names come out in the expression's order; a name listed
// twice is an error.
func Hostlist(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty hostlist")
	}
	var out []string
	seen := map[string]bool{}
	for _, item := range splitTop(s) {
		if item == "" {
			return nil, fmt.Errorf("hostlist %q: empty name", s)
		}
		names, err := expand(item, MaxHosts-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %v", s, err)
		}
		for _, n := range names {
			if seen[n] {
				return nil, fmt.Errorf("hostlist %q: %s listed twice", s, n)
			}
			seen[n] = true
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits at the commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// expand expands one name with its bracket groups (at most limit names).
func expand(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("%q: ] without [", item)
		}
		if err := checkName(item); err != nil {
			return nil, err
		}
		if limit < 1 {
			return nil, fmt.Errorf("more than %d hosts", MaxHosts)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: [ without ]", item)
	}
	end += open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	if strings.ContainsAny(prefix, "]") || strings.Contains(body, "[") {
		return nil, fmt.Errorf("%q: misplaced bracket", item)
	}
	nums, err := ranges(body, limit)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", item, err)
	}
	var out []string
	for _, n := range nums {
		tails, err := expand(prefix+n+rest, limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, tails...)
	}
	return out, nil
}

// ranges expands "1-3,5,08-10" into its numbers as text (padded).
func ranges(body string, limit int) ([]string, error) {
	if body == "" {
		return nil, errors.New("empty brackets")
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !digits(lo) || isRange && !digits(hi) {
			return nil, fmt.Errorf("range %q: want N or N-M", r)
		}
		if !isRange {
			hi = lo
		}
		a, errA := strconv.ParseUint(lo, 10, 32)
		b, errB := strconv.ParseUint(hi, 10, 32)
		if errA != nil || errB != nil {
			return nil, fmt.Errorf("range %q: number too large", r)
		}
		if b < a {
			return nil, fmt.Errorf("range %q: end before start", r)
		}
		if b-a >= uint64(limit-len(out)) {
			return nil, fmt.Errorf("more than %d hosts", MaxHosts)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for v := a; v <= b; v++ {
			out = append(out, fmt.Sprintf("%0*d", width, v))
		}
	}
	return out, nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkName refuses what no host name holds (and what would break a
// command line): spaces, quotes, shell metacharacters, control bytes.
func checkName(n string) error {
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("'\"$`;&|<>()\\*?!#~{}=", c) >= 0 {
			return fmt.Errorf("host name %q: character %q not allowed", n, c)
		}
	}
	return nil
}

// Counts expands Slurm's per-node count list: comma-separated counts, each
// possibly repeated ("4(x3),2" is 4, 4, 4, 2).
func Counts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty count list")
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		num, rep, hasRep := strings.Cut(f, "(x")
		if !digits(num) {
			return nil, fmt.Errorf("count list %q: %q: want N or N(xK)", s, f)
		}
		n, err := strconv.Atoi(num)
		if err != nil || n > 1<<20 {
			return nil, fmt.Errorf("count list %q: %q too large", s, num)
		}
		k := 1
		if hasRep {
			r, ok := strings.CutSuffix(rep, ")")
			if !ok || !digits(r) {
				return nil, fmt.Errorf("count list %q: %q: want N(xK)", s, f)
			}
			if k, err = strconv.Atoi(r); err != nil || k < 1 || k > MaxHosts {
				return nil, fmt.Errorf("count list %q: repeat %q must be 1..%d", s, r, MaxHosts)
			}
		}
		if len(out)+k > MaxHosts {
			return nil, fmt.Errorf("count list %q: more than %d nodes", s, MaxHosts)
		}
		for ; k > 0; k-- {
			out = append(out, n)
		}
	}
	return out, nil
}
