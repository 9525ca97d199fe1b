package pmi

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func FuzzParseV1(f *testing.F) {
	for _, s := range []string{
		"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
		"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n",
		"cmd=get_result rc=0 msg=success value=a=b\n",
		"cmd=barrier_out\n", "", "cmd=\n", "x=y cmd=z", "cmd=a a=1 a=2", "cmd=a =1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, err := ParseV1(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if m.Cmd == "" {
			t.Fatal("parsed without a command")
		}
		// What parses formats back to what parses the same.
		kv := []string{}
		for k, v := range m.Fields {
			kv = append(kv, k, v)
		}
		m2, err := ParseV1(FormatV1(m.Cmd, kv...))
		if err != nil || m2.Cmd != m.Cmd || len(m2.Fields) != len(m.Fields) {
			t.Fatalf("round trip of %q: %+v %v", line, m2, err)
		}
		for k, v := range m.Fields {
			if m2.Fields[k] != v {
				t.Fatalf("round trip of %q: field %s %q -> %q", line, k, v, m2.Fields[k])
			}
		}
	})
}

func FuzzParseV2(f *testing.F) {
	for _, s := range []string{
		"cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=1;size=2;appnum=0;debugged=FALSE;pmiverbose=FALSE;rc=0;",
		"cmd=kvs-get-response;found=TRUE;value=a;;b;rc=0;", "cmd=kvs-fence-response;rc=0", ";;;", "", "cmd=;", "cmd=x;=y;",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := ParseV2(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		kv := []string{}
		for k, v := range m.Fields {
			kv = append(kv, k, v)
		}
		msg := FormatV2(m.Cmd, kv...)
		n, err := ParseV2Len(msg[:lenWidth])
		if err != nil || n != len(msg)-lenWidth {
			t.Fatalf("length prefix of %q: %d %v", msg, n, err)
		}
		m2, err := ParseV2(msg[lenWidth:])
		if err != nil || m2.Cmd != m.Cmd || len(m2.Fields) != len(m.Fields) {
			t.Fatalf("round trip of %q: %+v %v", body, m2, err)
		}
		for k, v := range m.Fields {
			if m2.Fields[k] != v {
				t.Fatalf("round trip of %q: field %s", body, k)
			}
		}
	})
}

// streamConn is a net.Conn whose reads come from a fixed stream (the
// server's side of a conversation) and whose writes are dropped.
type streamConn struct{ r *bytes.Reader }

func (c *streamConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *streamConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) LocalAddr() net.Addr              { return nil }
func (c *streamConn) RemoteAddr() net.Addr             { return nil }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzClient feeds arbitrary server streams to a whole start-up (init,
// put, fence, get, finalize): any answer ends in a result or an error,
// never a panic.
func FuzzClient(f *testing.F) {
	v1 := "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\ncmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n" +
		"cmd=appnum appnum=0\ncmd=my_kvsname kvsname=kvs_1\ncmd=put_result rc=0\ncmd=barrier_out\ncmd=get_result rc=0 value=1:QQ\ncmd=finalize_ack\n"
	v2 := "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n" +
		string(FormatV2("fullinit-response", "rank", "0", "size", "1", "rc", "0")) +
		string(FormatV2("job-getid-response", "jobid", "j", "rc", "0")) +
		string(FormatV2("kvs-put-response", "rc", "0")) + string(FormatV2("kvs-fence-response", "rc", "0")) +
		string(FormatV2("kvs-get-response", "found", "TRUE", "value", "2:QQ", "rc", "0")) +
		string(FormatV2("kvs-get-response", "found", "TRUE", "value", "QQ", "rc", "0")) + string(FormatV2("finalize-response", "rc", "0"))
	f.Add([]byte(v1), uint8(1))
	f.Add([]byte(v2), uint8(2))
	f.Add([]byte(v2[:70]), uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, v uint8) {
		pc, err := Open(&streamConn{bytes.NewReader(stream)}, Env{FD: 3, Rank: 0, Size: 1, Version: int(v % 3)}, time.Second)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "pmi: ") {
				t.Fatalf("error %q does not say it is PMI's", err)
			}
			return
		}
		if err := pc.PutLong("k", []byte("value")); err != nil {
			return
		}
		if err := pc.Fence(); err != nil {
			return
		}
		if _, _, err := pc.GetLong("k"); err != nil {
			return
		}
		pc.Finalize()
	})
}
