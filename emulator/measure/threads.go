package measure

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/results"
)

// Where the CPU went during a point, per thread: a machine can be far
// from busy on average while one ovs-vswitchd thread — the userspace
// datapath forwards every port of an instance on its main thread — is
// saturated and queues frames ahead of the shapers. /proc/stat's all-core
// busy fraction cannot see that; each thread's on-CPU time can.
//
// Each thread's time is read from /proc/PID/task/TID/schedstat (the
// scheduler's own nanosecond run time, not 10 ms ticks); softirq time from
// /proc/stat, where the kernel charges the veth, tbf and packet-socket
// work that runs outside any thread.

// threadTimes is a snapshot of on-CPU nanoseconds per thread of one
// process.
type threadTimes struct {
	pid   int
	label string // "vswitchd 0" (instance), "ethfab"
	// vswitchd: an ovs-vswitchd, whose busiest thread the fidelity
	// verdict checks.
	vswitchd bool
	ns       map[int]uint64 // tid -> ns on CPU
	names    map[int]string // tid -> comm
}

// cpuSnapshot is every watched process plus the machine's softirq time.
type cpuSnapshot struct {
	procs   []threadTimes
	softirq uint64 // jiffies
	at      time.Time
}

// readThreads reads every thread's run time of pid. A thread that ends
// between the listing and the read is skipped.
func readThreads(pid int, label string) (threadTimes, error) {
	t := threadTimes{pid: pid, label: label, ns: map[int]uint64{}, names: map[int]string{}}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return t, fmt.Errorf("cpu: %w", err)
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		ns, err := parseSchedstat(string(b))
		if err != nil {
			continue
		}
		t.ns[tid] = ns
		if c, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm")); err == nil {
			t.names[tid] = strings.TrimSpace(string(c))
		}
	}
	return t, nil
}

// parseSchedstat reads the first field of a schedstat line: nanoseconds
// spent running on a CPU.
func parseSchedstat(s string) (uint64, error) {
	f := strings.Fields(s)
	if len(f) < 1 {
		return 0, fmt.Errorf("cpu: empty schedstat")
	}
	return strconv.ParseUint(f[0], 10, 64)
}

// clockTicks is USER_HZ, the unit of /proc/stat; 100 on every Linux
// architecture ethfab runs on.
const clockTicks = 100

// snapshotCPU reads the threads of every process in procs (label -> pid)
// and the softirq time. A process that is gone is left out, not an error:
// the point's other checks will say what its death did.
func snapshotCPU(procs []watchedProc) cpuSnapshot {
	s := cpuSnapshot{at: time.Now()}
	for _, p := range procs {
		if p.pid <= 0 {
			continue
		}
		if t, err := readThreads(p.pid, p.label); err == nil {
			t.vswitchd = p.vswitchd
			s.procs = append(s.procs, t)
		}
	}
	if t, err := kernel.ReadCPU(); err == nil {
		s.softirq = t.Softirq
	}
	return s
}

// watchedProc is a process whose threads a point accounts for.
type watchedProc struct {
	label string
	pid   int
	// vswitchd marks an ovs-vswitchd, whose busiest thread the fidelity
	// verdict checks.
	vswitchd bool
}

// cpuSplit turns two snapshots into the point's CPU account, in cores
// (1.0 = one core busy for the whole interval).
func cpuSplit(a, b cpuSnapshot) *results.CPUSplit {
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return nil
	}
	before := map[string]threadTimes{}
	for _, t := range a.procs {
		before[t.label] = t
	}
	split := &results.CPUSplit{Softirq: float64(sub(b.softirq, a.softirq)) / clockTicks / secs}
	for _, t := range b.procs {
		t0, ok := before[t.label]
		if !ok || t0.pid != t.pid {
			continue // restarted or new: no interval to measure
		}
		var total float64
		for tid, ns := range t.ns {
			c := float64(sub(ns, t0.ns[tid])) / 1e9 / secs
			total += c
			if t.vswitchd {
				split.Threads = append(split.Threads, results.ThreadCPU{Process: t.label, Thread: t.names[tid], TID: tid, Cores: c})
			}
		}
		if t.vswitchd {
			split.Vswitchd += total
		} else {
			split.Ethfab += total
		}
	}
	sort.Slice(split.Threads, func(i, j int) bool { return split.Threads[i].Cores > split.Threads[j].Cores })
	// Only the threads that did something are worth a line in the report.
	n := 0
	for _, th := range split.Threads {
		if th.Cores >= 0.01 {
			n++
		}
	}
	if len(split.Threads) > 0 {
		split.Busiest = split.Threads[0]
	}
	split.Threads = split.Threads[:n]
	return split
}
