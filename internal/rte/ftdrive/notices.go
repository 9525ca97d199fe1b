package ftdrive

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ftmpi/ftmpi/internal/ft/member"
)

// noticesVersion is the first byte of a ctl.FailNotices payload: the
// encoding's version (a frame of another version is refused, not guessed
// at).
const noticesVersion = 1

// maxNoticeHops bounds a notice's hop count: the ring repair's longest
// path is the number of live ranks, under 2^31.
const maxNoticeHops = 1 << 31

// encodeNotices is a ctl.FailNotices payload: the version, the number of
// notices, then each failed process, its incarnation and the hops its
// notice travelled, all unsigned varints.
func encodeNotices(ids []member.ID, hops []int) []byte {
	b := make([]byte, 0, 2+len(ids)*6)
	b = append(b, noticesVersion)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for i, id := range ids {
		b = binary.AppendUvarint(b, uint64(id.Rank))
		b = binary.AppendUvarint(b, uint64(id.Inc))
		b = binary.AppendUvarint(b, uint64(hops[i]))
	}
	return b
}

var errNotices = errors.New("malformed failure-notice batch")

// decodeNotices decodes a ctl.FailNotices payload of a World of n
// processes: at least one notice, at most n, each naming a process of the
// World (incarnation at most 2^30, as a single notice's), nothing after
// them. Any other payload is an error that says what is wrong.
func decodeNotices(b []byte, n int) (ids []member.ID, hops []int, err error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: empty", errNotices)
	}
	if b[0] != noticesVersion {
		return nil, nil, fmt.Errorf("%w: version %d, want %d", errNotices, b[0], noticesVersion)
	}
	b = b[1:]
	next := func(what string, max uint64) (uint64, error) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, fmt.Errorf("%w: truncated %s", errNotices, what)
		}
		if v > max {
			return 0, fmt.Errorf("%w: %s %d > %d", errNotices, what, v, max)
		}
		b = b[k:]
		return v, nil
	}
	cnt, err := next("count", uint64(n))
	if err != nil {
		return nil, nil, err
	}
	if cnt == 0 {
		return nil, nil, fmt.Errorf("%w: no notice", errNotices)
	}
	if cnt > uint64(len(b))/3 { // three bytes at least a notice
		return nil, nil, fmt.Errorf("%w: %d notices in %d bytes", errNotices, cnt, len(b))
	}
	ids, hops = make([]member.ID, 0, cnt), make([]int, 0, cnt)
	for range cnt {
		r, err := next("process", uint64(n-1))
		if err != nil {
			return nil, nil, err
		}
		inc, err := next("incarnation", 1<<30)
		if err != nil {
			return nil, nil, err
		}
		h, err := next("hops", maxNoticeHops)
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, member.ID{Rank: int(r), Inc: int(inc)})
		hops = append(hops, int(h))
	}
	if len(b) != 0 {
		return nil, nil, fmt.Errorf("%w: %d bytes after the notices", errNotices, len(b))
	}
	return ids, hops, nil
}
