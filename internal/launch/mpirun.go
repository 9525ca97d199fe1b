package launch

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
)

// What users of mpirun (Open MPI's, MPICH's hydra) carry over: the flags
// their scripts pass, with the meaning they know, and errors that fit a
// screen. docs/launching.md ("ftmpirun for mpirun users") has the table.

// ErrVersion is returned by ParseArgs for --version (not an error: Main
// prints the version on stdout and returns 0).
var ErrVersion = errors.New("version requested")

// versionText is what --version prints.
func versionText() string {
	v, rev := "(unknown)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Version
		if bi.Main.Path != "github.com/ftmpi/ftmpi" {
			for _, m := range bi.Deps {
				if m.Path == "github.com/ftmpi/ftmpi" {
					v = m.Version
				}
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("ftmpirun (ftmpi) %s%s\nMPI 3.1 with fault tolerance (ULFM, run-through, Reinit); %s\n", v, rev, runtime.Version())
}

// usageError prints a usage mistake: its one line and where the help is.
func usageError(w io.Writer, err error) {
	fmt.Fprintf(w, "ftmpirun: %v\nsee ftmpirun --help\n", err)
}

var flagValueErr = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)

// flagError rewrites an error of package flag in ftmpirun's words.
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + dashes(strings.TrimLeft(name, "-"))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return dashes(strings.TrimLeft(name, "-")) + " needs a value"
	}
	m := flagValueErr.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	value, name, why := m[1], m[2], m[3]
	switch {
	case strings.HasPrefix(why, "invalid ") || strings.HasPrefix(why, "ftmpi has no MCA"):
		return why // the flag's own parser said it all
	case why == "parse error" || errors.Is(err, strconv.ErrSyntax):
		if strings.Contains(msg, "boolean") {
			return fmt.Sprintf("invalid %s=%q: want true or false", dashes(name), value)
		}
		return fmt.Sprintf("invalid %s %q: want an integer", dashes(name), value)
	case value != "" && strings.Contains(why, value):
		return fmt.Sprintf("invalid %s: %s", dashes(name), why)
	case why == "value out of range":
		return fmt.Sprintf("invalid %s %q: out of range", dashes(name), value)
	}
	return fmt.Sprintf("invalid %s %q: %s", dashes(name), value, why)
}

// dashes spells a flag the way the help does: -n, -x, --timeout.
func dashes(name string) string {
	if len(name) == 1 || name == "np" {
		return "-" + name
	}
	return "--" + name
}

// parseTimeout parses --timeout: a Go duration, whose unit is required
// (mpirun's --timeout counts seconds: a bare number is refused with the
// hint rather than guessed).
func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err == nil {
		return d, nil
	}
	if _, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil {
		return 0, fmt.Errorf("invalid --timeout %q: give a unit, e.g. %ss, 2m or 1.5h", s, strings.TrimSpace(s))
	}
	return 0, fmt.Errorf("invalid --timeout %q: want a duration with a unit, e.g. 30s, 2m or 1.5h", s)
}

