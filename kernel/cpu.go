package kernel

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPUTimes is the first ("cpu") line of /proc/stat: jiffies summed over
// every core since boot.
type CPUTimes struct {
	Busy, Idle uint64
	// Softirq (part of Busy) is the kernel's packet work outside any
	// thread: veth, tbf, packet-socket delivery.
	Softirq uint64
}

// ReadCPU reads the all-cores line of /proc/stat. Idle counts idle and
// iowait; everything else (user, nice, system, irq, softirq, steal) is
// busy — softirq is where veth and tbf spend their time, and steal is
// what a Firecracker VM's host takes away.
func ReadCPU() (CPUTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return CPUTimes{}, fmt.Errorf("cpu: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return CPUTimes{}, fmt.Errorf("cpu: /proc/stat is empty")
	}
	return parseCPULine(sc.Text())
}

func parseCPULine(line string) (CPUTimes, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return CPUTimes{}, fmt.Errorf("cpu: unexpected /proc/stat line %q", line)
	}
	var t CPUTimes
	// user nice system idle iowait irq softirq steal guest guest_nice;
	// guest time is already counted in user, so stop at steal.
	for i, s := range f[1:] {
		if i >= 8 {
			break
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return CPUTimes{}, fmt.Errorf("cpu: /proc/stat field %d: %w", i+1, err)
		}
		if i == 3 || i == 4 {
			t.Idle += v
		} else {
			t.Busy += v
		}
		if i == 6 {
			t.Softirq = v
		}
	}
	return t, nil
}

// BusyFraction is the share of all cores' time that was busy between two
// readings; -1 when no time passed.
func BusyFraction(a, b CPUTimes) float64 {
	busy := float64(b.Busy) - float64(a.Busy)
	total := busy + float64(b.Idle) - float64(a.Idle)
	if total <= 0 {
		return -1
	}
	return busy / total
}
