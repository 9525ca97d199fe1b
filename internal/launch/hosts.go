package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// HostSlots is one host of a multi-host job and how many ranks it takes.
type HostSlots struct {
	Name  string
	Slots int
}

// parseHostList parses --host: "h1:4,h2:4,h3" (a host without a count has
// one slot; a host named twice adds up, as in mpirun).
func parseHostList(s string) ([]HostSlots, error) {
	var out []HostSlots
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("invalid --host %q: empty host name", s)
		}
		h, err := parseHostSlot(f)
		if err != nil {
			return nil, fmt.Errorf("invalid --host %q: %v", s, err)
		}
		out = addHost(out, h)
	}
	return out, nil
}

// parseHostSlot parses "name" or "name:N" (an IPv6 address in brackets:
// "[fd00::1]:2").
func parseHostSlot(f string) (HostSlots, error) {
	name, count := f, ""
	if strings.HasPrefix(f, "[") {
		end := strings.Index(f, "]")
		if end < 0 {
			return HostSlots{}, fmt.Errorf("%q: missing ]", f)
		}
		name, count = f[1:end], strings.TrimPrefix(f[end+1:], ":")
		if f[end+1:] != "" && !strings.HasPrefix(f[end+1:], ":") {
			return HostSlots{}, fmt.Errorf("%q: text after ]", f)
		}
	} else if i := strings.LastIndexByte(f, ':'); i >= 0 {
		if strings.Count(f, ":") > 1 {
			return HostSlots{}, fmt.Errorf("%q: put an IPv6 address in brackets ([addr]:N)", f)
		}
		name, count = f[:i], f[i+1:]
	}
	if name == "" {
		return HostSlots{}, fmt.Errorf("%q: empty host name", f)
	}
	slots := 1
	if count != "" || strings.HasSuffix(f, ":") {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > MaxProcs {
			return HostSlots{}, fmt.Errorf("%q: slot count %q must be an integer from 1 to %d", f, count, MaxProcs)
		}
		slots = n
	}
	return HostSlots{Name: name, Slots: slots}, nil
}

func addHost(hs []HostSlots, h HostSlots) []HostSlots {
	for i := range hs {
		if hs[i].Name == h.Name {
			hs[i].Slots += h.Slots
			return hs
		}
	}
	return append(hs, h)
}

// parseHostfile reads a hostfile: one host per line, in Open MPI's form
// ("host slots=N", also "max_slots=M": only checked, M >= N) or MPICH's
// ("host:N"); "#" starts a comment. A line longer than maxHostfileLine is
// an error naming its number.
func parseHostfile(path string) ([]HostSlots, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--hostfile: %v", err)
	}
	defer f.Close()
	var out []HostSlots
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxHostfileLine)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("--hostfile %s:%d: %s", path, line, fmt.Sprintf(format, args...))
		}
		h, err := parseHostSlot(fields[0])
		if err != nil {
			return nil, bad("%v", err)
		}
		maxSlots, maxKey := 0, ""
		for _, kv := range fields[1:] {
			k, v, ok := strings.Cut(kv, "=")
			switch {
			case ok && (k == "slots" || k == "cpu" || k == "cpus"):
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > MaxProcs {
					return nil, bad("%s=%q must be an integer from 1 to %d", k, v, MaxProcs)
				}
				h.Slots = n
			case ok && k == "max_slots" || ok && k == "max-slots":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > MaxProcs {
					return nil, bad("%s=%q must be an integer from 1 to %d", k, v, MaxProcs)
				}
				maxSlots, maxKey = n, k
			default:
				return nil, bad("unknown field %q (want slots=N)", kv)
			}
		}
		if maxSlots > 0 && maxSlots < h.Slots {
			return nil, bad("%s=%d is below the host's %d slots (want %s >= slots)", maxKey, maxSlots, h.Slots, maxKey)
		}
		out = addHost(out, h)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("--hostfile %s:%d: line longer than %d bytes", path, line+1, maxHostfileLine)
	} else if err != nil {
		return nil, fmt.Errorf("--hostfile %s: %v", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--hostfile %s: no host", path)
	}
	return out, nil
}

// maxHostfileLine bounds a hostfile's line (bufio.Scanner's default).
const maxHostfileLine = bufio.MaxScanTokenSize

