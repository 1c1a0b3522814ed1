package measure

import (
	"os"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	if ns, err := parseSchedstat("6566915 10464532 6\n"); err != nil || ns != 6566915 {
		t.Errorf("got %d, %v", ns, err)
	}
	for _, bad := range []string{"", " \n", "x 1 2", "-5 1 1"} {
		if _, err := parseSchedstat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The split is per thread in cores over the interval; the busiest
// vswitchd thread is named even when the all-core average is low.
func TestCPUSplit(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := cpuSnapshot{at: t0, softirq: 1000, procs: []threadTimes{
		{pid: 10, label: "vswitchd 0", vswitchd: true, ns: map[int]uint64{10: 1e9, 13: 0}, names: map[int]string{10: "ovs-vswitchd", 13: "handler1"}},
		{pid: 11, label: "vswitchd 1", vswitchd: true, ns: map[int]uint64{11: 0}, names: map[int]string{11: "ovs-vswitchd"}},
		{pid: 12, label: "ethfab", ns: map[int]uint64{12: 0, 14: 0}},
	}}
	b := cpuSnapshot{at: t0.Add(2 * time.Second), softirq: 1100, procs: []threadTimes{
		{pid: 10, label: "vswitchd 0", vswitchd: true, ns: map[int]uint64{10: 2.9e9, 13: 0.01e9}, names: map[int]string{10: "ovs-vswitchd", 13: "handler1"}},
		{pid: 11, label: "vswitchd 1", vswitchd: true, ns: map[int]uint64{11: 0.5e9}, names: map[int]string{11: "ovs-vswitchd"}},
		{pid: 12, label: "ethfab", ns: map[int]uint64{12: 0.6e9, 14: 0.4e9}},
	}}
	s := cpuSplit(a, b)
	near := func(x, want float64) bool { return x > want-1e-9 && x < want+1e-9 }
	if s.Busiest.Process != "vswitchd 0" || s.Busiest.Thread != "ovs-vswitchd" || !near(s.Busiest.Cores, 0.95) {
		t.Errorf("busiest %+v, want vswitchd 0 ovs-vswitchd at 0.95", s.Busiest)
	}
	if !near(s.Vswitchd, 0.95+0.005+0.25) || !near(s.Ethfab, 0.5) || !near(s.Softirq, 0.5) {
		t.Errorf("split %+v", s)
	}
	// handler1 used 0.5% of a core: below the listing threshold.
	if len(s.Threads) != 2 {
		t.Errorf("threads %+v, want the two above 1%%", s.Threads)
	}
	// A restarted vswitchd (new pid) has no interval: left out.
	b.procs[1].pid = 99
	if s := cpuSplit(a, b); !near(s.Vswitchd, 0.955) {
		t.Errorf("restarted instance counted: %+v", s)
	}
}

// This process's own threads are readable, and its time only grows.
func TestReadThreadsSelf(t *testing.T) {
	a, err := readThreads(os.Getpid(), "self")
	if err != nil || len(a.ns) == 0 {
		t.Fatalf("%v, %d threads", err, len(a.ns))
	}
	x := 0
	for i := range 2000000 {
		x += i
	}
	_ = x
	b, _ := readThreads(os.Getpid(), "self")
	var ta, tb uint64
	for _, v := range a.ns {
		ta += v
	}
	for _, v := range b.ns {
		tb += v
	}
	if tb < ta {
		t.Errorf("run time went back: %d -> %d", ta, tb)
	}
}
