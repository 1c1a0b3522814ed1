package ovs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Why ovs-vswitchd may run with another malloc: with the userspace
// datapath, every pass of its main loop polls every port, and each poll of
// an AF_PACKET port allocates a batch of 32 packet buffers (an MTU-sized
// block each) before recvmmsg and frees the unused ones after it, idle
// port or not. Those blocks are too large for glibc's per-thread cache, so
// on a 36-switch lab under load the main thread spent 47% of its cycles in
// malloc and free (perf, stripped binary: malloc, _int_free, _int_malloc).
// The main thread is the whole fabric's forwarding plane and also applies
// FlowMods, so that time is added to every frame's latency and to every
// condition flip. A thread-caching allocator serves those blocks from a
// per-thread free list; bench/allocators.sh measures the difference.

// Allocator is a malloc ovs-vswitchd can be started with (LD_PRELOAD).
type Allocator struct {
	Name    string // scenario value (ovs.allocator)
	Lib     string // shared object, searched in the library directories
	Package string // Debian package that ships it
}

// Allocators lists the known allocators in the order "auto" tries them:
// on the 2-core test machine tcmalloc and mimalloc gave the lowest frame
// latency, jemalloc slightly less of a gain (bench/allocators.sh).
var Allocators = []Allocator{
	{Name: "tcmalloc", Lib: "libtcmalloc_minimal.so.4", Package: "libtcmalloc-minimal4"},
	{Name: "mimalloc", Lib: "libmimalloc.so.2", Package: "libmimalloc2.0"},
	{Name: "jemalloc", Lib: "libjemalloc.so.2", Package: "libjemalloc2"},
}

// Allocator choices besides the names in Allocators.
const (
	AllocatorAuto   = "auto"   // the first of Allocators that is installed, else system
	AllocatorSystem = "system" // the C library's malloc (no preload)
)

// AllocatorNames lists every accepted ovs.allocator value.
func AllocatorNames() []string {
	names := []string{AllocatorAuto, AllocatorSystem}
	for _, a := range Allocators {
		names = append(names, a.Name)
	}
	return names
}

// LibDirs are where FindAllocator looks: the Debian multiarch directories
// and the classic ones.
func LibDirs() []string {
	dirs, _ := filepath.Glob("/usr/lib/*-linux-gnu")
	more, _ := filepath.Glob("/lib/*-linux-gnu")
	return append(append(dirs, more...), "/usr/lib64", "/usr/lib", "/usr/local/lib")
}

// FindAllocator resolves an ovs.allocator value to the allocator's name
// and the library to preload ("" for the system malloc). An allocator
// asked for by name that is not installed is an error that says which
// package provides it; "auto" falls back to the system malloc.
func FindAllocator(choice string, dirs []string) (name, lib string, err error) {
	switch choice {
	case "", AllocatorAuto:
		for _, a := range Allocators {
			if p := findLib(a.Lib, dirs); p != "" {
				return a.Name, p, nil
			}
		}
		return AllocatorSystem, "", nil
	case AllocatorSystem:
		return AllocatorSystem, "", nil
	}
	for _, a := range Allocators {
		if a.Name == choice {
			if p := findLib(a.Lib, dirs); p != "" {
				return a.Name, p, nil
			}
			return "", "", fmt.Errorf("allocator %s is not installed: %s not found in %s (apt-get install %s)",
				choice, a.Lib, strings.Join(dirs, ", "), a.Package)
		}
	}
	return "", "", fmt.Errorf("unknown allocator %q (one of %s)", choice, strings.Join(AllocatorNames(), ", "))
}

func findLib(lib string, dirs []string) string {
	for _, d := range dirs {
		p := filepath.Join(d, lib)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// mapsLibrary reports whether the process has the library mapped: the
// proof that a preload took, since the dynamic loader skips a library it
// cannot load with only a warning on stderr, which a daemon discards.
func mapsLibrary(pid int, lib string) (bool, error) {
	want, err := filepath.EvalSymlinks(lib)
	if err != nil {
		return false, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		// The kernel shows the file a mapping came from by its resolved path.
		if fields[len(fields)-1] == want {
			return true, nil
		}
	}
	return false, sc.Err()
}
