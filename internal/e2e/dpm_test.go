package e2e

import (
	"strings"
	"testing"
)

// Connect/accept under ftmpirun (issue 16 item 6): processes of one job
// and of the jobs it spawned; a real SIGKILL of a root during the call.

func dpmBin(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "dpmcheck")
}

// Seed 002 A.2.3 (1), 5.2.1; seed 003 17.10.1: the client root is
// SIGKILLed once the roots have found each other (the kill is tied to its
// trace line, and it cannot finish the call before: its group's other
// process enters only after seeing the death). The server root, the other
// server and the other client all get ErrProcFailed; no intercommunicator,
// no hang.
func TestConnectRootSIGKILL(t *testing.T) {
	b := dpmBin(t)
	r := reinitRun(t, "-n", "4", "--on-failure", "continue", "--timeout", "60s",
		"--inject", "kill:rank=3,on=MPI_Comm_connect: connected to process", b, "rootkill")
	if got := resultLine(t, r); got != "result: rootkill server-root=procfailed" {
		t.Fatalf("got %q\nstdout:\n%s\nstderr:\n%s", got, r.Stdout, r.Stderr)
	}
	for _, rank := range []string{"0", "1", "2"} {
		if !strings.Contains(r.Stdout, "dpmcheck: rank "+rank+": intercomm=false err=procfailed") {
			t.Fatalf("rank %s did not report ErrProcFailed\nstdout:\n%s\nstderr:\n%s", rank, r.Stdout, r.Stderr)
		}
	}
	if strings.Contains(r.Stderr, "the client root survived") {
		t.Fatalf("the client root was not killed\nstderr:\n%s", r.Stderr)
	}
}

// MPI-4.1 11.8.3-11.8.4 across jobs: the servers publish a port, spawn a
// job of two clients that look it up and connect; requests and a reduction
// cross the new intercommunicator; both sides disconnect.
func TestConnectAcrossSpawnedJob(t *testing.T) {
	b := dpmBin(t)
	for _, tr := range []string{"unix", "tcp"} {
		r := reinitRun(t, "-n", "2", "--transport", tr, "--timeout", "60s", b, "spawn")
		if want := "result: spawn served=2 reply0=10 sum=3"; r.Code != 0 || resultLine(t, r) != want {
			t.Fatalf("%s: exit %d, want %q\nstdout:\n%s\nstderr:\n%s", tr, r.Code, want, r.Stdout, r.Stderr)
		}
	}
}

// examples/clientserver: the same result line with and without a client
// SIGKILLed mid-session; the server notices it on the session's
// intercommunicator, disconnects and serves the next client.
func TestClientServerExample(t *testing.T) {
	cs := buildOnce(t, "clientserver")
	const want = "result: tasks=12 sum=650"
	r := reinitRun(t, "-n", "4", "--timeout", "60s", cs)
	if r.Code != 0 || resultLine(t, r) != want {
		t.Fatalf("no kill: exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
	r = reinitRun(t, "-n", "4", "--on-failure", "continue", "--timeout", "60s",
		"--inject", "kill:rank=3,on=client 3 stalls", cs, "-stall", "3")
	if r.Code != 0 || resultLine(t, r) != want {
		t.Fatalf("kill: exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "server: client 3 failed mid-session") || !strings.Contains(r.Stdout, "1 client(s) lost mid-session") {
		t.Fatalf("the server did not notice the killed client\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// MPI-4.1 11.10.5 between two processes of a job: Join over a loopback
// TCP connection they opened themselves.
func TestJoinAcrossProcesses(t *testing.T) {
	b := dpmBin(t)
	r := reinitRun(t, "-n", "3", "--timeout", "60s", b, "join")
	if want := "result: join remote=[1] got=101"; r.Code != 0 || resultLine(t, r) != want {
		t.Fatalf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
}
