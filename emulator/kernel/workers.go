package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Workers is the kernel's worker pool as /proc shows it: kworker threads,
// and those blocked (state D). Closing a packet socket frees its BPF
// filter through deferred work on these threads; released by the tens of
// thousands at once (a dying ovs-vswitchd of a 16,512-host lab) they
// blocked ~2,050 workers, and from then on every BPF attach, until a
// restart. The count is what a paced teardown waits on.
type Workers struct {
	Total, Blocked int
}

// ReadWorkers counts the kworker threads and the blocked ones.
func ReadWorkers() Workers {
	var w Workers
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || end+2 >= len(s) || !strings.HasPrefix(s[open+1:end], "kworker") {
			continue
		}
		w.Total++
		if s[end+2] == 'D' {
			w.Blocked++
		}
	}
	return w
}

// AwaitWorkers waits until no kworker is blocked and their number is back
// within slack of base, or until limit; it returns the largest count seen
// and whether the pool settled.
func AwaitWorkers(base Workers, slack int, limit time.Duration) (peak Workers, settled bool) {
	deadline := time.Now().Add(limit)
	for {
		w := ReadWorkers()
		peak.Total, peak.Blocked = max(peak.Total, w.Total), max(peak.Blocked, w.Blocked)
		if w.Blocked == 0 && w.Total <= base.Total+slack {
			return peak, true
		}
		if time.Now().After(deadline) {
			return peak, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
