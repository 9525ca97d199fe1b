package rte

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// A spawn call becomes the launcher's request: one command as the
// request's own, several as its Apps with their processes summed (a
// command below 1 process makes the root's count that), a root count
// below 1 refused by the root itself, and a parent's refusal (with the
// failed parents it knows) replacing it.
func TestSpawnRequestFromCall(t *testing.T) {
	cmds := []SpawnCmd{{Command: "a", Args: []string{"-x"}, MaxProcs: 2, Dir: "/d"}, {Command: "b", MaxProcs: 3}}
	for _, tc := range []struct {
		name string
		call SpawnCall
		want boot.SpawnRequest
	}{
		{"single", SpawnCall{Procs: []int{0, 1}, Pairs: []int{4, 5}, Root: true, Cmds: cmds[:1]},
			boot.SpawnRequest{Key: "k", Procs: []int{0, 1}, Pairs: []int{4, 5}, Root: true, Command: "a", Args: []string{"-x"}, MaxProcs: 2, Dir: "/d"}},
		{"not root", SpawnCall{Cmds: cmds[:1], Spares: true},
			boot.SpawnRequest{Key: "k", Spares: true}},
		{"not root, the parents listed", SpawnCall{Procs: []int{3, 5, 7}, RootProc: 5, Pairs: []int{4, 5}, Cmds: cmds[:1]},
			boot.SpawnRequest{Key: "k", RootProc: 5, Pairs: []int{4, 5}}}, // only the root lists them
		{"multiple", SpawnCall{Root: true, Cmds: cmds, Multiple: true},
			boot.SpawnRequest{Key: "k", Root: true, MaxProcs: 5, Apps: []boot.SpawnApp{{Command: "a", Args: []string{"-x"}, MaxProcs: 2, Dir: "/d"}, {Command: "b", MaxProcs: 3}}}},
		{"multiple, one empty", SpawnCall{Root: true, Cmds: []SpawnCmd{cmds[0], {MaxProcs: -1}, cmds[1]}, Multiple: true},
			boot.SpawnRequest{Key: "k", Root: true, MaxProcs: -1, Error: "maxprocs -1 at the root: must be at least 1",
				Apps: []boot.SpawnApp{{Command: "a", Args: []string{"-x"}, MaxProcs: 2, Dir: "/d"}, {MaxProcs: -1}, {Command: "b", MaxProcs: 3}}}},
		{"maxprocs 0", SpawnCall{Root: true, Cmds: []SpawnCmd{{Command: "a"}}},
			boot.SpawnRequest{Key: "k", Root: true, Command: "a", Error: "maxprocs 0 at the root: must be at least 1"}},
		{"refusal", SpawnCall{Root: true, Cmds: []SpawnCmd{{Command: "a"}}, Refusal: "rank 1 failed", Failed: []int{1}},
			boot.SpawnRequest{Key: "k", Root: true, Command: "a", Error: "rank 1 failed", Failed: []int{1}}},
	} {
		if got := spawnRequest("k", tc.call); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: request %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The launcher's refusal of a spawn comes back in the API's terms, the
// same class at every parent: a process failure, the root's count below
// 1, or any other refusal.
func TestSpawnRefusalClasses(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, l := connect(t, make(chan struct{}))
	defer p.Close()
	r := new(Rank) // names the calls: the first of context c is "c/1"
	for _, tc := range []struct {
		call   SpawnCall
		failed []int
		want   SpawnClass
	}{
		{SpawnCall{Ctx: 1, Root: true, Cmds: []SpawnCmd{{Command: "a", MaxProcs: 2}}}, []int{1}, SpawnProcFailed},
		{SpawnCall{Ctx: 2, Root: true, Cmds: []SpawnCmd{{Command: "a", MaxProcs: 0}}}, nil, SpawnBadArg},
		{SpawnCall{Ctx: 3, Cmds: []SpawnCmd{{Command: "a", MaxProcs: 0}}}, nil, SpawnNotStarted}, // not the root's count
		{SpawnCall{Ctx: 4, Root: true, Cmds: []SpawnCmd{{Command: "nope", MaxProcs: 1}}}, nil, SpawnNotStarted},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := p.Spawn(r, nil, tc.call)
			done <- err
		}()
		key := fmt.Sprintf("%d/1", tc.call.Ctx)
		m := l.read()
		if m.Op != ctlwire.OpSpawn {
			t.Fatalf("call %s: launcher got %+v", key, m)
		}
		var req ctlwire.SpawnRequest
		if err := json.Unmarshal([]byte(m.Reason), &req); err != nil || !strings.HasPrefix(req.Key, key+"/") {
			t.Fatalf("call %s: request %q (%v)", key, m.Reason, err)
		}
		l.send(ctlwire.Msg{Op: ctlwire.OpSpawn, ID: m.ID, Error: "refused " + key, Failed: tc.failed})
		err := recv(t, done, "Spawn's return")
		var se *SpawnError
		if !errors.As(err, &se) || se.Class != tc.want || !strings.Contains(se.Reason, "refused "+key) {
			t.Errorf("call %s: error %v, want class %d", key, err, tc.want)
		}
	}
}

// AppNum is the index the launcher gave the process's command, 0 when it
// gave none or a bad one.
func TestAppNum(t *testing.T) {
	var p Process[world]
	for v, want := range map[string]int{"": 0, "2": 2, "-1": 0, "x": 0} {
		t.Setenv(boot.EnvAppNum, v)
		if got := p.AppNum(); got != want {
			t.Errorf("%s=%q: AppNum %d, want %d", boot.EnvAppNum, v, got, want)
		}
	}
}
