package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Cgroup2Root is where the machine mounts its cgroup v2 hierarchy
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1 controllers), or
// "" without one. A cgroup's cpu.stat has usage_usec there whether or not
// the cpu controller is enabled, and cgroup.kill ends every process in it.
func Cgroup2Root() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	return cgroup2Mount(string(b))
}

// cgroup2Mount finds the cgroup2 mount point in a mountinfo file.
func cgroup2Mount(mountinfo string) string {
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" {
			return f[4]
		}
	}
	return ""
}

// CgroupPopulated says whether a cgroup (v2) still holds a process.
func CgroupPopulated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	return err == nil && strings.Contains(string(b), "populated 1")
}

// CgroupCPU is the CPU time every process that ran in a cgroup (v2) took,
// those that exited included.
func CgroupCPU(dir string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s/cpu.stat: %q", dir, line)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", dir)
}

// RemoveCgroup ends every process in a cgroup (v2: cgroup.kill) and
// removes it, waiting at most limit for the kernel to let it go (a cgroup
// goes only once its last task has exited). A cgroup that is gone is no
// error.
func RemoveCgroup(dir string, limit time.Duration) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if CgroupPopulated(dir) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644); err != nil {
			return fmt.Errorf("cgroup %s: kill: %w", dir, err)
		}
	}
	deadline := time.Now().Add(limit)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
