package condition

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/fabric/fabrictest"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/traffic"
)

// up brings up a small conditional Dragonfly (p=1,a=2,h=1: 3 groups, so
// every switch reaches one remote group over a local port and can detour
// over its global port) with slow inter-switch links.
func up(t *testing.T, name string) (*fabric.Lab, *fabric.Compiled) {
	t.Helper()
	return upOn(t, name, "")
}

// upOn is up on a datapath ("": the scenario's default, Open vSwitch).
func upOn(t *testing.T, name, dp string) (*fabric.Lab, *fabric.Compiled) {
	t.Helper()
	body := "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\nrouting: {mode: conditional}\n" +
		"links: {host: {rate: 200mbit}, local: {rate: 2mbit}, global: {rate: 2mbit}}\n"
	if dp != "" {
		body += "ovs: {datapath: " + dp + "}\n"
	}
	return upYAML(t, name, body)
}

// datapaths are the datapaths the condition logic is tested on: Open
// vSwitch's (the scenario default) and ethfab's eBPF one.
var datapaths = []struct{ name, value string }{{"ovs", ""}, {"ebpf", "ebpf"}}

// upYAML brings up the lab the scenario body describes (fabrictest).
func upYAML(t *testing.T, name, body string) (*fabric.Lab, *fabric.Compiled) {
	t.Helper()
	lab := fabrictest.UpYAML(t, name, body)
	return lab, lab.Compiled()
}

// divertable finds, on switch 0, a host port and a destination whose
// default rule and alternative leave on different ports.
func divertable(t *testing.T, comp *fabric.Compiled) (in int, dst int, def, alt *controller.Rule) {
	t.Helper()
	tab := comp.Tables[0]
	for _, p := range comp.Top.Switches[0].Ports {
		if p.Host < 0 {
			continue
		}
		for h := range comp.Top.Hosts {
			mac := comp.Plan.HostMAC(h)
			d := tab.Lookup(p.Num, mac, ethertype.Traffic)
			if d == nil || d.Kind != controller.KindConditional {
				continue
			}
			a := tab.LookupPaused(p.Num, mac, ethertype.Traffic, func(q int32) bool { return q == d.Cond })
			if a != nil && a.Out[0] != d.Out[0] {
				return p.Num, h, d, a
			}
		}
	}
	t.Fatal("no divertable destination on switch 0")
	return
}

var outputRe = regexp.MustCompile(`(?m)^\s*output:(\d+)\s*$`)

// trace asks the switch itself where a frame goes (ovs-appctl
// ofproto/trace: the installed rules, the current metadata loader). A
// frame entering on a host port comes from that host's address, as the
// source guard requires.
func trace(t *testing.T, lab *fabric.Lab, sw, in int, dst string) int {
	t.Helper()
	s := lab.Switches[sw]
	src := "00:00:00:00:00:00"
	for _, h := range lab.Hosts {
		if h.Switch == s.Name && h.Port == in {
			src = h.MAC
		}
	}
	ctl := filepath.Join(lab.OVS.Instances[s.Instance].RunDir, "ovs-vswitchd.ctl")
	out, err := exec.Command("ovs-appctl", "-t", ctl, "ofproto/trace", s.Bridge,
		fmt.Sprintf("in_port=%d,dl_src=%s,dl_dst=%s,dl_type=%#x", in, src, dst, ethertype.Traffic)).CombinedOutput()
	if err != nil {
		t.Fatalf("trace: %v\n%s", err, out)
	}
	m := outputRe.FindAllStringSubmatch(string(out), -1)
	if len(m) != 1 {
		t.Fatalf("trace: %d outputs\n%s", len(m), out)
	}
	p, _ := strconv.Atoi(m[0][1])
	return p
}

