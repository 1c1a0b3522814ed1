package kernel

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/roottest"
)

// policies is every thread's scheduling policy, by thread.
func policies(t *testing.T) map[int]uint32 {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]uint32{}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // exited meanwhile
		}
		out[tid] = a.Policy
	}
	return out
}

// TestRealtime checks that Realtime puts every thread under SCHED_FIFO,
// that a thread started afterwards inherits it, and that restoring puts
// every thread, that one included, back.
func TestRealtime(t *testing.T) {
	roottest.Need(t)
	if !RealtimeThrottled() {
		t.Skip("kernel.sched_rt_runtime_us is -1: no throttling to fall back on")
	}
	restore, err := Realtime()
	if errors.Is(err, unix.EPERM) {
		t.Skipf("this process may not run real-time (a cgroup without real-time runtime?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer restore() // on a failure below: the other tests run as usual
	before := policies(t)
	// A thread the runtime starts now: each goroutine locked to its thread
	// and blocked keeps that thread, so once the idle ones are taken the
	// next needs a new one.
	started, stop := make(chan int), make(chan struct{})
	defer close(stop)
	fresh := false
	for n := 0; !fresh && n < 256; n++ {
		go func() {
			runtime.LockOSThread()
			started <- unix.Gettid()
			<-stop
		}()
		_, old := before[<-started]
		fresh = !old
	}
	if !fresh {
		t.Fatal("no thread started during the test")
	}
	for th, p := range policies(t) {
		a, err := unix.SchedGetAttr(th, 0)
		if err != nil {
			continue // exited meanwhile
		}
		if _, old := before[th]; p != unix.SCHED_FIFO || a.Priority != RealtimePriority {
			t.Errorf("thread %d (started before: %v): policy %d priority %d, want SCHED_FIFO %d", th, old, p, a.Priority, RealtimePriority)
		}
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	for th, p := range policies(t) {
		if p != unix.SCHED_NORMAL {
			t.Errorf("thread %d: policy %d after restore, want SCHED_NORMAL", th, p)
		}
	}
}
