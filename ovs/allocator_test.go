package ovs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/roottest"
)

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFindAllocator(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(a, "libjemalloc.so.2"))
	touch(t, filepath.Join(b, "libmimalloc.so.2"))
	dirs := []string{a, b}

	// auto takes the first of Allocators that is installed, whichever
	// directory it is in.
	name, lib, err := FindAllocator(AllocatorAuto, dirs)
	if err != nil || name != "mimalloc" || lib != filepath.Join(b, "libmimalloc.so.2") {
		t.Errorf("auto: %q %q %v, want mimalloc from %s", name, lib, err, b)
	}
	if name, lib, err := FindAllocator("jemalloc", dirs); err != nil || name != "jemalloc" || lib != filepath.Join(a, "libjemalloc.so.2") {
		t.Errorf("jemalloc: %q %q %v", name, lib, err)
	}
	if name, lib, err := FindAllocator(AllocatorSystem, dirs); err != nil || name != AllocatorSystem || lib != "" {
		t.Errorf("system: %q %q %v", name, lib, err)
	}
	// Nothing installed: auto falls back, a named one is an error that
	// says what to install.
	empty := []string{t.TempDir()}
	if name, lib, err := FindAllocator("", empty); err != nil || name != AllocatorSystem || lib != "" {
		t.Errorf("auto with none installed: %q %q %v", name, lib, err)
	}
	if _, _, err := FindAllocator("tcmalloc", empty); err == nil || !strings.Contains(err.Error(), "apt-get install libtcmalloc-minimal4") {
		t.Errorf("missing tcmalloc: %v", err)
	}
	if _, _, err := FindAllocator("glibc", dirs); err == nil || !strings.Contains(err.Error(), "unknown allocator") {
		t.Errorf("unknown: %v", err)
	}
	// A directory named like the library is not the library.
	d := t.TempDir()
	if err := os.Mkdir(filepath.Join(d, "libtcmalloc_minimal.so.4"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := FindAllocator("tcmalloc", []string{d}); err == nil {
		t.Error("a directory was taken for the library")
	}
}

// TestMapsLibrary preloads an installed allocator into a short-lived
// process and finds it in its mappings; a library it did not load is not
// found.
func TestMapsLibrary(t *testing.T) {
	_, lib, _ := FindAllocator(AllocatorAuto, LibDirs())
	if lib == "" {
		t.Skip("no allocator installed (apt-get install libtcmalloc-minimal4)")
	}
	cmd := exec.Command("sleep", "10")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var ok bool
	var err error
	// The loader maps the preload before main; poll until it has run.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !ok; time.Sleep(10 * time.Millisecond) {
		ok, err = mapsLibrary(cmd.Process.Pid, lib)
	}
	if !ok || err != nil {
		t.Fatalf("%s not found in the maps of a process started with it: %v", lib, err)
	}
	other := filepath.Join(t.TempDir(), "libnothing.so")
	touch(t, other)
	if ok, err := mapsLibrary(cmd.Process.Pid, other); ok || err != nil {
		t.Errorf("a library the process never loaded: %v %v", ok, err)
	}
}

// TestStartPreload starts a private instance with the installed allocator
// and checks the daemon runs with it, then with a file that is no shared
// object: the loader ignores such a preload with a warning nobody reads,
// so Start must notice, fail, and leave no daemon behind.
func TestStartPreload(t *testing.T) {
	roottest.NeedOVS(t)
	_, lib, _ := FindAllocator(AllocatorAuto, LibDirs())
	if lib == "" {
		t.Skip("no allocator installed (apt-get install libtcmalloc-minimal4)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := fmt.Sprintf("efo-pre%d", os.Getpid()%100000)
	newNetNS(t, ns)

	runDir := t.TempDir()
	inst, err := Start(ctx, Config{Lab: "efo-pre", RunDir: runDir, NetNS: ns, Datapath: DatapathNetdev, Preload: lib})
	if err != nil {
		t.Fatalf("start with %s: %v", lib, err)
	}
	pid := readPid(filepath.Join(runDir, switchPid))
	if ok, err := mapsLibrary(pid, lib); !ok || err != nil {
		t.Errorf("ovs-vswitchd (pid %d) does not map %s: %v", pid, lib, err)
	}
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}

	bogus := filepath.Join(t.TempDir(), "libbogus.so")
	touch(t, bogus)
	runDir = t.TempDir()
	inst, err = Start(ctx, Config{Lab: "efo-pre", RunDir: runDir, NetNS: ns, Datapath: DatapathNetdev, Preload: bogus})
	if err == nil {
		_ = inst.Stop()
	}
	if err == nil || !strings.Contains(err.Error(), "did not load") {
		t.Fatalf("start with a bogus preload: %v, want an error saying it did not load", err)
	}
	if left := processesUsing(runDir); len(left) > 0 {
		t.Errorf("daemons left running after the failed start: %v", left)
	}
}

// processesUsing lists the live processes whose command line names dir.
func processesUsing(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, dir) {
			out = append(out, filepath.Base(filepath.Dir(p))+": "+cmd)
		}
	}
	return out
}