// parseMapBy parses --map-by: slot (also core and hwthread: on one host
// the same order), node, or ppr:N:node (PerNode); an Open MPI modifier
// :OVERSUBSCRIBE sets Oversubscribe, :NOOVERSUBSCRIBE is the default.
func parseMapBy(s string, cfg *Config) error {
	want := fmt.Errorf("invalid --map-by %q: want slot, node or ppr:N:node", s)
	policy := strings.ToLower(strings.TrimSpace(s))
	if strings.HasPrefix(policy, "ppr:") {
		f := strings.Split(policy, ":")
		if len(f) < 3 || f[2] != "node" {
			return fmt.Errorf("invalid --map-by %q: ppr:N:node is the only ppr form (N ranks per host)", s)
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 || n > MaxProcs {
			return fmt.Errorf("invalid --map-by %q: N of ppr:N:node must be an integer from 1 to %d", s, MaxProcs)
		}
		cfg.PerNode, cfg.MapBy = n, MapBySlot
		policy = strings.Join(append([]string{"ppr"}, f[3:]...), ":")
	}
	base, mods, _ := strings.Cut(policy, ":")
	for _, m := range strings.Split(mods, ":") {
		switch m {
		case "":
		case "oversubscribe":
			cfg.Oversubscribe = true
		case "nooversubscribe":
		default:
			return fmt.Errorf("invalid --map-by %q: unknown modifier %q (want OVERSUBSCRIBE)", s, m)
		}
	}
	switch base {
	case "ppr":
	case "slot", "core", "hwthread":
		cfg.MapBy = MapBySlot
	case "node":
		cfg.MapBy = MapByNode
	default:
		return want
	}
	return nil
}

// mcaError says that ftmpi has no MCA, and what does the job of kv's key
// ("KEY VALUE", joinPairFlags).
func mcaError(kv string) string {
	key, _, _ := strings.Cut(kv, " ")
	msg := fmt.Sprintf("ftmpi has no MCA parameters (--mca %s): ", kv)
	k := strings.ToLower(key)
	switch {
	case strings.HasSuffix(k, "_if_include") || strings.HasSuffix(k, "_if_exclude"):
		return msg + "name the network between hosts with --interface IF|CIDR"
	case k == "btl" || k == "pml" || k == "mtl" || k == "osc" || strings.HasPrefix(k, "btl_"):
		return msg + "choose the transport with --transport auto|unix|tcp|shm (or $FTMPI_TRANSPORT)"
	case strings.HasSuffix(k, "rsh_agent") || k == "plm" || strings.HasPrefix(k, "plm_"):
		return msg + "choose how hosts are reached with --launch-agent CMD (or $FTMPI_SSH)"
	case strings.Contains(k, "binding_policy"):
		return msg + "use --bind-to core|socket|hwthread|none"
	case strings.Contains(k, "mapping_policy"):
		return msg + "use --map-by slot|node|ppr:N:node"
	case strings.Contains(k, "oversubscribe"):
		return msg + "use --oversubscribe"
	case k == "coll" || strings.HasPrefix(k, "coll_"):
		return msg + "ftmpi chooses its collective algorithms itself; drop the flag"
	}
	return msg + "no ftmpirun flag or variable does this; drop the flag"
}

// validatePerNode applies PerNode (-N): every host takes that many ranks
// whatever its slots, and N defaults to all of them.
func (cfg *Config) validatePerNode() error {
	if cfg.PerNode == 0 {
		return nil
	}
	if cfg.PerNode < 0 || cfg.PerNode > MaxProcs {
		return &UsageError{fmt.Sprintf("invalid -N %d: want 1 to %d ranks per host", cfg.PerNode, MaxProcs)}
	}
	hosts := max(1, len(cfg.Hosts))
	if cfg.Hosts != nil {
		hs := make([]HostSlots, len(cfg.Hosts))
		for i, h := range cfg.Hosts {
			hs[i] = HostSlots{Name: h.Name, Slots: cfg.PerNode}
		}
		cfg.Hosts = hs
	}
	total := cfg.PerNode * hosts
	if cfg.N == 0 {
		cfg.N = total
	}
	if cfg.N+cfg.Spares > total && !cfg.Oversubscribe {
		return &UsageError{fmt.Sprintf("-n %d (with %d spares) is more than -N %d ranks per host on %d host(s): use --oversubscribe or a smaller -n",
			cfg.N, cfg.Spares, cfg.PerNode, hosts)}
	}
	return nil
}

// defaultBind is the binding of a job that does not name one (--bind-to
// unset), Open MPI 4.1's at np <= 2: a job of at most two processes
// (ranks and spares) on this host alone is bound to cores, one a rank;
// any other is not (Open MPI binds those to sockets: on a one-socket host
// that is no binding, and ranks that outnumber the cores are left to the
// scheduler). Measured on 2 cores (docs/benchmarks.md, "Session 18: the
// 1-byte path"): a bound np-2 ping-pong stays at Open MPI's latency under
// load where an unbound one falls into 10-20 us hops; a bound Go rank runs
// with GOMAXPROCS 1 (its affinity mask), which the fault-tolerance tests
// pass with. A pure function of the configuration.
func (cfg *Config) defaultBind() string {
	if cfg.Hosts == nil && cfg.N+cfg.Spares <= 2 {
		return hostagent.BindCore
	}
	return hostagent.BindNone
}

// rankBind is the binding a rank is started with (hostagent.RankSpec.Bind):
// "" for none.
func (cfg *Config) rankBind() string {
	if cfg.BindTo == hostagent.BindNone {
		return ""
	}
	return cfg.BindTo
}

// validateMpirun checks the settings of the mpirun flags.
func (cfg *Config) validateMpirun() error {
	b, _, _ := strings.Cut(strings.ToLower(cfg.BindTo), ":") // Open MPI's modifiers (overload-allowed...) change nothing here
	switch b {
	case "":
		cfg.BindTo = cfg.defaultBind()
	case hostagent.BindNone:
		cfg.BindTo = hostagent.BindNone // said: kept, so that validating again does not bind
	case hostagent.BindCore, hostagent.BindSocket, hostagent.BindHWThread:
		cfg.BindTo = b
	default:
		return &UsageError{fmt.Sprintf("invalid --bind-to %q: want core, socket, hwthread or none", cfg.BindTo)}
	}
	if cfg.StdinRank < 0 || cfg.StdinRank >= cfg.N {
		return &UsageError{fmt.Sprintf("invalid --stdin %d: the job's ranks are 0 to %d", cfg.StdinRank, cfg.N-1)}
	}
	if cfg.OutputDir != "" {
		abs, err := filepath.Abs(cfg.OutputDir)
		if err != nil {
			return &UsageError{fmt.Sprintf("invalid --output-filename %q: %v", cfg.OutputDir, err)}
		}
		cfg.OutputDir = abs
	}
	return nil
}

// rankStdin is what rank 0 gets as its standard input in launch restart
// (the first launch only: a relaunch's rank 0 gets /dev/null, the input
// having gone to the first): a non-terminal file as is, a terminal only
// if ftmpirun is in its foreground at the start, anything else through a pipe that
// a goroutine fills (it ends at the end of in, or at
// the first write after rank 0 closed its end; a terminal that is never
// typed on keeps it blocked in Read until ftmpirun exits). stop closes
// ftmpirun's copy of what it handed to rank 0, once rank 0 is started.
func rankStdin(in io.Reader, restart int) (f *os.File, stop func()) {
	if in == nil || restart > 0 {
		return nil, func() {}
	}
	if file, ok := in.(*os.File); ok {
		if _, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS); err != nil {
			return file, func() {} // a pipe or a file: rank 0 reads it itself
		}
		// A terminal: rank 0, in its own process group, would be stopped
		// (SIGTTIN) reading it; ftmpirun reads it instead, if it is in
		// the foreground (in the background the read would stop it).
		if pg, err := unix.IoctlGetInt(int(file.Fd()), unix.TIOCGPGRP); err != nil || pg != unix.Getpgrp() {
			return nil, func() {}
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, func() {}
	}
	go func() {
		_, _ = io.Copy(w, in)
		w.Close()
	}()
	return r, func() { r.Close() }
}

// parseStdin parses Open MPI's --stdin: a rank, or none ("all" is not
// provided: ftmpirun forwards its stdin to one rank).
func parseStdin(s string, cfg *Config) error {
	if strings.EqualFold(s, "none") {
		cfg.NoStdin = true
		return nil
	}
	r, err := strconv.Atoi(s)
	if err != nil || r < 0 {
		return fmt.Errorf("invalid --stdin %q: want a rank or none (stdin goes to one rank)", s)
	}
	cfg.StdinRank = r
	return nil
}

// withStdin gives stdin to rank in groups (copying the spec, which the
// respawn and spawn templates share) and returns the rank's group, -1 if
// none. For a rank on another host, ftmpirun reads stdin and its agent
// writes it into the rank's pipe (remoteAgent.forwardStdin).
func withStdin(groups [][]hostagent.RankSpec, stdin *os.File, rank int) int {
	for g, specs := range groups {
		for i, s := range specs {
			if s.Rank == rank && s.Incarnation == 0 {
				c := slices.Clone(specs)
				c[i].Stdin = stdin
				groups[g] = c
				return g
			}
		}
	}
	return -1
}

// joinPairFlags rewrites the flags of mpirun and mpiexec that take two
// values, before package flag (which knows one) parses args: hydra's
// -genv NAME VALUE and -env NAME VALUE become -x NAME=VALUE; --mca KEY
// VALUE (also -mca, --gmca) becomes --mca "KEY VALUE" (refused later, with
// its value in the message). It stops at PROGRAM: the first argument that
// is neither a flag nor a flag's value (bool flags of fs take none), or
// after "--".
func joinPairFlags(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			out = append(out, a)
			continue
		}
		switch name {
		case "genv", "env":
			if i+2 < len(args) {
				out = append(out, "-x", args[i+1]+"="+args[i+2])
				i += 2
				continue
			}
		case "mca", "gmca":
			if i+2 < len(args) {
				out = append(out, a, args[i+1]+" "+args[i+2])
				i += 2
				continue
			}
		}
		out = append(out, a)
		if f := fs.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
		}
		if i+1 < len(args) { // the flag's value (or an unknown flag's, which fails anyway)
			out = append(out, args[i+1])
			i++
		}
	}
	return out
}
