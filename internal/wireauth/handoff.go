package wireauth

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// EnvFD names the environment variable that tells a child which inherited
// file descriptor holds the job's secret (the number only: the secret is
// never in the environment).
const EnvFD = "FTMPI_AUTH_FD"

// Pipe returns the read end of a pipe that holds the secret and is closed
// for writing: a child given it (os.ProcAttr.Files, exec.Cmd.ExtraFiles)
// reads the secret with Inherit. The caller closes it once the child is
// started. The secret fits the pipe's buffer, so nothing blocks.
func (k *Key) Pipe() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("wireauth: pipe for the secret: %w", err)
	}
	_, err = w.Write(k.secret[:])
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("wireauth: write the secret to its pipe: %w", err)
	}
	return r, nil
}

// WriteTo writes the secret to w (an agent's standard input over ssh).
func (k *Key) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(k.secret[:])
	return int64(n), err
}

// ReadKey reads a secret of exactly KeySize bytes from r (the bytes after
// it, if any, are left unread).
func ReadKey(r io.Reader) (*Key, error) {
	var b [KeySize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("wireauth: the secret is shorter than %d bytes", KeySize)
		}
		return nil, fmt.Errorf("wireauth: read the secret: %w", err)
	}
	return FromBytes(b[:])
}

// Inherit reads the secret from the descriptor named by the value of
// EnvFD (v; "" means none was handed over: nil, nil) and closes it, so
// that the process's own children do not inherit it. It must be called
// once per process: the pipe is empty afterwards.
func Inherit(v string) (*Key, error) {
	if v == "" {
		return nil, nil
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("wireauth: %s=%q is not an inherited descriptor (3 or more)", EnvFD, v)
	}
	f := os.NewFile(uintptr(fd), "ftmpi-secret")
	if f == nil {
		return nil, fmt.Errorf("wireauth: %s=%d is not a valid descriptor", EnvFD, fd)
	}
	defer f.Close()
	k, err := ReadKey(f)
	if err != nil {
		return nil, fmt.Errorf("%w (from descriptor %d, %s; was it read already?)", err, fd, EnvFD)
	}
	var extra [1]byte
	if n, _ := f.Read(extra[:]); n != 0 {
		return nil, fmt.Errorf("wireauth: descriptor %d (%s) holds more than a secret", fd, EnvFD)
	}
	return k, nil
}
