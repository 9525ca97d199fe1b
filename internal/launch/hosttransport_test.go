package launch

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// "auto" becomes Unix sockets only past shmCrowdedLoad ranks a core; an
// explicit transport is kept whatever the crowd.
func TestHostTransport(t *testing.T) {
	for _, tc := range []struct {
		transport    string
		ranks, cores int
		want         string
	}{
		{boot.TransportAuto, 2, 2, boot.TransportAuto},
		{boot.TransportAuto, 256, 2, boot.TransportAuto},  // 128 a core
		{boot.TransportAuto, 257, 2, boot.TransportUnix},  // 129 a core
		{boot.TransportAuto, 2000, 2, boot.TransportUnix}, // 1,000 a core
		{boot.TransportAuto, 129, 0, boot.TransportUnix},  // no cores counts as one
		{boot.TransportAuto, 2000, 64, boot.TransportAuto},
		{boot.TransportShm, 2000, 2, boot.TransportShm},
		{boot.TransportTCP, 2000, 2, boot.TransportTCP},
		{boot.TransportUnix, 2, 2, boot.TransportUnix},
	} {
		if got := hostTransport(tc.transport, tc.ranks, tc.cores); got != tc.want {
			t.Errorf("hostTransport(%q, %d ranks, %d cores) = %q, want %q", tc.transport, tc.ranks, tc.cores, got, tc.want)
		}
	}
}
