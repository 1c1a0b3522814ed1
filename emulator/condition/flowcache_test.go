package condition

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/traffic"
)

// Without a flow cache (the default for conditional routing on the
// userspace datapath) a flip applies to the very next frame, however soon
// after the previous flip it comes. With the cache, a frame follows the
// cached decision until the next revalidation round.
func TestFlipAppliesToNextFrame(t *testing.T) {
	roottest.NeedOVS(t)
	lab, comp := up(t, "hcnd-next")
	if lab.OVS.FlowCache != "off" || lab.OVS.Datapath != "netdev" {
		t.Skipf("flow cache %s on the %s datapath: the test is about the uncached userspace datapath", lab.OVS.FlowCache, lab.OVS.Datapath)
	}
	in, dst, def, alt := divertable(t, comp)
	m, err := New(lab, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sw := lab.Switches[0]
	ns := lab.OVS.Instances[sw.Instance].NetNS
	var host fabric.Host
	for _, h := range lab.Hosts {
		if h.Switch == sw.Name && h.Port == in {
			host = h
		}
	}
	dmac, _ := net.ParseMAC(comp.Plan.HostMAC(dst).String())
	smac, _ := net.ParseMAC(host.MAC)
	ports := [2]string{fabric.PortIface(0, int(def.Out[0])), fabric.PortIface(0, int(alt.Out[0]))}
	// One reader polls both ports: kernel.Stats would open a socket and
	// enter the namespace on every poll.
	rd, err := kernel.NewStatsReader(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	queues := func() (q [2]kernel.QdiscStats) {
		t.Helper()
		for i, p := range ports {
			if q[i], err = rd.Stats(p); err != nil {
				t.Fatal(err)
			}
		}
		return q
	}
	// sent counts the frames the switch put on each port's queue.
	sent := func() (n [2]uint64) {
		for i, st := range queues() {
			n[i] = st.Packets + st.QLen + st.Drops
		}
		return n
	}
	// await waits until k more frames than before left on the two ports
	// together and returns how many left on each.
	await := func(before [2]uint64, k uint64) [2]uint64 {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			now := sent()
			d := [2]uint64{now[0] - before[0], now[1] - before[1]}
			if d[0]+d[1] >= k || time.Now().After(deadline) {
				return d
			}
			time.Sleep(time.Millisecond)
		}
	}

	sock, err := packet.OpenEtherTypes(host.NetNS, host.Iface, 0, ethertype.Traffic)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	// Small frames, and an empty queue before each round: a frame the
	// 2 Mbit/s port's full queue refused would count nowhere.
	frame := make([]byte, 128)
	seq := uint64(0)
	send := func() {
		t.Helper()
		h := traffic.Header{Seq: seq, SendNs: uint64(monoNow())}
		copy(h.Dst[:], dmac)
		copy(h.Src[:], smac)
		seq++
		if err := traffic.Encode(frame, &h); err != nil {
			t.Fatal(err)
		}
		if err := sock.Send(frame); err != nil {
			t.Fatal(err)
		}
	}

	// Each round forwards the flow by the default rule, then pauses, sends
	// one frame, resumes and sends one more, all within a few
	// milliseconds. A cache would have been revalidated after the pause (the
	// switch was idle) but not yet after the resume: Open vSwitch starts
	// revalidation rounds at least 5 ms apart, so the last frame would
	// still take the alternative.
	drained := func() {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(time.Millisecond) {
			st := queues()
			q := st[0].QLen + st[1].QLen
			if q == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d frames still queued after 3 s", q)
			}
		}
	}
	for i := 0; i < 8; i++ {
		drained()
		n0 := sent()
		for k := 0; k < 3; k++ {
			send()
		}
		if d := await(n0, 3); d != [2]uint64{3, 0} {
			t.Fatalf("round %d: of 3 frames before the pause, %d left on the default port %d and %d on the alternative's %d",
				i, d[0], def.Out[0], d[1], alt.Out[0])
		}
		n0 = sent()
		paused := time.Now()
		if err := m.SetPaused(sw.Name, int(def.Cond), true); err != nil {
			t.Fatal(err)
		}
		send()
		// Resuming before the switch has read the frame would
		// reclassify it.
		if d := await(n0, 1); d != [2]uint64{0, 1} {
			t.Fatalf("round %d: the frame after the pause left %d times on the default port %d and %d on the alternative's %d",
				i, d[0], def.Out[0], d[1], alt.Out[0])
		}
		n0 = sent()
		if err := m.SetPaused(sw.Name, int(def.Cond), false); err != nil {
			t.Fatal(err)
		}
		send()
		if d := await(n0, 1); d != [2]uint64{1, 0} {
			t.Fatalf("round %d: the frame after the resume, %v after the pause, left %d times on the default port %d and %d on the alternative's %d",
				i, time.Since(paused).Round(time.Microsecond), d[0], def.Out[0], d[1], alt.Out[0])
		}
	}
	if n := datapathFlows(t, lab.OVS.Instances[sw.Instance].RunDir); n != 0 {
		t.Fatalf("%d datapath flows installed, want none", n)
	}
}

var dpFlowsRe = regexp.MustCompile(`flows\s*:\s*\(current (\d+)\)`)

// datapathFlows is the number of datapath flows an instance holds.
func datapathFlows(t *testing.T, runDir string) int {
	t.Helper()
	out, err := exec.CommandContext(context.Background(), "ovs-appctl", "-t", filepath.Join(runDir, "ovs-vswitchd.ctl"), "upcall/show").CombinedOutput()
	if err != nil {
		t.Fatalf("upcall/show: %v\n%s", err, out)
	}
	m := dpFlowsRe.FindSubmatch(out)
	if m == nil {
		t.Fatalf("upcall/show: no flow count in\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
