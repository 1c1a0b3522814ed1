package kernel

import (
	"bytes"
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
		comm, state, ok := ParseStat(b)
		if !ok || !strings.HasPrefix(comm, "kworker") {
			continue
		}
		w.Total++
		if state == 'D' {
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

// ParseStat reads a process's name and state (R, S, D, Z, ...) from its
// /proc/PID/stat line, whose name is in parentheses and may itself hold
// spaces and parentheses.
func ParseStat(b []byte) (comm string, state byte, ok bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) {
		return "", 0, false
	}
	return string(b[open+1 : end]), b[end+2], true
}
