// Package bpftest checks a committed BPF object against its C source.
package bpftest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ObjectIsBuiltFrom compiles src (a path from the repository's root) as
// `make bpf` does and fails t unless object is what it gives, wherever the
// clang that built the committed objects (14) is installed: an edit to the
// C without `make bpf` fails a test, not a lab.
func ObjectIsBuiltFrom(t testing.TB, src string, object []byte) {
	t.Helper()
	out, err := exec.Command("clang", "--version").Output()
	if err != nil {
		t.Skip("no clang: the committed object is used as is")
	}
	if !strings.Contains(string(out), "clang version 14.") {
		t.Skipf("clang %s: objects differ between versions; the committed ones were built by clang 14", strings.SplitN(string(out), "\n", 2)[0])
	}
	if _, err := os.Stat("/usr/include/bpf/bpf_helpers.h"); err != nil {
		t.Skip("no libbpf headers (apt-get install libbpf-dev): the committed object is used as is")
	}
	arch, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "object.bpf.o")
	// From the repository's root, its path mapped to ".", as `make bpf`
	// does: the object's line info names the source file, and must not
	// name the checkout it was built in.
	cc := exec.Command("clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror", "-I/usr/include/"+strings.TrimSpace(string(arch))+"-linux-gnu",
		"-fdebug-prefix-map="+root+"=.", "-c", src, "-o", tmp)
	cc.Dir = root
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	if out, err := exec.Command("llvm-strip", "-g", tmp).CombinedOutput(); err != nil {
		t.Skipf("llvm-strip: %v %s", err, out)
	}
	got, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, object) {
		t.Fatalf("the committed object is not what %s compiles to: run `make bpf` and commit the object", src)
	}
}

// repoRoot is the directory holding go.mod, above the test's own.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
