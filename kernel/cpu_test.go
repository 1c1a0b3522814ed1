package kernel

import (
	"math"
	"testing"
	"time"
)

func TestCPULine(t *testing.T) {
	a, err := parseCPULine("cpu  100 5 50 1000 20 1 4 10 7 0")
	if err != nil {
		t.Fatal(err)
	}
	// busy = user+nice+system+irq+softirq+steal; guest (7) is inside user.
	if a.Busy != 170 || a.Idle != 1020 || a.Softirq != 4 {
		t.Errorf("parsed %+v, want busy 170 idle 1020 softirq 4", a)
	}
	// 2 cores for 0.5 s: 100 jiffies, 10 of them idle. The busy fields'
	// own count (40, the rest lost between ticks) does not enter.
	a.CPUs, a.At = 2, time.Second
	b := CPUTimes{Busy: a.Busy + 40, Idle: a.Idle + 10, CPUs: 2, At: a.At + time.Second/2}
	if f := BusyFraction(a, b); math.Abs(f-0.9) > 1e-9 {
		t.Errorf("busy fraction %g, want 0.9", f)
	}
	if f := BusyFraction(a, a); f != -1 {
		t.Errorf("no time passed: %g, want -1", f)
	}
	if _, err := parseCPULine("intr 1 2 3"); err == nil {
		t.Error("accepted a line that is not the cpu line")
	}
	now, err := ReadCPU()
	if err != nil || now.Busy+now.Idle == 0 || now.CPUs < 1 || now.At == 0 {
		t.Errorf("ReadCPU: %+v, %v", now, err)
	}
}
