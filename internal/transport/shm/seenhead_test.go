package shm

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// The producer reads the consumer's index (head) only when its last look
// leaves too little room for a record: while it knows of room, a record
// is written without touching the consumer's cache line (the head is
// made garbage here and put does not see it); once the ring looks full it
// looks again, sees the room the consumer freed since, and still refuses
// to write when the index it finds is impossible.
func TestPutReadsTheHeadOnlyWhenItLooksFull(t *testing.T) {
	d := viewDir(region{b: make([]byte, segSize)}, 0)
	r := &d.bulk
	size := uint64(len(r.data))
	h := transport.Header{Kind: 1}
	one := []byte{7}
	if !r.put(&h, one, nil) {
		t.Fatal("no room in an empty ring")
	}
	real := r.head.Load()
	r.head.Store(1 << 62) // no consumer writes this: a read of it fails put
	if !r.put(&h, one, nil) {
		t.Fatal("put read the consumer's index while its last look left room")
	}
	r.head.Store(real)

	// Fill the ring: put refuses only when the head it reads leaves no room.
	n := 2
	for r.put(&h, one, nil) {
		n++
		if uint64(n)*lineSize > size {
			t.Fatalf("%d records of %d bytes in a ring of %d", n, lineSize, size)
		}
	}
	if uint64(n)*lineSize != size {
		t.Fatalf("the ring took %d records of %d bytes, want %d", n, lineSize, size/lineSize)
	}
	// The consumer frees two records: put sees them at its next look.
	r.head.Store(real + 2*lineSize)
	for i := 0; i < 2; i++ {
		if !r.put(&h, one, nil) {
			t.Fatalf("record %d: put did not see the room the consumer freed", i)
		}
	}
	if r.put(&h, one, nil) {
		t.Fatal("put wrote into a full ring")
	}
	// A full ring's producer looks at the head each time, and an impossible
	// one writes nothing.
	tail := r.index() // the producer's own index (a short record does not store the tail)
	r.head.Store(tail + lineSize)
	if r.put(&h, one, nil) || r.index() != tail {
		t.Fatal("put wrote with a head beyond the tail")
	}
}
