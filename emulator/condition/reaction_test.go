package condition

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
)

// Real overload: a host sends twice what its default inter-switch port
// (2 Mbit/s) carries, so the port's queue oscillates across XOFF/XON; the
// monitor flips it by itself and measures, from the frames its taps see
// leaving the switch, when they took the alternative and came back.
func TestReactionTimeMeasured(t *testing.T) {
	roottest.NeedOVS(t)
	for _, dp := range datapaths {
		t.Run(dp.name, func(t *testing.T) { testReactionTimeMeasured(t, "hrx-"+dp.name, dp.value) })
	}
}

func testReactionTimeMeasured(t *testing.T, name, dp string) {
	lab, comp := upOn(t, name, dp)
	in, dst, def, _ := divertable(t, comp)
	hookedBefore := hookedPacketSockets(t, lab.Links[0].A.NetNS, lab.Links[0].B.NetNS)
	if lab.BPF != nil {
		// A tap a killed run left on: the new monitor switches it off.
		h, err := datapath.Open(*lab.BPF)
		if err != nil {
			t.Fatal(err)
		}
		e := lab.Links[0].A
		idx, err := kernel.LinkIndexes(e.NetNS, []string{e.Iface})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.SetTap(uint32(idx[0]), datapath.TapArrive, 0, 0); err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	m := newMonitor(t, lab, false)
	if lab.BPF != nil {
		h, err := datapath.Open(*lab.BPF)
		if err != nil {
			t.Fatal(err)
		}
		if on, err := h.TapsOn(); err != nil || on != 0 {
			t.Fatalf("%d taps on after the monitor started, before any queue rose (%v)", on, err)
		}
		h.Close()
	}
	sw0 := lab.Switches[0]
	altBefore := kindPackets(t, lab, 0, controller.KindAlternative)
	stop := runMonitor(t, m)

	var host fabric.Host
	for _, h := range lab.Hosts {
		if h.Switch == sw0.Name && h.Port == in {
			host = h
		}
	}
	dmac, _ := net.ParseMAC(comp.Plan.HostMAC(dst).String())
	smac, _ := net.ParseMAC(host.MAC)
	// 1514-byte frames every 3 ms: 4 Mbit/s into a 2 Mbit/s port.
	if err := stream(host.NetNS, host.Iface, dmac, smac, 3*time.Millisecond, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Drained, and the last resume's reaction recorded (no frame came
	// back: unrecovered), before the monitor stops.
	waitUntil(10*time.Second, func() bool { return m.Counters().ResumeEvents > 0 && quiet(m) })
	stop()
	if lab.BPF != nil {
		queuesCounted(t, lab)
	}
	c := m.Counters()
	rs, n := m.Reactions(0)
	if n != uint64(len(rs)) {
		t.Fatalf("%d reactions recorded, %d returned", n, len(rs))
	}
	var pause, resume []time.Duration
	for _, r := range rs {
		if r.Switch != sw0.Name || r.Port != int(def.Cond) || r.Outcome != Reacted {
			continue
		}
		if !r.Seen.After(r.Sent) || r.Sent.Before(r.Onset) {
			t.Fatalf("reaction out of order: onset %v sent %v seen %v", r.Onset, r.Sent, r.Seen)
		}
		if r.Resume {
			resume = append(resume, r.Delay())
		} else {
			pause = append(pause, r.Delay())
		}
	}
	if len(pause) == 0 {
		t.Fatalf("no reaction measured on %s port %d; counters %+v; reactions %+v", sw0.Name, def.Cond, c, rs)
	}
	if c.Reacted+c.Undiverted+c.Recovered+c.Unrecovered+c.Unmeasured != n {
		t.Fatalf("outcome counters %+v do not add up to %d reactions", c, n)
	}
	if c.Reacted+c.Undiverted+c.Unmeasured != c.PauseEvents {
		t.Fatalf("pause flips %d, pause reactions %d", c.PauseEvents, c.Reacted+c.Undiverted+c.Unmeasured)
	}
	// The switch's own counters, read independently (ovs-ofctl, or the
	// datapath's map), agree frames were diverted.
	altAfter := kindPackets(t, lab, 0, controller.KindAlternative)
	if altAfter <= altBefore {
		t.Fatalf("alternative rules: %d packets before, %d after", altBefore, altAfter)
	}
	// The monitor's taps cost the switches' ports nothing once it is
	// done: the eBPF datapath's flags are off as soon as it stops (below);
	// socket taps, which it keeps from point to point
	// (Monitor.releaseTaps), once it is closed.
	if lab.BPF == nil {
		m.Close()
	}
	var hooked int
	if !waitUntil(5*time.Second, func() bool {
		hooked = hookedPacketSockets(t, lab.Links[0].A.NetNS, lab.Links[0].B.NetNS)
		return hooked == hookedBefore
	}) {
		t.Errorf("%d packet sockets hooked in the fabric after the monitor closed, %d before it started", hooked, hookedBefore)
	}
	if lab.BPF != nil {
		// The eBPF datapath taps in its program: the flags must all be
		// off once the monitor is idle, or every frame pays a record.
		h, err := datapath.Open(*lab.BPF)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if !h.HasTaps() {
			t.Fatal("the datapath has no taps")
		}
		if on, err := h.TapsOn(); err != nil || on != 0 {
			t.Errorf("%d datapath taps on after the monitor went idle (%v)", on, err)
		}
	}
	if len(resume) == 0 {
		t.Fatalf("no recovery measured on %s port %d; counters %+v", sw0.Name, def.Cond, c)
	}
	t.Logf("%s port %d: %d pause flips, reaction %v; %d resumes, recovery %v; undiverted %d unrecovered %d unmeasured %d; %d alt frames; onset resolution %v",
		sw0.Name, def.Cond, c.PauseEvents, pause, c.ResumeEvents, resume, c.Undiverted, c.Unrecovered, c.Unmeasured, altAfter-altBefore, m.ProbeResolution())
}

// stream sends full-size frames from a host namespace's interface, one
// every gap, for d.
func stream(ns, ifname string, dst, src net.HardwareAddr, gap, d time.Duration) error {
	return sendFrames(context.Background(), ns, ifname, dst, src, int(d/gap), gap)
}

// hookedPacketSockets counts the packet sockets of the namespaces hooked
// to every frame (running, protocol ETH_P_ALL), from /proc/net/packet.
func hookedPacketSockets(t *testing.T, nss ...string) int {
	t.Helper()
	n := 0
	seen := map[string]bool{}
	for _, ns := range nss {
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/net/packet").Output()
		if err != nil {
			t.Fatalf("/proc/net/packet in %s: %v", ns, err)
		}
		for _, line := range strings.Split(string(out), "\n")[1:] {
			// sk RefCnt Type Proto Iface R Rmem User Inode
			if f := strings.Fields(line); len(f) >= 6 && f[5] == "1" && f[3] == "0003" {
				n++
			}
		}
	}
	return n
}

// kindPackets sums the packet counters of switch sw's rules of a kind:
// from the eBPF datapath's counters, or from its bridge's flows.
func kindPackets(t *testing.T, lab *fabric.Lab, sw int, k controller.Kind) uint64 {
	t.Helper()
	if lab.BPF == nil {
		return cookiePackets(t, lab.Switches[sw].Mgmt, k.Cookie())
	}
	cs, err := datapath.ReadCounters(*lab.BPF)
	if err != nil {
		t.Fatal(err)
	}
	return cs[sw][k].Packets
}

// cookiePackets sums the packet counters of a switch's rules with cookie,
// as ovs-ofctl dumps them.
func cookiePackets(t *testing.T, mgmt string, cookie uint64) uint64 {
	t.Helper()
	flows, err := ovs.DumpFlows(context.Background(), mgmt)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range flows {
		if f.Cookie == cookie {
			n += f.Packets
		}
	}
	return n
}

// queuesCounted checks, on a drained eBPF lab under conditional routing,
// that the program counts every inter-switch port's queue, that the
// counts came back to empty, and that tbf dropped nothing there: the
// program held each queue to its limit itself.
func queuesCounted(t *testing.T, lab *fabric.Lab) {
	t.Helper()
	h, err := datapath.Open(*lab.BPF)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if !h.HasQueues() {
		t.Fatal("conditional routing on the eBPF datapath: no queue counters")
	}
	qr, err := h.Queues()
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Close()
	// The inter-switch link ends, by namespace: one link dump and one
	// qdisc dump each.
	ends := map[string][]fabric.LinkEnd{}
	for _, l := range lab.Links {
		if l.A.Port == 0 || l.B.Port == 0 {
			continue // a host link: tbf's own queue
		}
		for _, e := range []fabric.LinkEnd{l.A, l.B} {
			ends[e.NetNS] = append(ends[e.NetNS], e)
		}
	}
	var admitted uint64
	for ns, es := range ends {
		names := make([]string, len(es))
		for i, e := range es {
			names[i] = e.Iface
		}
		idx, err := kernel.LinkIndexes(ns, names)
		if err != nil {
			t.Fatal(err)
		}
		r, err := kernel.NewStatsReader(ns)
		if err != nil {
			t.Fatal(err)
		}
		all, err := r.All()
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range es {
			q := qr.Read(uint32(idx[i]))
			if q.Limit == 0 || q.Len() != 0 || q.Backlog() != 0 {
				t.Errorf("%s:%d: counted queue %+v, want a limit and empty", e.Node, e.Port, q)
			}
			admitted += q.EnqPkts
			if st := all[idx[i]]; st.Kind != "tbf" || st.Drops != 0 {
				t.Errorf("%s:%d: qdisc %s dropped %d frames: the program should hold the queue", e.Node, e.Port, st.Kind, st.Drops)
			}
		}
	}
	if admitted == 0 {
		t.Error("no frame admitted into any counted queue")
	}
}
