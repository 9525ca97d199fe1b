package hostagent

import "testing"

// --bind-to, computed from a topology.
func TestBindCPUs(t *testing.T) {
	cores := []cpuCore{{0, 0, []int{0, 4}}, {0, 1, []int{1, 5}}, {1, 0, []int{2, 6}}, {1, 1, []int{3, 7}}}
	for _, tc := range []struct {
		policy string
		slot   int
		cpus   string
		desc   string
	}{
		{BindCore, 0, "0,4", "socket 0, core 0"},
		{BindCore, 2, "2,6", "socket 1, core 0"},
		{BindCore, 5, "1,5", "socket 0, core 1"}, // wraps around
		{BindSocket, 3, "2-3,6-7", "socket 1"},
		{BindHWThread, 1, "4", "socket 0, core 0, hwthread 4"},
	} {
		cpus, desc := bindCPUs(tc.policy, tc.slot, cores)
		if cpuList(cpus) != tc.cpus || desc != tc.desc {
			t.Errorf("%s slot %d: %s (%s), want %s (%s)", tc.policy, tc.slot, cpuList(cpus), desc, tc.cpus, tc.desc)
		}
	}
}
