package inproc

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rec struct{ got chan uint64 }

func (r *rec) Frame(int, transport.Header) ([]byte, any) { return nil, nil }
func (r *rec) Payload(_ int, h transport.Header, _ []byte, _ any, err error) {
	if err == nil {
		r.got <- h.Seq
	}
}
func (r *rec) PeerLost(int, error) {}

type done chan error

func (d done) SendDone(err error) { d <- err }

// Posted frames arrive in order, each Done is told, Close delivers what is
// still queued and ends the poster goroutine (goleak), and a post after
// Close fails.
func TestPostOrderAndClose(t *testing.T) {
	f := NewFabric(2)
	r := &rec{got: make(chan uint64, 100)}
	a := f.Attach(0, &rec{got: make(chan uint64, 1)})
	f.Attach(1, r)
	d := make(done, 100)
	for i := range 50 {
		a.Post(1, transport.Header{Seq: uint64(i)}, nil, d)
	}
	a.Close()
	for i := range 50 {
		if s := <-r.got; s != uint64(i) {
			t.Fatalf("frame %d arrived as %d", i, s)
		}
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
	a.Post(1, transport.Header{}, nil, d)
	if err := <-d; err != transport.ErrClosed {
		t.Fatalf("post after Close: %v, want ErrClosed", err)
	}
}
