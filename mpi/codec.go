package mpi

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Codec turns Go values into the bytes of a message and back: the
// encoding of SendValue, RecvValue, the value collectives (BcastValue ...)
// and IrecvValue. It plays the part pickle plays in mpi4py's lower-case
// send and recv. The default is GobCodec (encoding/gob); SetCodec
// chooses another per communicator.
//
// Each message is encoded on its own: Marshal is given one value and its
// result is one message; Unmarshal is given one whole message. A receiver
// matches messages from any sender in any order (wildcards, messages
// dropped with a failed process, several goroutines receiving), so a
// codec must not carry state from one message to the next. That is why
// the interface has the shape of Marshal/Unmarshal (encoding/json's)
// rather than of an Encoder/Decoder over a stream (encoding/gob's, which
// sends a type once per stream and relies on the receiver having read
// every earlier message of the stream). A Codec must be safe for
// concurrent use.
type Codec interface {
	// Name names the codec in error messages ("gob", "json").
	Name() string
	// Marshal encodes the value that v points to.
	Marshal(v any) ([]byte, error)
	// Unmarshal decodes data into the value that v points to (a new
	// zero value of the receiver's type).
	Unmarshal(data []byte, v any) error
}

// GobCodec is the default Codec: encoding/gob, one self-describing gob
// stream per message (the type's description travels with every
// message). Interface values need their concrete types registered with
// gob.Register, as gob always requires; unexported struct fields are not
// sent. It has no MPI counterpart: it plays the part of mpi4py's default
// pickle (MPI.pickle).
var GobCodec Codec = gobCodec{}

type gobCodec struct{}

func (gobCodec) Name() string { return "gob" }

func (gobCodec) Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (gobCodec) Unmarshal(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}

// encBufs are the buffers the default codec encodes into (SendValue
// returns them once the transport is done with the message).
var encBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledEnc is the largest encoding buffer kept for reuse.
const maxPooledEnc = 64 << 20

// SetCodec sets the codec of c's Go values (SendValue, RecvValue, the
// value collectives). Communicators created from c afterwards inherit it,
// as they inherit the error handler; a new World's communicators start
// with GobCodec. Every process must use the same codec on a communicator
// (what one process encodes, another decodes). It has no MPI counterpart
// (mpi4py sets its pickle functions once for the process, MPI.pickle).
func (c *Comm) SetCodec(codec Codec) error {
	const op = "SetCodec"
	if c == nil {
		return newErr(ErrComm, op, nil, NoPeer, "nil communicator")
	}
	if codec == nil {
		return c.handle(newErr(ErrArg, op, c, NoPeer, "nil codec (GobCodec is the default)"))
	}
	c.codec.Store(&codec)
	return nil
}

// Codec returns the codec of c's Go values (see SetCodec). It has no MPI
// counterpart (mpi4py's MPI.pickle is process-wide).
func (c *Comm) Codec() Codec {
	if p := c.codec.Load(); p != nil {
		return *p
	}
	return GobCodec
}

// encoded is one encoded value: its bytes and, for the default codec,
// the pooled buffer they live in.
type encoded struct {
	b      []byte
	pooled *bytes.Buffer
}

// free recycles the buffer; the bytes must no longer be used (by the
// caller or the transport).
func (e *encoded) free() {
	if e.pooled != nil && e.pooled.Cap() <= maxPooledEnc {
		e.pooled.Reset()
		encBufs.Put(e.pooled)
	}
	e.pooled, e.b = nil, nil
}

// encodeValue encodes *v with codec; the error names the codec and the
// type, class ErrType (a codec that panics: ErrOther).
func encodeValue[T any](codec Codec, op string, c *Comm, peer int, v *T) (encoded, error) {
	buf := encBufs.Get().(*bytes.Buffer)
	if err := appendValue(codec, op, c, peer, buf, v); err != nil {
		buf.Reset()
		encBufs.Put(buf)
		return encoded{}, err
	}
	return encoded{b: buf.Bytes(), pooled: buf}, nil
}

// appendValue appends the encoding of *v with codec to buf (see
// encodeValue).
func appendValue[T any](codec Codec, op string, c *Comm, peer int, buf *bytes.Buffer, v *T) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = newErr(ErrOther, op, c, peer, "codec %s panicked encoding a %s: %v", codec.Name(), typeName[T](), p)
		}
	}()
	if _, ok := codec.(gobCodec); ok {
		err = gob.NewEncoder(buf).Encode(v)
	} else {
		var b []byte
		if b, err = codec.Marshal(v); err == nil {
			buf.Write(b)
		}
	}
	if err != nil {
		return codecErr(ErrType, op, c, peer, codec, "encoding a "+typeName[T](), err)
	}
	return nil
}

// scratch is a pooled buffer of n bytes (recycled by free).
func scratch(n int) encoded {
	buf := encBufs.Get().(*bytes.Buffer)
	buf.Grow(n)
	return encoded{b: buf.AvailableBuffer()[:n], pooled: buf}
}

// decodeValue decodes data (a message from peer) into a new T with codec;
// the error names the codec and the type, class ErrType (a codec that
// panics: ErrOther).
func decodeValue[T any](codec Codec, op string, c *Comm, peer int, data []byte) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, newErr(ErrOther, op, c, peer, "codec %s panicked decoding %d bytes into a %s: %v", codec.Name(), len(data), typeName[T](), p)
		}
	}()
	if err := codec.Unmarshal(data, &v); err != nil {
		var zero T
		return zero, codecErr(ErrType, op, c, peer, codec, fmt.Sprintf("decoding %d bytes into a %s", len(data), typeName[T]()), err)
	}
	return v, nil
}

// codecErr is the error of a codec: what was done, with which codec, and
// the codec's own words without its name if it starts with it ("gob: ...").
func codecErr(class *Class, op string, c *Comm, peer int, codec Codec, what string, err error) error {
	name := codec.Name()
	return newErr(class, op, c, peer, "%s (codec %s): %s", what, name, strings.TrimPrefix(err.Error(), name+": "))
}

// typeName names T in errors ("main.Particle", "map[string]int", "interface {}").
func typeName[T any]() string { return reflect.TypeFor[T]().String() }
