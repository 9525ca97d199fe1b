package boot

import (
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestUnreadCountsPipeAndSocket(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.Write([]byte("hang report\n")); err != nil {
		t.Fatal(err)
	}
	if n := unread(int(w.Fd())); n != 12 {
		t.Fatalf("pipe's write end: %d unread, want 12", n)
	}
	buf := make([]byte, 12)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	if n := unread(int(w.Fd())); n != 0 {
		t.Fatalf("pipe after the read: %d unread, want 0", n)
	}

	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if _, err := unix.Write(fds[0], []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n := unread(fds[0]); n == 0 {
		t.Fatal("socket: nothing unread after a write the peer has not read")
	}
	if _, err := unix.Read(fds[1], buf); err != nil {
		t.Fatal(err)
	}
	if n := unread(fds[0]); n != 0 {
		t.Fatalf("socket after the read: %d unread, want 0", n)
	}

	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("x")
	if n := unread(int(f.Fd())); n != 0 {
		t.Fatalf("a regular file: %d unread, want 0", n)
	}
}

// awaitRead returns true only once the reader has read everything, and
// false at its deadline when nobody reads.
func TestAwaitReadWaitsForTheReader(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	w.Write([]byte("report"))
	if awaitRead([]int{int(w.Fd())}, 20*time.Millisecond) {
		t.Fatal("awaitRead reported everything read with nobody reading")
	}
	done := make(chan bool, 1)
	go func() { done <- awaitRead([]int{int(w.Fd())}, time.Minute) }()
	select {
	case ok := <-done:
		t.Fatalf("awaitRead returned %v before the reader read", ok)
	default:
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("awaitRead reported unread bytes after the reader read them")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("awaitRead still waiting 30 s after the reader read")
	}
}
