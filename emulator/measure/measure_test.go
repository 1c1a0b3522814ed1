package measure

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/fabric/fabrictest"
	"github.com/ethfab/ethfab/results"
)

func TestThin(t *testing.T) {
	if got := thin([]int{0, 1, 2, 3, 4}); len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 4 {
		t.Errorf("thin = %v", got)
	}
}

// Every rule kind the controller has gets a counter slot: a kind beyond
// kindSlots would go uncounted in rule_packets.
func TestEveryKindHasASlot(t *testing.T) {
	if n := len(controller.Kinds()); n > kindSlots || numKinds != n {
		t.Errorf("controller has %d rule kinds, the sampler counts %d (kindSlots %d)", n, numKinds, kindSlots)
	}
}

func TestShapingRate(t *testing.T) {
	for desc, want := range map[string]float64{
		"rate 50mbit delay 1ms": 50e6,
		"rate 1500Mbit":         1.5e9, // as tc prints it
		"rate 1.5gbit":          1.5e9, // as ethfab once wrote it into lab.json
		"rate 1000001bit":       1000001,
	} {
		if r := shapingRate(desc); r != want {
			t.Errorf("shapingRate(%q) = %g, want %g", desc, r, want)
		}
	}
	if r := shapingRate("none"); r != 0 {
		t.Errorf("rate of no shaping = %g", r)
	}
}

// A small valiant-routed Dragonfly: raw frames between all pairs show up in
// the switches' own counters — routing rules for frames inside a group,
// valiant rules at injection for frames to other groups — and in the port
// counters of the host ports.
func TestSamplerOnLab(t *testing.T) {
	for _, dp := range []string{"auto", "ebpf"} {
		t.Run(dp, func(t *testing.T) { testSamplerOnLab(t, "hres-"+dp, dp) })
	}
}

func testSamplerOnLab(t *testing.T, name, dp string) {
	ctx := context.Background()
	lab, s := startedSamplerOn(t, name, "valiant", dp)
	ping, err := fabric.Ping(ctx, lab, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	r, err := s.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ping: %d/%d pairs; rules %v; injected %d, non-minimal %d (share %.3f); drops %+v; cpu %.2f; %d samples, mean %v, interval %v",
		ping.Reached, ping.Pairs, r.RulePackets, r.InjectedFrames, r.NonminimalFrames, r.NonminimalShare, r.Drops, r.CPUBusy,
		r.Samples, r.MeanSampleTime, r.Interval)
	t.Logf("link ends with a rate but no tbf: %d of %d", len(r.Unshaped), len(r.Links))
	if ping.Reached == 0 {
		t.Fatal("no probe arrived")
	}
	if r.RulePackets["routing"] == 0 {
		t.Error("routing rules matched no frame")
	}
	if r.RulePackets["valiant"] == 0 {
		t.Error("valiant rules matched no frame in valiant mode")
	}
	// DF(1,2,1): 6 hosts, 2 per group; of 30 ordered pairs 24 cross groups
	// and go non-minimally, 6 stay in the group and go minimally.
	if r.NonminimalShare < 0.7 || r.NonminimalShare > 0.9 {
		t.Errorf("non-minimal share %.3f, want about 24/30", r.NonminimalShare)
	}
	var hostRx uint64
	for _, p := range r.Ports {
		if p.Host {
			hostRx += p.RxPackets
		}
	}
	if hostRx < uint64(ping.Reached) {
		t.Errorf("host ports received %d frames, fewer than the %d probes that arrived", hostRx, ping.Reached)
	}
	if len(r.PerSwitch) != len(lab.Switches) {
		t.Errorf("%d switches in per-switch injection, want %d", len(r.PerSwitch), len(lab.Switches))
	}
	for _, sw := range r.PerSwitch {
		if sw.Group < 0 || sw.Bytes == 0 {
			t.Errorf("switch %s: group %d, %d bytes injected", sw.Switch, sw.Group, sw.Bytes)
		}
	}
	if r.Samples == 0 {
		t.Error("no backlog sample taken")
	}
	// Every probe crossed at least one switch, counted at its egress queue.
	if r.SwitchHopFPS*r.Duration.Seconds() < float64(ping.Reached) {
		t.Errorf("switch hops %.0f/s over %v: fewer than the %d probes that arrived", r.SwitchHopFPS, r.Duration, ping.Reached)
	}
	if want := "vswitchd 0"; r.CPU == nil || (lab.BPF == nil && r.CPU.Busiest.Process != want) || (lab.BPF != nil && r.CPU.Vswitchd != 0) || r.CPU.Ethfab <= 0 {
		t.Errorf("CPU split %+v: want the busiest thread of vswitchd 0 (none on the eBPF datapath) and this process's time", r.CPU)
	} else {
		t.Logf("cpu: busiest %s %s %.3f, vswitchd %.3f, ethfab %.3f, softirq %.3f", r.CPU.Busiest.Process, r.CPU.Busiest.Thread,
			r.CPU.Busiest.Cores, r.CPU.Vswitchd, r.CPU.Ethfab, r.CPU.Softirq)
	}
	if len(r.Links) == 0 || r.Links[0].RateBps == 0 {
		t.Errorf("link ends without their configured rate: %+v", r.Links)
	}
	checkTimeline(t, r, lab.BPF != nil)
	// A second phase on the same sampler starts from fresh counters.
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r2, err := s.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r2.RulePackets["valiant"] >= r.RulePackets["valiant"] {
		t.Errorf("idle second phase counted %d valiant frames (first %d)", r2.RulePackets["valiant"], r.RulePackets["valiant"])
	}
}

