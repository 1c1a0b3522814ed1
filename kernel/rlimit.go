package kernel

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// RaiseFileLimit lifts the process's open-file limit as far as the kernel
// allows (fs.nr_open; the hard limit too when the process may), so a lab
// of any size is not stopped by descriptors: one ethfab process holds a
// packet socket per host for its agents, and as many again for the
// traffic engine and `ethfab ping` (33,024 for a 16,512-host fabric, where
// a login shell's hard limit here is 20,000). It returns the limit now
// in force. Children inherit it: Open vSwitch's daemons, which hold a
// descriptor per port, are the ones that need it most.
func RaiseFileLimit() uint64 {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	want := uint64(1 << 20)
	if b, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			want = n
		}
	}
	// Raising the hard limit needs CAP_SYS_RESOURCE; the soft one Go's
	// runtime has already raised to the hard one at start-up.
	if lim.Max < want && unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: want, Max: want}) == nil {
		return want
	}
	return lim.Cur
}

// FileDescriptors is the process's open-file limit and how many
// descriptors it has open.
func FileDescriptors() (limit, open int) {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		limit = int(min(lim.Cur, 1<<31-1))
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(ents)
	}
	return limit, open
}

// NeedDescriptors says, before a step opens them, whether n more
// descriptors fit the open-file limit, naming what needs them; so a
// fabric too large for the limit is refused with the numbers instead of
// failing with EMFILE half-way through.
func NeedDescriptors(n int, what string) error {
	limit, open := FileDescriptors()
	if limit <= 0 || open+n <= limit {
		return nil
	}
	return fmt.Errorf("%s needs %d file descriptors and the open-file limit leaves %d of %d: raise the hard limit (ulimit -Hn as root, LimitNOFILE= in a unit)",
		what, n, max(limit-open, 0), limit)
}
