package kernel

import "testing"

// The cgroup v2 hierarchy is found where it is mounted: alone, or beside
// the v1 controllers (a hybrid machine), and not at all without one.
func TestCgroup2Mount(t *testing.T) {
	hybrid := `35 30 0:33 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	unified := `29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	for in, want := range map[string]string{hybrid: "/sys/fs/cgroup/unified", unified: "/sys/fs/cgroup", "22 1 0:21 / /proc rw - proc proc rw\n": ""} {
		if got := cgroup2Mount(in); got != want {
			t.Errorf("cgroup2Mount(%q) = %q, want %q", in, got, want)
		}
	}
}