// checkTimeline: bins in order, every series as long as the bins, what
// the bins say the fabric delivered within what the host-facing queues
// sent over the point, and (eBPF) the probes' non-minimal routing seen in
// some bin.
func checkTimeline(t *testing.T, r *Report, nonmin bool) {
	t.Helper()
	tl := r.Timeline
	if tl == nil || len(tl.T) == 0 {
		t.Fatalf("no timeline bin over %v", r.Duration)
	}
	n := len(tl.T)
	if len(tl.AcceptedLoad) != n || len(tl.MeanBacklogBytes) != n || (nonmin && (len(tl.NonminimalShare) != n || len(tl.InjectedFrames) != n)) || (!nonmin && tl.NonminimalShare != nil) {
		t.Fatalf("timeline series lengths: t %d, accepted %d, backlog %d, non-minimal %d", n, len(tl.AcceptedLoad), len(tl.MeanBacklogBytes), len(tl.NonminimalShare))
	}
	var sent float64
	for _, p := range r.Ports {
		if p.Host {
			sent += float64(p.TxBytes)
		}
	}
	const hostRate = 6 * 50e6 // DF(1,2,1): 6 hosts at 50 Mbit/s
	var binned, prev, most float64
	for i, end := range tl.T {
		if end <= prev {
			t.Fatalf("bin %d ends at %.3f s, after %.3f", i, end, prev)
		}
		binned += tl.AcceptedLoad[i] * (end - prev) * hostRate / 8
		prev = end
		if nonmin {
			most = max(most, tl.NonminimalShare[i])
		}
	}
	t.Logf("timeline: %d bins to %.3f s; delivered %.0f bytes in bins, %.0f over the point; largest non-minimal share %.2f", n, prev, binned, sent, most)
	if binned <= 0 || binned > sent*1.01+1 {
		t.Errorf("bins delivered %.0f bytes, the host ports sent %.0f", binned, sent)
	}
	if nonmin && most == 0 {
		t.Error("no bin saw the probes routed non-minimally")
	}
	var inj uint64
	for _, n := range tl.InjectedFrames {
		inj += n
	}
	if inj > r.InjectedFrames {
		t.Errorf("bins injected %d frames, the point %d", inj, r.InjectedFrames)
	}
}

// A link deleted while a point runs is reported as gone, not as a link
// end without its shaping queue.
func TestSamplerDeletedLink(t *testing.T) {
	ctx := context.Background()
	lab, s := startedSampler(t, "hres-del", "minimal")
	var victim fabric.Link
	for _, l := range lab.Links {
		if l.Class != "host" {
			victim = l
			break
		}
	}
	if out, err := exec.Command("ip", "-n", victim.A.NetNS, "link", "del", victim.A.Iface).CombinedOutput(); err != nil {
		t.Fatalf("ip link del: %v: %s", err, out)
	}
	r, err := s.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Deleting one end of a veth pair deletes both: the link's two
	// directions are gone.
	if len(r.Missing) != 2 || !strings.Contains(r.Missing[0], victim.A.Node) || !strings.Contains(r.Missing[1], victim.A.Node) {
		t.Errorf("missing %v, want both directions of the deleted link of %s", r.Missing, victim.A.Node)
	}
	if len(r.Unshaped) != 0 {
		t.Errorf("deleted link reported as unshaped: %v", r.Unshaped)
	}
	in := r.FidelityInput(results.Point{Name: "p", Load: 0.1, Sent: 10})
	if f := results.EvaluateFidelity([]results.FidelityInput{in}); f.OK || !strings.Contains(strings.Join(f.Reasons, " "), "disappeared") {
		t.Errorf("verdict %+v", f)
	}
}

// startedSampler brings up DF(1,2,1) (6 hosts) routed by mode, removed
// when t ends, and starts a sampler on it, closed when t ends.
func startedSampler(t *testing.T, name, mode string) (*fabric.Lab, *Sampler) {
	t.Helper()
	return startedSamplerOn(t, name, mode, "auto")
}

// startedSamplerOn is startedSampler on a datapath (scenario ovs.datapath).
func startedSamplerOn(t *testing.T, name, mode, dp string) (*fabric.Lab, *Sampler) {
	t.Helper()
	lab := fabrictest.UpYAML(t, name, "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"+
		"links: {host: {rate: 50mbit}}\nrouting: {mode: "+mode+"}\novs: {datapath: "+dp+"}\n")
	ctx := context.Background()
	s, err := New(lab, Options{Interval: 5 * time.Millisecond, Bin: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return lab, s
}