// Map-by policies.
const (
	MapBySlot = "slot"
	MapByNode = "node"
)

// mapRanks places n ranks on hosts: by slot (fill each host's slots in
// order) or by node (round robin over the hosts with a free slot). More
// ranks than slots is an error unless oversubscribe; the extra ranks then
// go round robin over the hosts.
func mapRanks(hosts []HostSlots, n int, mapBy string, oversubscribe bool) ([]int, error) {
	total := 0
	for _, h := range hosts {
		total += h.Slots
	}
	if n > total && !oversubscribe {
		var list []string
		for _, h := range hosts {
			list = append(list, h.Name+":"+strconv.Itoa(h.Slots))
		}
		return nil, &UsageError{fmt.Sprintf("%d ranks asked but only %d slots on the hosts (%s): add slots or use --oversubscribe",
			n, total, strings.Join(list, ","))}
	}
	place := make([]int, 0, n)
	used := make([]int, len(hosts))
	switch mapBy {
	case MapBySlot, "":
		for h := range hosts {
			for used[h] < hosts[h].Slots && len(place) < n {
				place = append(place, h)
				used[h]++
			}
		}
	case MapByNode:
		for len(place) < n && len(place) < total {
			for h := range hosts {
				if used[h] < hosts[h].Slots && len(place) < n {
					place = append(place, h)
					used[h]++
				}
			}
		}
	default:
		return nil, &UsageError{fmt.Sprintf("invalid --map-by %q: want slot or node", mapBy)}
	}
	for h := 0; len(place) < n; h = (h + 1) % len(hosts) {
		place = append(place, h) // oversubscribed
	}
	return place, nil
}

// isLocalHost tells whether name is this host: localhost, its hostname,
// or a name or address that resolves to an address of a local interface.
func isLocalHost(name string) bool {
	switch name {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	if hn, err := os.Hostname(); err == nil && (name == hn || strings.SplitN(hn, ".", 2)[0] == name) {
		return true
	}
	local := localAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if local[ip.Unmap()] {
			return true
		}
	}
	return false
}

func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if pn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(pn.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out
}

// interfaceAddr finds this host's address for --interface spec: an
// interface name (its first IPv4 address, else its first global IPv6
// one) or a CIDR (the local address inside it). "" with toward set: the
// source address of the route to toward.
func interfaceAddr(spec, toward string) (netip.Addr, error) {
	if spec == "" {
		if toward == "" {
			return netip.Addr{}, fmt.Errorf("no --interface and no address to route to")
		}
		c, err := net.Dial("udp", net.JoinHostPort(toward, "9")) // no packet is sent
		if err != nil {
			return netip.Addr{}, fmt.Errorf("no route to %s: %v", toward, err)
		}
		defer c.Close()
		ap, err := netip.ParseAddrPort(c.LocalAddr().String())
		if err != nil {
			return netip.Addr{}, err
		}
		return ap.Addr().Unmap(), nil
	}
	if pfx, err := netip.ParsePrefix(spec); err == nil {
		for ip := range localAddrs() {
			if pfx.Contains(ip) {
				return ip, nil
			}
		}
		return netip.Addr{}, fmt.Errorf("--interface %s: no address of this host is in that network", spec)
	}
	ifc, err := net.InterfaceByName(spec)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--interface %s: %v", spec, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--interface %s: %v", spec, err)
	}
	var v6 netip.Addr
	for _, a := range addrs {
		pn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(pn.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if ip.Is4() {
			return ip, nil
		}
		if !v6.IsValid() && !ip.IsLinkLocalUnicast() {
			v6 = ip
		}
	}
	if v6.IsValid() {
		return v6, nil
	}
	return netip.Addr{}, fmt.Errorf("--interface %s: the interface has no usable address", spec)
}

// validInterface checks --interface's form (a name or a CIDR).
func validInterface(spec string) error {
	if spec == "" || strings.Contains(spec, "/") {
		if spec != "" {
			if _, err := netip.ParsePrefix(spec); err != nil {
				return fmt.Errorf("invalid --interface %q: %v", spec, err)
			}
		}
		return nil
	}
	if len(spec) > 15 || strings.ContainsAny(spec, " :") {
		return fmt.Errorf("invalid --interface %q: want an interface name or a CIDR", spec)
	}
	return nil
}
