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
// default; kernels since 6.12 enforce it with the fair server), the
// safety net that keeps a real-time process that never sleeps from
// freezing the machine. Without it (-1) a runaway loop would take a core
// for good.
func RealtimeThrottled() bool {
	b, err := os.ReadFile("/proc/sys/kernel/sched_rt_runtime_us")
	if err != nil {
		return false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return err == nil && n >= 0
}

// Realtime puts every thread of this process under SCHED_FIFO at
// RealtimePriority, and returns what puts each back as it was (a thread
// started meanwhile, which inherited its creator's policy, gets the
// process's main thread's). Go cannot give one goroutine a priority, and
// giving it to some threads only makes things worse: a goroutine woken
// on a real-time thread still waits for one of GOMAXPROCS Ps held by the
// ordinary ones. An error (EPERM without CAP_SYS_NICE, or in a cgroup
// with no real-time runtime) comes with every thread put back.
func Realtime() (restore func() error, err error) {
	saved := map[int]*unix.SchedAttr{}
	err = eachThread(func(tid int) error {
		a, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			return nil // gone meanwhile
		}
		saved[tid] = a
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("scheduling policy: %w", err)
	}
	main := saved[os.Getpid()]
	if main == nil {
		return nil, errors.New("scheduling policy: no main thread")
	}
	restore = func() error {
		var errs []error
		err := eachThread(func(tid int) error {
			a := saved[tid]
			if a == nil {
				a = main
			}
			if err := unix.SchedSetAttr(tid, a, 0); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("scheduling policy of thread %d: %w", tid, err))
			}
			return nil // on to the others: none may stay real-time
		})
		return errors.Join(append(errs, err)...)
	}
	fifo := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: RealtimePriority}
	err = eachThread(func(tid int) error {
		if err := unix.SchedSetAttr(tid, &fifo, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("scheduling policy SCHED_FIFO of thread %d: %w", tid, err)
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(err, restore())
	}
	return restore, nil
}

// RealtimePermitted says why this process may not run real-time (nil:
// it may), by trying: Realtime, then putting every thread back.
func RealtimePermitted() error {
	restore, err := Realtime()
	if err != nil {
		return err
	}
	return restore()
}

// eachThread calls fn once for every thread of the process, listing them
// until two listings in a row find none it has not seen: the runtime may
// start one meanwhile, and a thread being created has its creator's
// policy before it shows in the list. It stops at fn's first error.
func eachThread(fn func(tid int) error) error {
	seen := map[int]bool{}
	for quiet := 0; quiet < 2; {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		quiet++
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || seen[tid] {
				continue
			}
			quiet, seen[tid] = 0, true
			if err := fn(tid); err != nil {
				return err
			}
		}
	}
	return nil
}