// A manual pause is one FlowMod on the switch's own condition loader: the
// switch then sends the frame out of the alternative's port, and back out
// of the default's once resumed.
func TestPauseDivertsOnRealSwitch(t *testing.T) {
	roottest.NeedOVS(t)
	lab, comp := up(t, "hcnd-man")
	in, dst, def, alt := divertable(t, comp)
	mac := comp.Plan.HostMAC(dst).String()
	if got := trace(t, lab, 0, in, mac); got != int(def.Out[0]) {
		t.Fatalf("unpaused: leaves on %d, want the default's %d", got, def.Out[0])
	}
	m, err := New(lab, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sw := lab.Switches[0].Name
	if err := m.SetPaused(sw, int(def.Cond), true); err != nil {
		t.Fatal(err)
	}
	if got := trace(t, lab, 0, in, mac); got != int(alt.Out[0]) {
		t.Fatalf("paused: leaves on %d, want the alternative's %d", got, alt.Out[0])
	}
	// Transit frames ignore the conditions.
	if got := trace(t, lab, 0, int(alt.Out[0]), mac); got != int(def.Out[0]) {
		t.Fatalf("paused, transit frame: leaves on %d, want %d", got, def.Out[0])
	}
	if err := m.SetPaused(sw, int(def.Cond), false); err != nil {
		t.Fatal(err)
	}
	if got := trace(t, lab, 0, in, mac); got != int(def.Out[0]) {
		t.Fatalf("resumed: leaves on %d, want %d", got, def.Out[0])
	}
	if c := m.Counters(); c.PauseEvents != 1 || c.ResumeEvents != 1 || c.FlowMods != 2 || c.FlowModErrs != 0 {
		t.Fatalf("counters %+v", c)
	}
	ev := m.Events()
	if len(ev) != 2 || !ev[0].Paused || ev[1].Paused || !ev[1].Time.After(ev[0].Time) || !ev[0].Flip {
		t.Fatalf("events %+v", ev)
	}

	// The cost of a flip: FlowMod plus barrier round trip.
	const n = 200
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := m.SetPaused(sw, int(def.Cond), i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	confirmed := time.Since(t0) / n
	t1 := time.Now()
	s := m.switches[sw]
	for i := 0; i < n; i++ {
		if err := m.flowMod(s, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	pipelined := time.Since(t1) / n
	t.Logf("condition flip: %v per FlowMod confirmed by a barrier, %v pipelined", confirmed, pipelined)
}

// Real backlog: a host sends into a 2 Mbit/s inter-switch link faster than
// it drains, so its egress queue fills past XOFF; the monitor pauses the
// port by itself, later frames take the alternative, and the port resumes
// once the queue has drained.
//
// Timing. The host sends until a frame has taken the alternative, as the
// switch's rule counter says, not for a fixed time: a single burst of 200
// frames reached the switch in about 12 ms, and whenever the monitor's poll
// (every 4 ms while the queues are cold) or its FlowMod came later, the
// whole burst had passed before the flip and nothing was diverted, 1 run in
// 6 on an idle machine, most runs on a busy one. What remains assumed: a
// frame every millisecond (12 Mbit/s) outruns the 2 Mbit/s port, and the
// pause, the diversion and the drain each happen within 10 s.
func TestBacklogPausesAndResumes(t *testing.T) {
	roottest.NeedOVS(t)
	lab, comp := up(t, "hcnd-auto")
	in, dst, def, alt := divertable(t, comp)
	m := newMonitor(t, lab, false)
	stop := runMonitor(t, m)

	var host fabric.Host
	for _, h := range lab.Hosts {
		if h.Switch == lab.Switches[0].Name && h.Port == in {
			host = h
		}
	}
	dmac, _ := net.ParseMAC(comp.Plan.HostMAC(dst).String())
	smac, _ := net.ParseMAC(host.MAC)
	sw, mgmt := lab.Switches[0].Name, lab.Switches[0].Mgmt
	// The alternative of the host's port, as the switch counts it.
	altPackets := func() uint64 {
		flows, err := ovs.DumpFlows(context.Background(), mgmt)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range flows {
			if f.Cookie == controller.KindAlternative.Cookie() && f.Match == fmt.Sprintf("in_port=%d", in) {
				return f.Packets
			}
		}
		return 0
	}
	altBefore := altPackets()
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() {
		sent <- sendFrames(ctx, host.NetNS, host.Iface, dmac, smac, 10000, time.Millisecond)
	}()
	// ovs-ofctl is a process per look: ask only once a pause happened.
	diverted := waitUntil(10*time.Second, func() bool {
		return m.Counters().PauseEvents > 0 && altPackets() > altBefore
	})
	cancel()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if !diverted {
		t.Fatalf("no frame took the alternative (port %d); counters %+v", alt.Out[0], m.Counters())
	}
	// The queue may refill after the first resume while frames are still
	// on their way: wait until it has drained for good.
	waitUntil(10*time.Second, func() bool { return m.Counters().ResumeEvents > 0 && m.Mask(sw) == 0 })
	stop()
	c := m.Counters()
	// The port's own pause: an upstream one (from the switch its frames
	// go to) carries no backlog.
	var paused, resumed *Event
	for _, e := range m.Events() {
		if e.Switch == sw && e.Port == int(def.Cond) {
			if e.Paused && e.From == "" && paused == nil {
				paused = &e
			} else if !e.Paused && paused != nil && resumed == nil {
				resumed = &e
			}
		}
	}
	if paused == nil || resumed == nil || !paused.Flip || paused.Backlog <= m.xoff {
		t.Fatalf("port %d of %s: pause %+v resume %+v; counters %+v", def.Cond, sw, paused, resumed, c)
	}
	if m.Paused(sw, int(def.Cond)) || m.Mask(sw) != 0 {
		t.Fatal("port still paused after the queue drained")
	}
	t.Logf("paused at backlog %d B (qlen %d), resumed after %v; %d frames diverted; %d polls, %v per namespace dump",
		paused.Backlog, paused.QLen, resumed.Time.Sub(paused.Time), altPackets()-altBefore, c.Polls, c.PollTime/time.Duration(max(c.Polls, 1)))
}

// waitUntil polls cond every 10 ms until it holds or timeout passes, and
// reports whether it held: tests wait on counters, never for a guessed
// time.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// quiet reports whether every port of every switch has resumed and every
// flip's reaction has been recorded: stopping the monitor then cancels no
// prober, which would count its flip as unmeasured.
func quiet(m *Monitor) bool {
	for name := range m.switches {
		if m.Mask(name) != 0 {
			return false
		}
	}
	flips := 0
	for _, e := range m.Events() {
		if e.Flip {
			flips++
		}
	}
	_, n := m.Reactions(0)
	return n == uint64(flips)
}

// sendFrames writes up to n full-size probe frames from src to dst on a
// host's interface, gap apart (0: back to back), until ctx ends.
func sendFrames(ctx context.Context, ns, ifname string, dst, src net.HardwareAddr, n int, gap time.Duration) error {
	s, err := packet.OpenEtherTypes(ns, ifname, 0, ethertype.Traffic)
	if err != nil {
		return err
	}
	defer s.Close()
	// Traffic frames (EFTR), as the engine sends them: the reaction taps
	// read their send time.
	f := make([]byte, 1514)
	h := traffic.Header{Seq: 0}
	copy(h.Dst[:], dst)
	copy(h.Src[:], src)
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		h.Seq, h.SendNs = uint64(i), uint64(monoNow())
		if err := traffic.Encode(f, &h); err != nil {
			return err
		}
		if err := s.Send(f); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		if gap > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i+1) * gap)))
		}
	}
	return nil
}

// newMonitor watches lab with XOFF/XON at a half and an eighth of a
// 2 Mbit/s link's tbf queue; it is closed when the test ends.
func newMonitor(t *testing.T, lab *fabric.Lab, portOnly bool) *Monitor {
	t.Helper()
	_, limit := kernel.TBFParams(2_000_000)
	m, err := New(lab, Options{
		XOff:     scenario.Threshold{Value: int64(limit) / 2, Unit: scenario.Bytes},
		XOn:      scenario.Threshold{Value: int64(limit) / 8, Unit: scenario.Bytes},
		PortOnly: portOnly,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// runMonitor runs m in the background; stop ends it and fails the test if
// Run failed.
func runMonitor(t *testing.T, m *Monitor) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
