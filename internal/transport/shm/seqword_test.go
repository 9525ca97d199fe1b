package shm

import (
	"encoding/binary"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// payloadLog records the payloads a ring delivers.
type payloadLog struct{ got []string }

func (h *payloadLog) Frame(_ int, hd transport.Header) ([]byte, any) {
	return make([]byte, hd.N), nil
}
func (h *payloadLog) Payload(_ int, _ transport.Header, dst []byte, _ any, err error) {
	if err == nil {
		h.got = append(h.got, string(dst))
	}
}
func (h *payloadLog) PeerLost(int, error) {}

// A short record (one line, a payload of at most seqMaxPayload bytes) is
// published by its own sequence word: the consumer takes it before the
// producer's tail store is seen (the tail is rolled back here to stand for
// a store not yet visible, or a producer killed between the two stores),
// exactly once, over two laps of the ring (a word left by the previous lap
// is not taken). A record that carries no sequence word (a 16-byte payload
// whose last bytes hold what the word would) waits for the tail.
func TestShortRecordIsPublishedByItsOwnLine(t *testing.T) {
	seg := region{b: make([]byte, segSize)}
	log := &payloadLog{}
	p := &pair{t: &Transport{cfg: Config{Handler: log}}, rank: 1, pid: -1, in: viewDir(seg, 0), out: viewDir(seg, 0)}
	r := &p.out.bulk
	laps := 2 * len(r.data) / lineSize
	for i := range laps + 3 {
		want := string(rune('a' + i%26))
		h := transport.Header{Kind: 1, N: uint64(len(want))}
		before := r.tail.Load()
		if !r.put(&h, []byte(want), nil) {
			t.Fatalf("record %d: ring full", i)
		}
		after := r.tail.Load()
		r.tail.Store(before) // the tail's store not seen yet
		if _, ended := p.poll(); ended {
			t.Fatalf("record %d: the pair ended", i)
		}
		if len(log.got) != i+1 || log.got[i] != want {
			t.Fatalf("record %d: delivered %q before the tail moved, want %q last of %d", i, log.got, want, i+1)
		}
		// The consumer is a record ahead of the tail: nothing more is
		// published, and that is no bad index.
		if _, ended := p.poll(); ended || len(log.got) != i+1 {
			t.Fatalf("record %d: with the head one record past the tail the pair ended (%v) or delivered %q", i, ended, log.got[i:])
		}
		r.tail.Store(after)
		p.poll()
		if len(log.got) != i+1 {
			t.Fatalf("record %d: delivered again once the tail moved: %q", i, log.got[i:])
		}
	}

	// The bulk ring's tail did not move for them (lazy): a ping-pong of
	// short messages leaves its cache line where it is.
	if r.tail.Load() != 0 || r.index() != uint64(laps+3)*lineSize {
		t.Fatalf("after %d short records the tail is %d, the producer's index %d", laps+3, r.tail.Load(), r.index())
	}

	// 16 bytes fill the line: no sequence word, whatever the payload holds.
	n := len(log.got)
	head := r.index()
	long := make([]byte, 16)
	binary.LittleEndian.PutUint64(long[8:], seqWord(head))
	h := transport.Header{Kind: 1, N: uint64(len(long))}
	if !r.put(&h, long, nil) || r.tail.Load() != head+lineSize {
		t.Fatal("a 16-byte record is not one line")
	}
	r.tail.Store(head)
	p.poll()
	if len(log.got) != n {
		t.Fatalf("a record without a sequence word was taken before the tail moved")
	}
	r.tail.Store(head + lineSize)
	p.poll()
	if len(log.got) != n+1 || log.got[n] != string(long) {
		t.Fatalf("the 16-byte record was not delivered by the tail: %d frames", len(log.got)-n)
	}
}
