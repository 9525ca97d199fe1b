package p2p

import (
	"errors"
	"strings"
	"testing"
)

// A lost peer's error names its rank once (issue 26: "rank 2: rank 2
// failed: rank 2 (pid ...)"), whether or not the cause names it, and
// stays an ErrPeerLost.
func TestPeerLostNamesTheRankOnce(t *testing.T) {
	for _, tc := range []struct {
		cause any
		want  string
	}{
		{errors.New("rank 2 (pid 123) killed by signal 9"), "peer lost: rank 2 (pid 123) killed by signal 9"},
		{errors.New("rank 2 declared failed: connection broken"), "peer lost: rank 2 declared failed: connection broken"},
		{errors.New("connection reset by peer"), "peer lost: rank 2: connection reset by peer"},
		{errors.New("rank 20 (pid 5) exited with status 1"), "peer lost: rank 2: rank 20 (pid 5) exited with status 1"},
	} {
		err := peerLost(2, tc.cause)
		if !errors.Is(err, ErrPeerLost) || err.Error() != tc.want {
			t.Errorf("peerLost(2, %q) = %q (Is %v), want %q", tc.cause, err, errors.Is(err, ErrPeerLost), tc.want)
		}
		if n := strings.Count(err.Error(), "rank 2 ") + strings.Count(err.Error(), "rank 2:"); n != 1 {
			t.Errorf("%q names rank 2 %d times", err, n)
		}
	}
}
