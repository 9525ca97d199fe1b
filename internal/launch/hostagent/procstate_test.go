package hostagent

import "testing"

func TestParseProcStat(t *testing.T) {
	for _, c := range []struct {
		stat  string
		state string
		alive bool
	}{
		{"8572 (cat) R 8445 8445 9774 0 -1 4194304 124 0", "running", true},
		{"8572 (a) b) S 8445 8445 9774 0 -1 4194304 124 0", "sleeping", true},
		{"8572 (rank) R 8445 8445 9774 0 -1 4194308 124 0", "exiting", false}, // PF_EXITING: SIGKILLed, being torn down
		{"8572 (rank) D 8445 8445 9774 0 -1 4194308 124 0", "exiting", false},
		{"8572 (rank) Z 8445 8445 9774 0 -1 4194308 124 0", "dead", false},
		{"8572 (rank) T 8445 8445 9774 0 -1 4194304 124 0", "stopped", false},
		{"8572 (rank", "unknown", false},
	} {
		if state, alive := parseProcStat([]byte(c.stat)); state != c.state || alive != c.alive {
			t.Errorf("%q: %s %v, want %s %v", c.stat, state, alive, c.state, c.alive)
		}
	}
}
