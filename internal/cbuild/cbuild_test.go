package cbuild

import (
	"reflect"
	"testing"
)

func TestCompileArgs(t *testing.T) {
	l := Lib{Dir: "/c"}
	got := CompileArgs(l, []string{"-O2", "x.c", "-o", "x"})
	want := []string{"-I/c/include", "-O2", "x.c", "-o", "x", "-L/c/lib", "-Wl,-rpath,/c/lib", "-lmpi"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("link: got %q, want %q", got, want)
	}
	got = CompileArgs(l, []string{"-c", "x.c"})
	want = []string{"-I/c/include", "-c", "x.c"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("compile only: got %q, want %q", got, want)
	}
}

func TestSourceRootAndHashStable(t *testing.T) {
	root, err := SourceRoot()
	if err != nil {
		t.Fatal(err)
	}
	a, err := sourceHash(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sourceHash(root)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || len(a) != 16 {
		t.Fatalf("hash not stable or malformed: %q %q", a, b)
	}
	t.Setenv("FTMPI_ROOT", t.TempDir())
	if _, err := SourceRoot(); err == nil {
		t.Fatal("an empty FTMPI_ROOT was accepted as the source tree")
	}
}

func TestBuildEnvDropsWrapperSettings(t *testing.T) {
	t.Setenv("CC", "mpicc")
	t.Setenv("CFLAGS", "-O3")
	env := BuildEnv()
	for _, kv := range env {
		if kv == "CC=mpicc" || kv == "CFLAGS=-O3" {
			t.Fatalf("%s reached the library's build", kv)
		}
	}
	if env[len(env)-1] != "FTMPICC_ACTIVE=1" {
		t.Fatal("FTMPICC_ACTIVE not set")
	}
	for cc, want := range map[string]bool{"mpicc": true, "/x/bin/mpicxx": true, "ftmpicc -g": true, "gcc": false, "cc": false, "clang -m64": false} {
		if IsWrapper(cc) != want {
			t.Errorf("IsWrapper(%q) = %v", cc, !want)
		}
	}
}
