package kernel

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// RealtimePriority is the SCHED_FIFO priority Realtime gives: the lowest,
// which is above every SCHED_OTHER task (ksoftirqd, kworkers, other
// processes) and below the kernel's own real-time threads (threaded
// interrupt handlers run at 50).
const RealtimePriority = 1

// RealtimeThrottled says whether the kernel bounds real-time tasks' share
// of each CPU (kernel.sched_rt_runtime_us, 950 ms in every second by
// default), the safety net that keeps a real-time process that never
// sleeps from freezing the machine. Without it (-1) a runaway loop would
// take a core for good.
func RealtimeThrottled() bool {
	b, err := os.ReadFile("/proc/sys/kernel/sched_rt_runtime_us")
	if err != nil {
		return false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return err == nil && n >= 0
}

// Realtime puts every thread of this process under SCHED_FIFO at
// RealtimePriority, and returns what puts them all (those made since
// included: a thread inherits its creator's policy) back under
// SCHED_OTHER. Go cannot give one goroutine a priority, and giving it to
// some threads only makes things worse: a goroutine woken on a real-time
// thread still waits for one of GOMAXPROCS Ps held by the ordinary ones.
// An error (EPERM without CAP_SYS_NICE, or in a cgroup with no real-time
// runtime) leaves every thread as it was.
func Realtime() (restore func() error, err error) {
	fifo := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: RealtimePriority}
	other := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	restore = func() error { return setAllThreads(&other) }
	if err := setAllThreads(&fifo); err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// setAllThreads sets every thread's scheduling attributes, listing the
// threads until a listing finds none it has not set: the runtime may start
// one meanwhile, from a thread not yet set.
func setAllThreads(a *unix.SchedAttr) error {
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh++
			done[tid] = true
			if err := unix.SchedSetAttr(tid, a, 0); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("scheduling policy %d of thread %d: %w", a.Policy, tid, err)
			}
		}
		if fresh == 0 {
			return nil
		}
	}
}
