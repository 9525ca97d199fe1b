package agentwire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func samples() []Msg {
	return []Msg{
		{Type: THello, Version: Version, Job: "ab12", Host: "h2", HBPeriod: 1e8, HBTimeout: 1e9, Interface: "10.0.0.0/24", HeadAddr: "10.0.0.1"},
		{Type: TReady, Pid: 42, Cores: 2, TmpDir: "/tmp/ftmpi-x", Listen: "10.0.0.2"},
		{Type: TReady, Error: "no address on eth9"},
		{Type: TStart, Seq: 3, Specs: []Spec{{Rank: 1, Path: "/bin/true", Args: []string{"a b"}, Env: []string{"X=1"}, Dir: "/"}}},
		{Type: TStarted, Seq: 3},
		{Type: TStarted, Seq: 4, Pids: []int{1234, 0}},
		{Type: TSignal, Rank: 2, Inc: -1, Sig: 9},
		{Type: TSignalAll, Sig: 15},
		{Type: TCheck, Token: 7, Rank: 1, Inc: 2},
		{Type: TState, Token: 7, Pid: 99, State: "sleeping", Alive: true},
		{Type: TOutput, Rank: 1, Stderr: true, Line: []byte("\xff\x00line\n")},
		{Type: TExited, Rank: 1, Inc: 1, Pid: 99, Sig: 9},
		{Type: TExited, Rank: 1, StartErr: "no such file"},
		{Type: TPing},
		{Type: TBye},
		{Type: TFile, File: "prog", Data: []byte{0x7f, 'E', 'L', 'F'}, Final: true},
		{Type: TFileDone, File: "prog", Path: "/tmp/ftmpi-1/prog"},
		{Type: TStart, Seq: 5, Specs: []Spec{{Rank: 0, Path: "/bin/cat", Bind: "core", Slot: 3, Report: true, Stdin: true}}},
		{Type: TStdin, Rank: 0, Data: []byte("input\n")},
		{Type: TStdin, Rank: 0, Final: true},
		{Type: TStdinAck, Rank: 0, Final: true},
		{Type: THello, Version: Version, Job: "ab12", Host: "h2", HBPeriod: 1e8, HBTimeout: 1e9, Attach: "10.0.0.1:4000", Node: 1,
			Launch: []string{"ssh", "-F", "cfg"}, Self: "/usr/bin/ftmpirun",
			Tree: []Node{{Host: "h4", Index: 3, Kids: []Node{{Host: "h6", Index: 5}}}, {Host: "h5", Index: 4}}},
		{Type: TReady, Pid: 42, Cores: 2, Host: "h4", Node: 3, Job: "ab12"},
		{Type: TAgentErr, Host: "h6", Node: 5, Error: "ssh: exit status 255"},
		{Type: THello, Version: Version, Job: "ab12", Host: "h2", HBPeriod: 1e8, HBTimeout: 1e9, Relay: true},
		{Type: TReady, Pid: 42, Cores: 2, TmpDir: "/tmp/ftmpi-x", Control: "unix:/tmp/ftmpi-x/control"},
		{Type: TCtlUp, Ctl: []CtlLine{{Conn: 1, Open: true, Proc: 3, Line: "{\"op\":\"hello\",\"id\":1}\n"}, {Conn: 2, Open: true, Proc: -1, Line: "{}\n"},
			{Conn: 1, Line: "{\"op\":\"fence\",\"id\":2}\n"}, {Conn: 2, Close: true}}},
		{Type: TCtlDown, Ctl: []CtlLine{{Conn: 1, Line: "{\"op\":\"hello\",\"id\":1}\n"}, {Conn: 1, Close: true}}},
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	for _, m := range samples() {
		if err := Write(&buf, m); err != nil {
			t.Fatalf("%v: %v", m.Type, err)
		}
	}
	r := bufio.NewReader(&buf)
	for _, want := range samples() {
		got, err := Read(r)
		if err != nil {
			t.Fatalf("%v: %v", want.Type, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	}
	if _, err := Read(r); err != io.EOF {
		t.Fatalf("at the end: %v, want EOF", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	frame := func(typ byte, body string) []byte { return append([]byte{typ}, body...) }
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{nil, "empty"},
		{frame(0, "{}"), "unknown message type 0"},
		{frame(200, "{}"), "unknown message type 200"},
		{frame(byte(TPing), "[1]"), "ping body"},
		{frame(byte(TPing), `{"bogus":1}`), "unknown field"},
		{frame(byte(TPing), `{} {}`), "data after"},
		{frame(byte(THello), `{"version":9,"job":"j","host":"h","hb_period":1,"hb_timeout":2}`), "version 9"},
		{frame(byte(THello), `{"version":1,"job":"j","host":"h","hb_period":5,"hb_timeout":2}`), "heartbeat"},
		{frame(byte(TSignal), `{"rank":-1,"sig":9}`), "rank -1"},
		{frame(byte(THello), `{"version":1,"job":"j","host":"h","hb_period":1,"hb_timeout":2,"tree":[{"host":"h3","index":2}]}`), "without the head's address"},
		{frame(byte(THello), `{"version":1,"job":"j","host":"h","hb_period":1,"hb_timeout":2,"attach":"a:1","launch":["ssh"],"self":"/f","node":1,"tree":[{"host":"h3","index":2,"kids":[{"host":"h4","index":2}]}]}`), "repeated"},
		{frame(byte(THello), `{"version":1,"job":"j","host":"h","hb_period":1,"hb_timeout":2,"attach":"a:1","launch":["ssh"],"self":"/f","node":1,"tree":[{"host":"h3","index":1}]}`), "repeated"},
		{frame(byte(THello), `{"version":1,"job":"j","host":"h","hb_period":1,"hb_timeout":2,"attach":"a:1","launch":["ssh"],"self":"/f","tree":[{"host":"h;rm","index":2}]}`), "bad host name"},
		{frame(byte(THello), `{"version":1,"job":"j","host":"h","hb_period":1,"hb_timeout":2,"node":-1}`), "node -1"},
		{frame(byte(TAgentErr), `{"host":"h3","node":2}`), "missing"},
		{frame(byte(TSignal), `{"rank":1,"sig":99}`), "signal 99"},
		{frame(byte(TStart), `{"specs":[]}`), "no rank"},
		{frame(byte(TStart), `{"specs":[{"rank":1}]}`), "no program"},
		{frame(byte(TExited), `{"rank":1,"status":300}`), "out of range"},
		{frame(byte(TStarted), `{"seq":1,"pids":[5,-3]}`), "process id -3"},
		{frame(byte(TFile), `{"file":"../etc/passwd"}`), "want a base name"},
		{frame(byte(TFile), `{"file":".."}`), "want a base name"},
		{frame(byte(TStdin), `{"rank":-2}`), "rank -2"},
		{frame(byte(TStart), `{"specs":[{"rank":1,"path":"/p","bind":"board"}]}`), "unknown binding"},
		{frame(byte(TStart), `{"specs":[{"rank":1,"path":"/p","slot":-1}]}`), "slot -1"},
		{frame(byte(TCtlUp), `{}`), "0 control entries"},
		{frame(byte(TCtlUp), `{"ctl":[{"c":0,"x":true}]}`), "connection 0"},
		{frame(byte(TCtlUp), `{"ctl":[{"c":1}]}`), "a line or a close"},
		{frame(byte(TCtlUp), `{"ctl":[{"c":1,"l":"a\n","x":true}]}`), "a line or a close"},
		{frame(byte(TCtlUp), `{"ctl":[{"c":1,"l":"a"}]}`), "not ended"},
		{frame(byte(TCtlUp), `{"ctl":[{"c":1,"l":"a\nb\n"}]}`), "not ended"},
		{frame(byte(TCtlUp), `{"ctl":[{"c":1,"p":2,"l":"a\n"}]}`), "without an open"},
		{frame(byte(TCtlUp), `{"ctl":[{"c":1,"o":true,"p":-2,"l":"a\n"}]}`), "process id -2"},
		{frame(byte(TCtlUp), `{"ctl":[{"c":1,"o":true,"x":true}]}`), "opened and closed"},
		{frame(byte(TCtlDown), `{"ctl":[{"c":1,"o":true,"l":"a\n"}]}`), "open going down"},
	} {
		_, err := Decode(c.b)
		if err == nil || !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%q) = %v, want an ErrFrame naming %q", c.b, err, c.want)
		}
	}
}

func TestReadRejectsLength(t *testing.T) {
	for _, b := range [][]byte{{0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff}} {
		if _, err := Read(bufio.NewReader(bytes.NewReader(b))); !errors.Is(err, ErrFrame) {
			t.Errorf("length %x: %v", b, err)
		}
	}
	if _, err := Read(bufio.NewReader(bytes.NewReader([]byte{0, 0, 0, 5, 1}))); err != io.ErrUnexpectedEOF {
		t.Errorf("cut frame: %v", err)
	}
}

// FuzzDecode: Decode never panics; what it accepts re-encodes to a frame
// that decodes to the same message.
func FuzzDecode(f *testing.F) {
	for _, m := range samples() {
		b, _ := Encode(nil, m)
		f.Add(b[4:])
	}
	f.Add([]byte{byte(TSignal), '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		enc, err := Encode(nil, m)
		if err != nil {
			if len(b) > MaxFrame {
				return
			}
			t.Fatalf("accepted %q but cannot encode it: %v", b, err)
		}
		m2, err := Decode(enc[4:])
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-decode of %q: %+v %v, want %+v", b, m2, err, m)
		}
	})
}
