package datapath

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjectIsBuiltFromSource compiles bpf/switch.c as `make bpf` does and
// checks the committed object is what it gives, wherever the clang that
// built it (14) is installed: an edit to the C without `make bpf` fails
// here, not in a lab.
func TestObjectIsBuiltFromSource(t *testing.T) {
	out, err := exec.Command("clang", "--version").Output()
	if err != nil {
		t.Skip("no clang: the committed object is used as is")
	}
	if !strings.Contains(string(out), "clang version 14.") {
		t.Skipf("clang %s: objects differ between versions; the committed one was built by clang 14", strings.SplitN(string(out), "\n", 2)[0])
	}
	tmp := filepath.Join(t.TempDir(), "switch.bpf.o")
	arch, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	// From the repository's root, its path mapped to ".", as `make bpf`
	// does: the object's line info names the source file, and must not
	// name the checkout it was built in.
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cc := exec.Command("clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror", "-I/usr/include/"+strings.TrimSpace(string(arch))+"-linux-gnu",
		"-fdebug-prefix-map="+root+"=.", "-c", "emulator/datapath/bpf/switch.c", "-o", tmp)
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
		t.Fatal("switch.bpf.o is not what bpf/switch.c compiles to: run `make bpf` and commit the object")
	}
}
