package condition

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/fabric/fabrictest"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/ovs"
)

// BenchmarkMaskFlowMod is what QCN-Switch's realisation M costs the switch
// (spec §A.4.3; issue 19's FlowMod-cost benchmark): every refresh each
// switch draws N and rewrites its condition bitmask when the mask changed,
// one FlowMod on Open vSwitch. On DF(2,4,2)'s 36 bridges in one userspace
// ovs-vswitchd, it sends every switch a mask FlowMod every refresh (the
// worst case: a change every draw) for each refresh period, and reports
// the ovs-vswitchd CPU it took over the same fabric without FlowMods, per
// FlowMod. The fabric is idle: with traffic the userspace datapath's
// forwarding thread already runs at about a core (measured here with 1,800
// frames/s injected), so a FlowMod's cost shows as forwarding displaced,
// not as CPU added. On the eBPF datapath a mask is a map write: timed too.
//
//	go test -run XXX -bench BenchmarkMaskFlowMod -benchtime 1x -v ./emulator/condition
func BenchmarkMaskFlowMod(b *testing.B) {
	roottest.NeedOVS(b)
	lab := fabrictest.UpYAML(b, "hfmb", "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\nrouting: {mode: qcn-switch}\n"+
		"links: {host: {rate: 100mbit}, local: {rate: 100mbit, limit: 64kb}, global: {rate: 100mbit, limit: 64kb}}\novs: {datapath: netdev}\n")
	pid := ovs.SwitchPID(lab.OVS.Instances[0].RunDir)
	if pid == 0 {
		b.Fatal("no ovs-vswitchd")
	}
	var conns []*ofWriter
	for _, s := range lab.Switches {
		c, err := dialOF(s.Mgmt)
		if err != nil {
			b.Fatal(err)
		}
		defer c.close()
		conns = append(conns, c)
	}
	const window = 3 * time.Second
	// Worst case per refresh: every switch's mask changes at every draw.
	refreshes := []time.Duration{0, 100 * time.Millisecond, 20 * time.Millisecond, 5 * time.Millisecond, time.Millisecond}
	b.Logf("%d bridges in one ovs-vswitchd (pid %d); %v per measurement", len(conns), pid, window)
	b.Logf("%-9s %12s %14s %14s %16s", "refresh", "FlowMods/s", "vswitchd cores", "extra cores", "µs per FlowMod")
	base := 0.0
	for _, every := range refreshes {
		sent, cores := maskStorm(b, conns, pid, every, window)
		rate := float64(sent) / window.Seconds()
		if every == 0 {
			base = cores
			b.Logf("%-9s %12.0f %14.3f %14s %16s", "none", rate, cores, "-", "-")
			continue
		}
		extra := cores - base
		b.Logf("%-9v %12.0f %14.3f %14.3f %16.1f", every, rate, cores, extra, extra/rate*1e6)
		if every == 5*time.Millisecond {
			b.ReportMetric(extra/rate*1e6, "vswitchd-µs/flowmod")
		}
	}
	for _, c := range conns {
		if n := c.rejected(); n != 0 {
			b.Errorf("the switch rejected %d FlowMods", n)
		}
	}
	if lab.BPF == nil {
		ebpfMaskWrite(b)
	}
}

// maskStorm sends every connection a mask FlowMod (alternating masks)
// every period for d (none with period 0), and returns how many it sent
// and the cores ovs-vswitchd used meanwhile.
func maskStorm(b *testing.B, conns []*ofWriter, pid int, every, d time.Duration) (sent int, cores float64) {
	cpu0, t0 := processCPU(b, pid), time.Now()
	if every == 0 {
		time.Sleep(d)
	} else {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; time.Since(t0) < d; i++ {
			<-tick.C
			for _, c := range conns {
				if err := c.setMask(uint64(i&1), false); err != nil {
					b.Fatal(err)
				}
				sent++
			}
		}
		// Let the switch work off what it has queued before reading.
		for _, c := range conns {
			if err := c.barrier(10 * time.Second); err != nil {
				b.Fatal(err)
			}
		}
	}
	return sent, float64(processCPU(b, pid)-cpu0) / float64(time.Since(t0))
}

// processCPU is a process's on-CPU time over all its threads, ns.
func processCPU(b *testing.B, pid int) uint64 {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var ns uint64
	for _, e := range ents {
		s, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue // a thread that ended
		}
		if f := strings.Fields(string(s)); len(f) > 0 {
			v, _ := strconv.ParseUint(f[0], 10, 64)
			ns += v
		}
	}
	return ns
}

// ebpfMaskWrite times a mask write on the eBPF datapath: a map update.
func ebpfMaskWrite(b *testing.B) {
	lab := fabrictest.UpYAML(b, "hfmbe", "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\nrouting: {mode: qcn-switch}\n"+
		"links: {host: {rate: 100mbit}, local: {rate: 100mbit, limit: 64kb}, global: {rate: 100mbit, limit: 64kb}}\novs: {datapath: ebpf}\n")
	h, err := datapath.Open(*lab.BPF)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	const n = 100_000
	t0 := time.Now()
	for i := range n {
		if err := h.SetCondition(i%len(lab.Switches), uint64(i&1)); err != nil {
			b.Fatal(err)
		}
	}
	per := time.Since(t0) / n
	b.Logf("eBPF datapath: a mask write is a map update, %v each (%d writes)", per, n)
	b.ReportMetric(float64(per.Nanoseconds())/1e3, "ebpf-µs/write")
}
