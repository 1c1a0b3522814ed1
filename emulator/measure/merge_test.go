package measure

import (
	"testing"

	"github.com/ethfab/ethfab/results"
)

// Machines' reports merge: counts add up, the busiest machine's CPU and
// the busiest thread of any are kept (named after their machine), the
// non-minimal share is recomputed over every injected frame.
func TestMerge(t *testing.T) {
	a := &Report{CPUBusy: 0.4, SwitchHopFPS: 100, InjectedFrames: 10, NonminimalFrames: 5, RulePackets: map[string]uint64{"routing": 3},
		Drops: results.Drops{Queue: 1, Kernel: 2}, Links: []LinkStats{{Port: "g0s0:5"}},
		CPU: &results.CPUSplit{Vswitchd: 0.5, Softirq: 0.2, Busiest: results.ThreadCPU{Process: "vswitchd 0", Cores: 0.5}}}
	b := &Report{CPUBusy: 0.7, SwitchHopFPS: 50, InjectedFrames: 30, NonminimalFrames: 5, RulePackets: map[string]uint64{"routing": 4, "valiant": 1},
		Drops: results.Drops{Datapath: 4}, Links: []LinkStats{{Port: "g9s0:5"}}, Underlay: []results.UnderlayLoad{{Machine: "m1", Bps: 1}},
		CPU: &results.CPUSplit{Vswitchd: 0.25, Softirq: 0.6, Busiest: results.ThreadCPU{Process: "vswitchd 1", Cores: 0.8}}}
	m := Merge([]string{"m0", "m1"}, []*Report{a, b})
	if m.CPUBusy != 0.7 || m.SwitchHopFPS != 150 || m.RulePackets["routing"] != 7 || m.RulePackets["valiant"] != 1 {
		t.Errorf("merged: busy %v, hops %v, rules %v", m.CPUBusy, m.SwitchHopFPS, m.RulePackets)
	}
	if m.NonminimalShare != 0.25 || m.Drops.Outside() != 6 || m.Drops.Queue != 1 || len(m.Links) != 2 || len(m.Underlay) != 1 {
		t.Errorf("merged: share %v, drops %+v, %d links, %d underlays", m.NonminimalShare, m.Drops, len(m.Links), len(m.Underlay))
	}
	if c := m.CPU; c.Vswitchd != 0.75 || c.Softirq != 0.6 || c.Busiest.Process != "m1 vswitchd 1" || c.Busiest.Cores != 0.8 {
		t.Errorf("merged CPU: %+v", c)
	}
}
