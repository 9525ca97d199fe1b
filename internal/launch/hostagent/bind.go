package hostagent

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPU binding (--bind-to): each rank is bound by its slot, its place among
// the ranks its agent starts on its host (0, 1, ...), to the CPUs of one
// core, socket or hardware thread, taken in order among the CPUs ftmpirun
// itself may use (its affinity mask: a cgroup or taskset limit is kept).
// More ranks than cores (sockets, threads) wrap around. The mask is set
// on the thread that forks the rank, which the child inherits, so every
// thread the rank ever starts is bound, from its first instruction on.

// Binding policies (RankSpec.Bind; ftmpirun --bind-to).
const (
	BindNone     = "none"
	BindCore     = "core"
	BindSocket   = "socket"
	BindHWThread = "hwthread"
)

// cpuCore is one core: its socket and its hardware threads (CPU numbers).
type cpuCore struct {
	socket, core int
	cpus         []int
}

// hostCores lists the cores of the CPUs this process may run on, in the
// order of their first CPU number.
func hostCores() ([]cpuCore, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cores []cpuCore
	index := map[[2]int]int{}
	for cpu := 0; cpu < len(set)*64; cpu++ {
		if !set.IsSet(cpu) {
			continue
		}
		topo := func(name string, def int) int {
			b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/%s", cpu, name))
			if err != nil {
				return def
			}
			v, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || v < 0 {
				return def
			}
			return v
		}
		socket := topo("physical_package_id", 0)
		core := topo("core_id", cpu)
		k := [2]int{socket, core}
		i, ok := index[k]
		if !ok {
			i = len(cores)
			index[k] = i
			cores = append(cores, cpuCore{socket: socket, core: core})
		}
		cores[i].cpus = append(cores[i].cpus, cpu)
	}
	if len(cores) == 0 {
		return nil, fmt.Errorf("no CPU in this process's affinity mask")
	}
	return cores, nil
}

// bindCPUs is the CPUs of slot under policy, and how to say it.
func bindCPUs(policy string, slot int, cores []cpuCore) ([]int, string) {
	c := cores[slot%len(cores)]
	switch policy {
	case BindHWThread:
		var all []cpuCore
		for _, k := range cores {
			for _, cpu := range k.cpus {
				all = append(all, cpuCore{socket: k.socket, core: k.core, cpus: []int{cpu}})
			}
		}
		t := all[slot%len(all)]
		return t.cpus, fmt.Sprintf("socket %d, core %d, hwthread %d", t.socket, t.core, t.cpus[0])
	case BindSocket:
		var cpus []int
		for _, k := range cores {
			if k.socket == c.socket {
				cpus = append(cpus, k.cpus...)
			}
		}
		slices.Sort(cpus)
		return cpus, fmt.Sprintf("socket %d", c.socket)
	}
	return c.cpus, fmt.Sprintf("socket %d, core %d", c.socket, c.core)
}

// cpuList is the kernel's list form of cpus (sorted): "0-3,6".
func cpuList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// startBound starts a process like os.StartProcess, bound to cpus: the
// fork happens on a thread locked to this call, its affinity set to cpus
// for the fork (the child inherits it) and then restored. The thread must
// outlive the child: the kernel's parent-death signal (Pdeathsig) fires
// when the thread that forked it exits. If the mask cannot be restored,
// the thread stays locked to a goroutine (so no other goroutine runs with
// that mask) until done is closed, after the child is reaped, and then
// ends.
func startBound(cpus []int, path string, argv []string, attr *os.ProcAttr, done <-chan struct{}) (*os.Process, error) {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	type result struct {
		p   *os.Process
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var orig unix.CPUSet
		if err := unix.SchedGetaffinity(0, &orig); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("--bind-to: %v", err)}
			return
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("--bind-to: cannot bind to CPUs %s: %v", cpuList(cpus), err)}
			return
		}
		p, err := os.StartProcess(path, argv, attr)
		ch <- result{p, err}
		if unix.SchedSetaffinity(0, &orig) != nil {
			if err == nil {
				<-done // the thread is the child's parent: it must live as long
			}
			return // still locked: the thread, with its mask, ends with the goroutine
		}
		runtime.UnlockOSThread()
	}()
	r := <-ch
	return r.p, r.err
}

// bindingReport is the line of --report-bindings for a rank (in the
// spirit of Open MPI's "MCW rank R bound to ...").
func bindingReport(host string, rank, pid int, policy, desc string, cpus []int) string {
	if policy == "" {
		all := []int{}
		if cores, err := hostCores(); err == nil {
			for _, c := range cores {
				all = append(all, c.cpus...)
			}
		}
		slices.Sort(all)
		return fmt.Sprintf("rank %d (pid %d on %s) not bound: cpus %s", rank, pid, host, cpuList(all))
	}
	return fmt.Sprintf("rank %d (pid %d on %s) bound to %s: cpus %s", rank, pid, host, desc, cpuList(cpus))
}
