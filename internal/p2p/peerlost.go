package p2p

import (
	"fmt"
	"strconv"
	"strings"
)

// peerLost is ErrPeerLost for peer with its cause, naming the peer once
// (issue 26): "peer lost: rank P: cause", or "peer lost: cause" when the
// cause begins by naming the rank itself (the launcher's "rank P (pid N)
// killed by signal 9", the detector's "rank P declared failed: ...").
func peerLost(peer int, cause any) error {
	s := fmt.Sprint(cause)
	name := "rank " + strconv.Itoa(peer)
	if rest, ok := strings.CutPrefix(s, name); ok && (rest == "" || strings.ContainsRune(" :,", rune(rest[0]))) {
		return fmt.Errorf("%w: %s", ErrPeerLost, s)
	}
	return fmt.Errorf("%w: %s: %s", ErrPeerLost, name, s)
}
