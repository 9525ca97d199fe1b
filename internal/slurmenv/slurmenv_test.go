package slurmenv

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestHostlist(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"n1", []string{"n1"}},
		{"n[1-3,5],m7", []string{"n1", "n2", "n3", "n5", "m7"}},
		{"node[08-10]", []string{"node08", "node09", "node10"}},
		{"r[1-2]n[01-02]", []string{"r1n01", "r1n02", "r2n01", "r2n02"}},
		{"h[1-3]", []string{"h1", "h2", "h3"}},
		{"a,b[2],c-1", []string{"a", "b2", "c-1"}},
		{"x[0]-ib", []string{"x0-ib"}},
		{"fd00::1", []string{"fd00::1"}},
	} {
		got, err := Hostlist(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Hostlist(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, err string }{
		{"", "empty hostlist"},
		{"n1,,n2", "empty name"},
		{"n[1-3", "[ without ]"},
		{"n1]", "] without ["},
		{"n[]", "empty brackets"},
		{"n[3-1]", "end before start"},
		{"n[a-b]", "want N or N-M"},
		{"n[1-2,]", "want N or N-M"},
		{"n[1-99999999999]", "number too large"},
		{"n[1-4000000000]", "more than 65536 hosts"},
		{"r[1-1000]n[1-1000]", "more than 65536 hosts"},
		{"n[1-2],n2", "n2 listed twice"},
		{"n[[1]]", "misplaced bracket"},
		{"n;rm", "not allowed"},
		{"n 1", "not allowed"},
	} {
		_, err := Hostlist(c.in)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Hostlist(%q): error %v, want one containing %q", c.in, err, c.err)
		}
	}
}

func TestCounts(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"4", []int{4}},
		{"4(x3),2", []int{4, 4, 4, 2}},
		{"1(x2),2(x1)", []int{1, 1, 2}},
	} {
		got, err := Counts(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Counts(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, err string }{
		{"", "empty count list"},
		{"4(x3", "want N(xK)"},
		{"4(3)", "want N or N(xK)"},
		{"x", "want N or N(xK)"},
		{"4(x0)", "repeat \"0\" must be"},
		{"4(x99999999)", "must be 1..65536"},
		{"99999999999999999999", "too large"},
		{"1(x65536),1", "more than 65536 nodes"},
	} {
		_, err := Counts(c.in)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Counts(%q): error %v, want one containing %q", c.in, err, c.err)
		}
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	if _, ok, err := FromEnv(env(map[string]string{EnvNodeList: "n1"})); ok || err != nil {
		t.Fatalf("no job id: ok=%v err=%v", ok, err)
	}
	a, ok, err := FromEnv(env(map[string]string{EnvJobID: "7", EnvNodeList: "n[1-3]", EnvCPUsPerNode: "4(x2),2", EnvTasksPerNode: "1(x3)"}))
	want := []Host{{"n1", 4}, {"n2", 4}, {"n3", 2}}
	if !ok || err != nil || a.JobID != "7" || !reflect.DeepEqual(a.Hosts, want) || a.SlotsFrom != EnvCPUsPerNode {
		t.Fatalf("salloc -N3: %+v %v %v", a, ok, err)
	}
	// A task count given (sbatch -n 5): the tasks per node are the slots.
	a, _, err = FromEnv(env(map[string]string{EnvJobID: "7", EnvNodeList: "n[1-3]", EnvCPUsPerNode: "4(x3)", EnvTasksPerNode: "2(x2),1", EnvNTasks: "5"}))
	if err != nil || !reflect.DeepEqual(a.Hosts, []Host{{"n1", 2}, {"n2", 2}, {"n3", 1}}) || a.SlotsFrom != EnvTasksPerNode {
		t.Fatalf("sbatch -n5: %+v %v", a, err)
	}
	for _, c := range []struct {
		m   map[string]string
		err string
	}{
		{map[string]string{EnvJobID: "7", EnvNodeList: "n[1-3]", EnvCPUsPerNode: "4(x2)"}, "gives 3 nodes but SLURM_JOB_CPUS_PER_NODE=\"4(x2)\" gives 2"},
		{map[string]string{EnvJobID: "7", EnvNodeList: "n[1-3"}, "SLURM_JOB_NODELIST: hostlist"},
		{map[string]string{EnvJobID: "7", EnvNodeList: "n1"}, "neither SLURM_JOB_CPUS_PER_NODE nor SLURM_TASKS_PER_NODE"},
		{map[string]string{EnvJobID: "7", EnvNodeList: "n1", EnvCPUsPerNode: "0"}, "node n1 has 0 slots"},
		{map[string]string{EnvJobID: "7", EnvNodeList: "n1", EnvCPUsPerNode: "x"}, "SLURM_JOB_CPUS_PER_NODE: count list"},
	} {
		_, ok, err := FromEnv(env(c.m))
		if !ok || err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: ok=%v error %v, want one containing %q", c.m, ok, err, c.err)
		}
	}
}

// FuzzHostlist: any input gives names or an error, never a panic; the
// names are valid, distinct, at most MaxHosts, and listing them plainly
// parses back to the same.
func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"n[1-3,5],m7", "r[1-2]n[01-02]", "a,b", "n[08-10]", "n[", "]", "n[1-2]x[3-4]y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := Hostlist(s)
		if err != nil {
			if names != nil {
				t.Fatalf("names with an error: %q", names)
			}
			return
		}
		if len(names) == 0 || len(names) > MaxHosts {
			t.Fatalf("%q: %d names", s, len(names))
		}
		again, err := Hostlist(strings.Join(names, ","))
		if err != nil || !reflect.DeepEqual(again, names) {
			t.Fatalf("%q: %q does not parse back: %q %v", s, names, again, err)
		}
	})
}

// FuzzCounts: any input gives counts or an error; the counts written back
// in the N(xK) form parse to the same.
func FuzzCounts(f *testing.F) {
	for _, s := range []string{"4(x3),2", "1", "2(x1)", "(x", "1(x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := Counts(s)
		if err != nil {
			return
		}
		if len(cs) == 0 || len(cs) > MaxHosts {
			t.Fatalf("%q: %d counts", s, len(cs))
		}
		var parts []string
		for i := 0; i < len(cs); {
			j := i
			for j < len(cs) && cs[j] == cs[i] {
				j++
			}
			parts = append(parts, fmt.Sprintf("%d(x%d)", cs[i], j-i))
			i = j
		}
		again, err := Counts(strings.Join(parts, ","))
		if err != nil || !reflect.DeepEqual(again, cs) {
			t.Fatalf("%q: %v does not parse back: %v %v", s, cs, again, err)
		}
	})
}
