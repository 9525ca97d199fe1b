package member

import (
	"testing"
)

func id(rank, inc int) ID { return ID{Rank: rank, Inc: inc} }

func mustNew(t *testing.T, n int, self ID) *View {
	t.Helper()
	v, err := New(n, self)
	if err != nil {
		t.Fatalf("New(%d, %v): %v", n, self, err)
	}
	return v
}

func TestCheckNamesTheBadField(t *testing.T) {
	for _, tc := range []struct {
		n    int
		self ID
		want string
	}{
		{0, id(0, 0), "N is 0, must be at least 1"},
		{-3, id(0, 0), "N is -3, must be at least 1"},
		{4, id(4, 0), "Self is 4, must be in [0, N=4)"},
		{4, id(-1, 0), "Self is -1, must be in [0, N=4)"},
		{4, id(2, -1), "Incarnation is -1, must not be negative"},
	} {
		err := Check(tc.n, tc.self)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Check(%d, %v) = %v, want %q", tc.n, tc.self, err, tc.want)
		}
		if _, err := New(tc.n, tc.self); err == nil || err.Error() != tc.want {
			t.Errorf("New(%d, %v) = %v, want %q", tc.n, tc.self, err, tc.want)
		}
	}
	if err := Check(1, id(0, 7)); err != nil {
		t.Errorf("Check(1, 0.7) = %v, want nil", err)
	}
}

func TestNewViewEveryoneLive(t *testing.T) {
	v := mustNew(t, 4, id(2, 3))
	if v.N() != 4 || v.Self() != 2 || v.Failures() != 0 || v.SelfFailed() {
		t.Fatalf("N %d Self %d Failures %d SelfFailed %v", v.N(), v.Self(), v.Failures(), v.SelfFailed())
	}
	for r := range 4 {
		want := 0
		if r == 2 {
			want = 3
		}
		if got, live := v.Current(r); got != id(r, want) || !live {
			t.Errorf("Current(%d) = %v, %v; want %v, true", r, got, live, id(r, want))
		}
	}
}

func TestFailIsMonotone(t *testing.T) {
	v := mustNew(t, 4, id(0, 0))
	if !v.Fail(id(1, 0)) || v.Live(1) || !v.IsFailed(id(1, 0)) || v.IsFailed(id(1, 1)) || v.Failures() != 1 {
		t.Fatalf("after Fail(1.0): live %v, failures %d", v.Live(1), v.Failures())
	}
	if v.Fail(id(1, 0)) || v.Failures() != 1 {
		t.Fatalf("a repeated Fail was news, or counted: failures %d", v.Failures())
	}
	// A newer incarnation we never heard of, which then failed: it and the
	// one between count.
	if !v.Fail(id(1, 2)) || v.Failures() != 3 || !v.IsFailed(id(1, 1)) {
		t.Fatalf("Fail(1.2): failures %d, want 3", v.Failures())
	}
	if got, live := v.Current(1); got != id(1, 2) || live {
		t.Fatalf("Current(1) = %v, %v; want 1.2, false", got, live)
	}
	// An older incarnation is old news.
	if v.Fail(id(1, 1)) || v.Failures() != 3 {
		t.Fatalf("Fail of an older incarnation was news")
	}
	if v.SelfFailed() {
		t.Fatal("another rank's failure failed this process")
	}
}

func TestBadInputIsIgnoredNotAPanic(t *testing.T) {
	v := mustNew(t, 3, id(0, 0))
	for _, p := range []ID{id(-1, 0), id(3, 0), id(1, -1)} {
		if v.Fail(p) || v.Join(p) || v.IsFailed(p) {
			t.Errorf("%v: Fail, Join or IsFailed accepted it", p)
		}
	}
	if v.Live(-1) || v.Live(3) {
		t.Error("a rank outside the world is live")
	}
	if got, live := v.Current(7); got != id(7, 0) || live {
		t.Errorf("Current(7) = %v, %v; want 7.0, false", got, live)
	}
	if v.Failures() != 0 {
		t.Errorf("bad input counted as failures: %d", v.Failures())
	}
}

func TestJoinReplacesAndNeverRevives(t *testing.T) {
	v := mustNew(t, 3, id(0, 0))
	if v.Join(id(1, 0)) {
		t.Fatal("Join of the live current incarnation was news")
	}
	if v.Join(id(0, 1)) {
		t.Fatal("Join of this process's own rank was accepted")
	}
	if !v.Join(id(1, 2)) || !v.Live(1) || !v.IsFailed(id(1, 1)) || v.IsFailed(id(1, 2)) {
		t.Fatalf("Join(1.2): live %v", v.Live(1))
	}
	if v.Failures() != 2 { // 1.0 and 1.1 are failed
		t.Fatalf("Join(1.2) counted %d failures, want 2", v.Failures())
	}
	if v.Join(id(1, 2)) || v.Join(id(1, 1)) {
		t.Fatal("a repeated or older Join was news")
	}
	v.Fail(id(1, 2))
	if v.Join(id(1, 2)) || v.Live(1) {
		t.Fatal("Join brought a failed incarnation back")
	}
	if !v.Join(id(1, 3)) || !v.Live(1) || v.Failures() != 3 {
		t.Fatalf("Join(1.3) after 1.2 failed: live %v failures %d", v.Live(1), v.Failures())
	}
}

func TestSelfFailedOnlyForOwnIncarnation(t *testing.T) {
	v := mustNew(t, 3, id(1, 2))
	if !v.Fail(id(1, 1)) || v.SelfFailed() || !v.Live(1) {
		t.Fatal("the failure of an older incarnation of this rank failed this process")
	}
	if !v.Fail(id(1, 2)) || !v.SelfFailed() {
		t.Fatal("Fail of this process did not set SelfFailed")
	}
	w := mustNew(t, 3, id(1, 0))
	if !w.Fail(id(1, 4)) || !w.SelfFailed() {
		t.Fatal("Fail of a newer incarnation of this rank did not fail this process")
	}
}

func TestRingSkipsFailedRanks(t *testing.T) {
	ring := func(v *View) [2]int { s, p := v.Ring(); return [2]int{s, p} }
	if got := ring(mustNew(t, 1, id(0, 0))); got != [2]int{None, None} {
		t.Errorf("alone: %v", got)
	}
	if got := ring(mustNew(t, 2, id(0, 0))); got != [2]int{1, 1} {
		t.Errorf("two ranks: %v", got)
	}
	v := mustNew(t, 6, id(4, 0))
	if got := ring(v); got != [2]int{5, 3} {
		t.Fatalf("failure-free: %v", got)
	}
	v.Fail(id(5, 0))
	v.Fail(id(0, 0))
	v.Fail(id(3, 0))
	if got := ring(v); got != [2]int{1, 2} { // wraps around past 5 and 0
		t.Fatalf("after 5, 0, 3 failed: %v, want [1 2]", got)
	}
	v.Fail(id(1, 0))
	v.Fail(id(2, 0))
	if got := ring(v); got != [2]int{None, None} {
		t.Fatalf("last live rank: %v", got)
	}
	v.Join(id(0, 1))
	if got := ring(v); got != [2]int{0, 0} {
		t.Fatalf("after 0.1 joined: %v", got)
	}
}

func TestIDString(t *testing.T) {
	if s := id(3, 1).String(); s != "3.1" {
		t.Errorf("String = %q, want 3.1", s)
	}
}
