package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/traffic"
	"github.com/ethfab/ethfab/vlan"
)

const full = `version: 1
name: df-small
description: free text
topology: {kind: dragonfly, p: 2, a: 4, h: 2}
addressing: {scheme: per-group, compact: true, assign: dmp}
routing: {mode: conditional, xoff: 30kb, xon: 10kb, pause: port}
links:
  host:   {rate: 100mbit}
  local:  {rate: 50mbit, delay: 40us}
  global: {rate: 1gbit, delay: {value: 400us, required: false}, loss: 0.1%, jitter: 5us}
ovs: {datapath: netdev, allocator: mimalloc, flow_cache: off, ports: pmd, realtime: off}
phases:
  - name: boot
    dmp: true
  - name: announce
    announce: {count: 8, interval: 1s, peer_mac_from: header, connect: true}
  - name: settle
    wait: 2s
  - name: un
    traffic: {pattern: uniform, loads: [0.1, 0.3, 0.5], frame: 1000, duration: 4s, seed: 7}
    expect: ["accepted >= 0.95 * offered", "loss == 0", "p99_latency < 5ms"]
  - name: adv
    traffic: {pattern: adv+2, loads: 0.4}
  - name: npb
    traffic: {pattern: npb-like, app: cg, loads: [1]}
`

func TestParseFull(t *testing.T) {
	s, err := Parse("full.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if want := (topology.Spec{Kind: topology.Dragonfly, P: 2, A: 4, H: 2, G: 9}); s.Topology.String() != want.String() {
		t.Errorf("topology %v, want %v", s.Topology, want)
	}
	if s.Addressing != (Addressing{Scheme: addressing.PerGroup, Compact: true, Assign: addressing.AssignDMP, SourceGuard: true}) {
		t.Errorf("addressing %+v", s.Addressing)
	}
	if s.Routing != (Routing{Mode: controller.Conditional, XOff: Threshold{30 << 10, Bytes}, XOn: Threshold{10 << 10, Bytes}, Pause: PausePort}) {
		t.Errorf("routing %+v", s.Routing)
	}
	if got := s.Links[LocalLinks]; got != (LinkSpec{Rate: 50e6, Delay: Impairment[time.Duration]{40 * time.Microsecond, true}}) {
		t.Errorf("local links %+v", got)
	}
	wantGlobal := LinkSpec{
		Rate:   1e9,
		Delay:  Impairment[time.Duration]{400 * time.Microsecond, false},
		Jitter: Impairment[time.Duration]{5 * time.Microsecond, true},
		Loss:   Impairment[float64]{0.1, true},
	}
	if got := s.Links[GlobalLinks]; got != wantGlobal {
		t.Errorf("global links %+v, want %+v", got, wantGlobal)
	}
	if s.OVS.Datapath != DatapathNetdev || s.OVS.Allocator != "mimalloc" || s.OVS.FlowCache != FlowCacheOff || s.OVS.Ports != PortsPMD || s.OVS.Realtime != RealtimeOff {
		t.Errorf("ovs %+v", s.OVS)
	}
	if len(s.Phases) != 6 {
		t.Fatalf("%d phases, want 6", len(s.Phases))
	}
	if a := s.Phases[1].Announce; *a != (Announce{Count: 8, Interval: time.Second, Repeat: DefaultAnnounceRepeat, PeerMACFrom: addressing.FromHeader, Connect: true,
		OnAddressChange: addressing.ChangeNewRound, For: DefaultAnnounceFor, Until: true}) {
		t.Errorf("announce %+v", a)
	}
	if s.Phases[2].Kind != PhaseWait || s.Phases[2].Wait != 2*time.Second {
		t.Errorf("wait phase %+v", s.Phases[2])
	}
	tr := s.Phases[3].Traffic
	if tr.Pattern != traffic.Uniform || len(tr.Loads) != 3 || tr.Loads[2] != 0.5 || tr.Frame != 1000 || tr.Duration != 4*time.Second || tr.Seed != 7 {
		t.Errorf("traffic %+v", tr)
	}
	ex := s.Phases[3].Expect
	if len(ex) != 3 {
		t.Fatalf("expectations %+v", ex)
	}
	if ex[0].Metric != Accepted || ex[0].Op != GreaterEqual || ex[0].Value != 0.95 || ex[0].Of != Offered {
		t.Errorf("expect[0] %+v", ex[0])
	}
	if ex[2].Metric != P99Latency || ex[2].Op != Less || ex[2].Value != 0.005 || ex[2].Of != "" {
		t.Errorf("expect[2] %+v", ex[2])
	}
	if !ex[2].Holds(0.004, 0) || ex[2].Holds(0.005, 0) || !ex[0].Holds(0.96, 1) || ex[0].Holds(0.9, 1) {
		t.Errorf("Holds disagrees with the expectations")
	}
	adv := s.Phases[4].Traffic
	if adv.Pattern != traffic.Adversarial || adv.AdvOffset != 2 || adv.PatternString() != "adv+2" || len(adv.Loads) != 1 || adv.Loads[0] != 0.4 {
		t.Errorf("adv traffic %+v", adv)
	}
	if adv.Frame != DefaultFrame || adv.Duration != DefaultDuration || adv.Seed != DefaultSeed {
		t.Errorf("traffic defaults not applied: %+v", adv)
	}
	if npb := s.Phases[5].Traffic; npb.App != "CG" {
		t.Errorf("npb app %q, want CG", npb.App)
	}
	roundTrip(t, s)
}

func TestDefaults(t *testing.T) {
	s, err := Parse("min.yaml", []byte("name: x\ntopology: {kind: flatfly, dims: 4x4, t: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 1 || s.Addressing != (Addressing{Scheme: addressing.PerGroup, Assign: addressing.AssignStatic, SourceGuard: true}) ||
		s.Routing != (Routing{Mode: controller.Minimal}) || s.OVS.Datapath != DatapathAuto || len(s.Phases) != 0 {
		t.Errorf("defaults not applied: %+v", s)
	}
	if len(s.Links) != 2 || s.Links[HostLinks] != (LinkSpec{Rate: DefaultRate}) || s.Links[LocalLinks] != (LinkSpec{Rate: DefaultRate}) {
		t.Errorf("links %+v, want host and local at 100mbit only", s.Links)
	}
	if len(s.Topology.Dims) != 2 || s.Topology.Dims[1] != 4 {
		t.Errorf("dims %v", s.Topology.Dims)
	}
	roundTrip(t, s)

	// Omitted classes inherit host's settings, impairments included.
	s, err = Parse("inh.yaml", []byte("name: x\ntopology: {kind: clos, k: 4}\nlinks:\n  host: {rate: 1gbit, delay: 1ms}\n  global: {rate: 10mbit}\n"))
	if err != nil {
		t.Fatal(err)
	}
	host := LinkSpec{Rate: 1e9, Delay: Impairment[time.Duration]{time.Millisecond, true}}
	if s.Links[LocalLinks] != host || s.Links[GlobalLinks] != (LinkSpec{Rate: 10e6}) {
		t.Errorf("links %+v", s.Links)
	}
	roundTrip(t, s)

	// A queue limit in tc's sizes (k = 1024), kept through the
	// effective scenario.
	s, err = Parse("lim.yaml", []byte("name: x\ntopology: {kind: clos, k: 4}\nlinks:\n  host: {rate: 1gbit}\n  local: {rate: 10mbit, limit: 64KB}\n  global: {rate: 10mbit, limit: 1.5mb}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Links[LocalLinks].Limit != 64<<10 || s.Links[GlobalLinks].Limit != 3<<19 || s.Links[HostLinks].Limit != 0 {
		t.Errorf("limits %+v", s.Links)
	}
	roundTrip(t, s)

	// routing.qcn: every default with mode qcn-switch alone; given
	// fields kept through the effective scenario.
	s, err = Parse("q.yaml", []byte("name: x\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2}\nrouting: {mode: qcn-switch}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Routing.QCN == nil || *s.Routing.QCN != DefaultQCN() {
		t.Errorf("qcn defaults %+v", s.Routing.QCN)
	}
	roundTrip(t, s)
	s, err = Parse("q.yaml", []byte("name: x\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2}\nrouting:\n  mode: qcn-switch\n  qcn: {variant: complete, qeq: 8kb, w: 1.5, sample_every: 50, qold: cnm, lf: 0.01, ai: 2, pcl: 200, p_min: 1, cnm_probability: 0.1, cnm_priority: false, realise: metadata, refresh: 2ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := QCN{Variant: QCNComplete, Qeq: 8 << 10, W: 1.5, SampleEvery: 50, Qold: QoldCNM, Lf: 0.01, Ai: 2, PCl: 200, PMin: 1,
		CNMProbability: 0.1, Realise: RealiseMeta, Refresh: 2 * time.Millisecond}
	if *s.Routing.QCN != want {
		t.Errorf("qcn %+v, want %+v", *s.Routing.QCN, want)
	}
	roundTrip(t, s)
	// refresh: auto is the default, left to the datapath.
	s, err = Parse("q.yaml", []byte("name: x\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2}\nrouting:\n  mode: qcn-switch\n  qcn: {refresh: auto}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Routing.QCN.Refresh != 0 || DefaultQCN().Refresh != 0 {
		t.Errorf("refresh auto read as %v (default %v), want 0", s.Routing.QCN.Refresh, DefaultQCN().Refresh)
	}
	if b, err := s.MarshalYAML(); err != nil || !strings.Contains(string(b), "refresh: auto") {
		t.Errorf("effective scenario (%v) does not say refresh: auto:\n%s", err, b)
	}
	roundTrip(t, s)

	// Seed 003's reaction points count bytes unless told to run on time.
	s, err = Parse("q.yaml", []byte("name: x\ntopology: {kind: xgft, h: 2, m: [2, 2], w: [1, 2]}\naddressing: {scheme: flat}\novs: {datapath: ebpf}\nrouting:\n  mode: snoop-ar\n  qcn: {rp: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Routing.QCN.RPIncrease != RPBytes {
		t.Errorf("rp_increase defaults to %q, want bytes", s.Routing.QCN.RPIncrease)
	}
	roundTrip(t, s)
	s, err = Parse("q.yaml", []byte("name: x\ntopology: {kind: xgft, h: 2, m: [2, 2], w: [1, 2]}\naddressing: {scheme: flat}\nrouting:\n  mode: shortest\n  qcn: {rp: true, rp_increase: time}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Routing.QCN.RPIncrease != RPTime || !s.Routing.Notifies() {
		t.Errorf("rp_increase %q, notifies %v: want time, true", s.Routing.QCN.RPIncrease, s.Routing.Notifies())
	}
	roundTrip(t, s)
}

// TestErrors pins the exact position and path of each error: an editor
// jumps to them, so they must be right.
func TestErrors(t *testing.T) {
	const head = "name: x\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"
	cases := []struct {
		name, doc string
		line, col int
		path      string
		msg       string
	}{
		{"topology h zero", "name: x\ntopology:\n  kind: dragonfly\n  p: 2\n  a: 4\n  h: 0\n", 6, 6, "topology.h", "must be at least 1"},
		{"topology g too big", "name: x\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 10}\n", 2, 50, "topology.g", "between 2 and a*h+1 = 9"},
		{"topology missing p", "name: x\ntopology: {kind: dragonfly, a: 4, h: 2}\n", 2, 11, "topology.p", "must be at least 1"},
		{"topology unknown param", "name: x\ntopology: {kind: clos, k: 4, p: 2}\n", 2, 30, "topology.p", `unknown field "p" (want kind, k, levels, pods)`},
		{"topology bad kind", "name: x\ntopology: {kind: hypercube}\n", 2, 18, "topology.kind", `unknown value "hypercube"`},
		{"mesh without dims", "name: x\ntopology: {kind: torus}\n", 2, 11, "topology.dims", "needs at least one dimension"},
		{"mesh routed valiant", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: valiant}\n", 3, 17, "routing.mode", "a mesh is routed on shortest paths"},
		{"xgft routed valiant", "name: x\ntopology: {kind: xgft, h: 2, m: [2, 2], w: [1, 2]}\nrouting: {mode: valiant}\n", 3, 17, "routing.mode", "a xgft is routed on shortest paths (minimal or shortest)"},
		{"xgft routed vlan", "name: x\ntopology: {kind: xgft, h: 2, m: [2, 2], w: [1, 2]}\nrouting: {mode: vlan}\n", 3, 17, "routing.mode", "routed on shortest paths"},
		{"xgft multi-homed", "name: x\ntopology: {kind: xgft, h: 2, m: [2, 2], w: [2, 2]}\n", 2, 44, "topology.w", "so w1 must be 1"},
		{"xgft short m", "name: x\ntopology: {kind: xgft, h: 2, m: [2], w: [1, 2]}\n", 2, 33, "topology.m", "needs h = 2 values"},
		{"custom unknown link end", "name: x\ntopology:\n  kind: custom\n  switches: [A, B]\n  links: [[A, B], [B, Q]]\n  hosts: {A: 1, B: 1}\n", 5, 19, "topology.links[1]", "no switch Q"},
		{"custom link not a pair", "name: x\ntopology:\n  kind: custom\n  switches: [A, B]\n  links: [[A, B, C]]\n  hosts: {A: 1, B: 1}\n", 5, 11, "topology.links[0]", "must be a pair of switch names"},
		{"custom switch twice", "name: x\ntopology:\n  kind: custom\n  switches: [A, B, A]\n  links: [[A, B]]\n  hosts: {A: 1}\n", 4, 20, "topology.switches[2]", "listed twice"},
		{"custom bad name", "name: x\ntopology:\n  kind: custom\n  switches: [A, b-1]\n  links: [[A, b-1]]\n  hosts: {A: 1}\n", 4, 17, "topology.switches[1]", "is not a switch name"},
		{"custom hosts unknown", "name: x\ntopology:\n  kind: custom\n  switches: [A, B]\n  links: [[A, B]]\n  hosts: {A: 1, Z: 2}\n", 6, 17, "topology.hosts.Z", "no switch Z"},
		{"custom hosts negative", "name: x\ntopology:\n  kind: custom\n  switches: [A, B]\n  links: [[A, B]]\n  hosts: {A: 1, B: -2}\n", 6, 20, "topology.hosts.B", "-2 hosts"},
		{"custom disconnected", "name: x\ntopology:\n  kind: custom\n  switches: [A, B]\n  hosts: {A: 1}\n", 3, 3, "topology.links", "not connected"},
		{"custom no hosts", "name: x\ntopology:\n  kind: custom\n  switches: [A]\n", 3, 3, "topology.hosts", "no switch has a host"},
		{"vlan on a dragonfly", "name: x\ntopology: {kind: dragonfly, p: 1, a: 2, h: 1}\nrouting: {mode: vlan}\n", 3, 17, "routing.mode", "vlan needs one of seed 002's topologies"},
		{"vlan learning renamed", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {macs: learn}}\n", 3, 36, "routing.vlan.macs", "learn needs assign: fixed"},
		{"vlan lines on a mesh", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {torus: lines}}\n", 3, 37, "routing.vlan.torus", "lines is for tori with two links"},
		{"vlan lines one link", "name: x\ntopology: {kind: torus, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {torus: lines}}\n", 3, 37, "routing.vlan.torus", "lines is for tori with two links"},
		{"vlan torus unknown", "name: x\ntopology: {kind: torus, dims: [3, 3], links: 2}\nrouting: {mode: vlan, vlan: {torus: ring}}\n", 3, 37, "routing.vlan.torus", "ring"},
		{"warmup zero", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [0.1], warmup: 0s}\n", 5, 55, "phases[0].traffic.warmup", "must be positive"},
		{"vlan tagged unknown", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {tagged_hosts: [s0-0h0, s9h0]}}\n", 3, 53, "routing.vlan.tagged_hosts[1]", `has no host "s9h0"`},
		{"vlan tagged twice", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {tagged_hosts: [s0-0h0, s0-0h0]}}\n", 3, 53, "routing.vlan.tagged_hosts[1]", "listed twice"},
		{"vlan tagged scalar", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {tagged_hosts: s0-0h0}}\n", 3, 44, "routing.vlan.tagged_hosts", "must be a list of host names"},
		{"vlan aging static", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {assign: fixed, aging: 10s}}\n", 3, 45, "routing.vlan.aging", "only applies to macs: learn"},
		{"vlan aging fraction", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {assign: fixed, macs: learn, aging: 1500ms}}\n", 3, 65, "routing.vlan.aging", "whole seconds"},
		{"vlan learning on ebpf", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting:\n  mode: vlan\n  vlan: {assign: fixed, macs: learn}\novs: {datapath: ebpf}\n", 5, 31, "routing.vlan.macs", "the eBPF datapath has static registration only"},
		{"vlan section off vlan", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: minimal, vlan: {assign: fixed}}\n", 3, 32, "routing.vlan", "only applies to mode: vlan"},
		{"link event between non-neighbours", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s2], op: off}\n      - {at: 2s, link: [s0, s2], op: on}\n", 7, 24, "phases[0].link_events[0].link", "no link between s0 and s2"},
		{"link event left off", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: off}\n", 7, 7, "phases[0].link_events", "is left off"},
		{"link event safe without vlan", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: off, order: safe}\n      - {at: 2s, link: [s0, s1], op: on}\n", 7, 50, "phases[0].link_events[0].order", "the safe order moves VLAN paths"},
		{"link event past the load", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 6s, link: [s0, s1], op: off}\n      - {at: 7s, link: [s0, s1], op: on}\n", 7, 14, "phases[0].link_events[0].at", "within the load's 5s"},
		{"probes on a wait phase", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: w\n    wait: 1s\n    probes: true\n", 6, 5, "phases[0].probes", "only traffic phases have probes"},
		{"probes too often", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    probes: {interval: 5ms}\n", 6, 24, "phases[0].probes.interval", "at least 10ms"},
		{"probes to an unknown host", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    probes: {pairs: [[s0h0, s9h0]]}\n", 6, 29, "phases[0].probes.pairs[0][1]", "no host \"s9h0\""},
		{"probes too many", "name: x\ntopology: {kind: dragonfly, p: 4, a: 8, h: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    probes: true\n", 6, 13, "phases[0].probes", "probes a second"},
		{"link event negative hold", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: off}\n      - {at: 2s, link: [s0, s1], op: on, hold: -1s}\n", 8, 48, "phases[0].link_events[1].hold", "must not be negative"},
		{"link rate without a rate", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: rate}\n", 7, 9, "phases[0].link_events[0].rate", "required with op: rate"},
		{"link rate while off", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: off}\n      - {at: 2s, link: [s0, s1], op: rate, rate: 10mbit}\n      - {at: 3s, link: [s0, s1], op: on}\n", 8, 38, "phases[0].link_events[1].op", "turn it on before changing its rate"},
		{"link rate left", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: rate, rate: 10mbit}\n", 7, 7, "phases[0].link_events", "left at another rate"},
		{"link rate with an order", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: rate, rate: 10mbit, order: unsafe}\n      - {at: 2s, link: [s0, s1], op: rate, rate: 100mbit}\n", 7, 65, "phases[0].link_events[0].order", "order applies to off and on"},
		{"link rate off the paper's speeds", "name: x\ntopology: {kind: ring, n: 4}\nswitch_profile: PC5324\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: rate, rate: 30mbit}\n      - {at: 2s, link: [s0, s1], op: rate, rate: 100mbit}\n", 8, 9, "phases[0].link_events[0]", "Table 6 times are for 1G, 100M and 10M"},
		{"unknown switch profile", "name: x\ntopology: {kind: ring, n: 4}\nswitch_profile: PC9\n", 3, 17, "switch_profile", "unknown switch profile"},
		{"expectation naming no phase", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    expect: [\"p50_latency <= 1.01 * u.p50_latency\"]\n", 6, 14, "phases[0].expect[0]", "no phase \"u\" to compare with"},
		{"expectation naming a wait", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: w\n    wait: 1s\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    expect: [\"p50_latency <= 1.01 * w.p50_latency\"]\n", 8, 14, "phases[1].expect[0]", "not a traffic phase"},
		{"link event unknown profile", "name: x\ntopology: {kind: ring, n: 4}\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 5s}\n    link_events:\n      - {at: 1s, link: [s0, s1], op: off}\n      - {at: 2s, link: [s0, s1], op: on, profile: PC1}\n", 8, 51, "phases[0].link_events[1].profile", "unknown switch profile"},
		{"mesh per group", "name: x\ntopology: {kind: mesh, dims: [3, 3]}\naddressing: {scheme: per-group}\n", 3, 22, "addressing.scheme", "per-group needs groups"},
		{"topology clos odd k", "name: x\ntopology: {kind: clos, k: 5}\n", 2, 27, "topology.k", "even and at least 4"},
		{"topology flatfly dim", "name: x\ntopology:\n  kind: flatfly\n  dims: [4, 1]\n  t: 2\n", 4, 9, "topology.dims", "dimension 2 has size 1"},
		{"topology not int", "name: x\ntopology: {kind: dragonfly, p: two, a: 4, h: 2}\n", 2, 32, "topology.p", `must be an integer, got "two"`},
		{"topology missing", "name: x\n", 1, 1, "topology", "required"},
		{"name missing", "topology: {kind: clos, k: 4}\n", 1, 1, "name", "required"},
		{"name too long", "name: abcdefghijklm\ntopology: {kind: clos, k: 4}\n", 1, 7, "name", "at most 12"},
		{"name bad", "name: Df_1\ntopology: {kind: clos, k: 4}\n", 1, 7, "name", "not a lab name"},
		{"unknown top field", head + "rooting: {mode: minimal}\n", 3, 1, "rooting", `unknown field "rooting"`},
		{"version 2", "version: 2\n" + head, 1, 10, "version", "unsupported version 2"},
		{"bad scheme", head + "addressing: {scheme: per-pod}\n", 3, 22, "addressing.scheme", `unknown value "per-pod" (want flat, per-switch, per-group)`},
		{"compact not bool", head + "addressing:\n  compact: maybe\n", 4, 12, "addressing.compact", "true or false"},
		{"source guard not bool", head + "addressing: {source_guard: off}\n", 3, 28, "addressing.source_guard", "true or false"},
		{"announce before dmp guarded", head + "addressing: {assign: dmp}\nphases:\n  - name: a\n    announce: {before_dmp: true}\n", 6, 28, "phases[0].announce.before_dmp", "needs addressing.source_guard: false"},
		{"bad mode", head + "routing: {mode: ugal}\n", 3, 17, "routing.mode", `unknown value "ugal"`},
		{"xoff without conditional", head + "routing: {mode: minimal, xoff: 20}\n", 3, 32, "routing.xoff", "only applies to mode: conditional"},
		{"xon above xoff", head + "routing: {mode: conditional, xoff: 20, xon: 30}\n", 3, 45, "routing.xon", "must be below xoff"},
		{"xon unit mismatch", head + "routing: {mode: conditional, xoff: 20, xon: 3kb}\n", 3, 45, "routing.xon", "use one unit"},
		{"bad threshold", head + "routing: {mode: conditional, xoff: 20frames}\n", 3, 36, "routing.xoff", "unknown size unit"},
		{"bad pause", head + "routing: {mode: conditional, pause: both}\n", 3, 37, "routing.pause", "upstream"},
		{"qcn variant", head + "routing:\n  mode: qcn-switch\n  qcn:\n    variant: fast\n", 6, 14, "routing.qcn.variant", `unknown value "fast" (want base, source, comparison, complete)`},
		{"qcn lf", head + "routing:\n  mode: qcn-switch\n  qcn:\n    lf: 0.5\n", 6, 9, "routing.qcn.lf", "out of range (want between 0 and 1/63"},
		{"qcn pcl", head + "routing:\n  mode: qcn-switch\n  qcn:\n    pcl: 0\n", 6, 10, "routing.qcn.pcl", "out of range"},
		{"qcn qeq", head + "routing:\n  mode: qcn-switch\n  qcn:\n    qeq: 16\n", 6, 10, "routing.qcn.qeq", "want bytes with a unit"},
		{"qcn priority on ovs", head + "routing:\n  mode: qcn-switch\n  qcn:\n    cnm_priority: true\n", 6, 19, "routing.qcn.cnm_priority", "eBPF datapath only"},
		{"qcn rp_increase", "name: x\ntopology: {kind: xgft, h: 2, m: [2, 2], w: [1, 2]}\naddressing: {scheme: flat}\nrouting:\n  mode: shortest\n  qcn: {rp: true, rp_increase: timer}\n", 6, 32, "routing.qcn.rp_increase", `unknown value "timer" (want bytes, time)`},
		{"qcn priority not bool", head + "routing:\n  mode: qcn-switch\n  qcn:\n    cnm_priority: high\n", 6, 19, "routing.qcn.cnm_priority", "true or false"},
		{"qcn group", head + "routing:\n  mode: qcn-switch\n  qcn:\n    realise: group\n", 6, 14, "routing.qcn.realise", "group is not built"},
		{"qcn refresh", head + "routing:\n  mode: qcn-switch\n  qcn:\n    refresh: 40\n", 6, 14, "routing.qcn.refresh", "has no unit"},
		{"qcn unknown", head + "routing:\n  mode: qcn-switch\n  qcn:\n    gain: 1\n", 6, 5, "routing.qcn.gain", `unknown field "gain"`},
		{"qcn without qcn-switch", head + "routing: {mode: minimal, qcn: {w: 2}}\n", 3, 31, "routing.qcn", "only applies to mode: qcn-switch"},
		{"qcn on clos", "name: x\ntopology: {kind: clos, k: 4}\nrouting: {mode: qcn-switch}\n", 3, 17, "routing.mode", "needs a dragonfly or flatfly"},
		{"rate missing", head + "links:\n  host: {delay: 1ms}\n", 4, 9, "links.host.rate", "required"},
		{"bad rate", head + "links:\n  local: {rate: 100mbits}\n", 4, 17, "links.local.rate", "unknown unit"},
		{"bad delay", head + "links:\n  host: {rate: 1gbit, delay: 40}\n", 4, 30, "links.host.delay", "has no unit"},
		{"impairment unknown key", head + "links:\n  host: {rate: 1gbit, delay: {value: 1ms, optional: true}}\n", 4, 43, "links.host.delay.optional", "unknown field"},
		{"loss too big", head + "links:\n  host: {rate: 1gbit, loss: 120%}\n", 4, 29, "links.host.loss", "between 0% and 100%"},
		{"jitter without delay", head + "links:\n  host: {rate: 1gbit, jitter: 1ms}\n", 4, 31, "links.host.jitter", "needs a delay"},
		{"limit without unit", head + "links:\n  host: {rate: 1gbit, limit: 65536}\n", 4, 30, "links.host.limit", "want bytes with a unit"},
		{"limit too small", head + "links:\n  host: {rate: 1gbit, limit: 2kb}\n", 4, 30, "links.host.limit", "between 3028b (two full frames) and 2gb"},
		{"limit too big", head + "links:\n  host: {rate: 1gbit, limit: 3gb}\n", 4, 30, "links.host.limit", "between 3028b"},
		{"limit unit", head + "links:\n  host: {rate: 1gbit, limit: 64kbit}\n", 4, 30, "links.host.limit", "unknown size unit"},
		{"global on flatfly", "name: x\ntopology: {kind: flatfly, dims: [3, 3], t: 2}\nlinks:\n  global: {rate: 1gbit}\n", 4, 3, "links.global", "flatfly has no global links"},
		{"unknown class", head + "links:\n  core: {rate: 1gbit}\n", 4, 3, "links.core", `unknown field "core" (want host, local, global)`},
		{"datapath", head + "ovs: {datapath: kernel}\n", 3, 17, "ovs.datapath", `unknown value "kernel"`},
		{"allocator", head + "ovs: {allocator: glibc}\n", 3, 18, "ovs.allocator", `unknown value "glibc" (want auto, system, tcmalloc`},
		{"flow cache", head + "ovs: {flow_cache: false}\n", 3, 19, "ovs.flow_cache", `unknown value "false" (want auto, on, off)`},
		{"ports", head + "ovs: {ports: ring}\n", 3, 14, "ovs.ports", `unknown value "ring" (want auto, socket, pmd)`},
		{"realtime", head + "ovs: {realtime: fifo}\n", 3, 17, "ovs.realtime", `unknown value "fifo" (want auto, on, off)`},
		{"phases not list", head + "phases: {name: x}\n", 3, 9, "phases", "must be a list"},
		{"phase two kinds", head + "phases:\n  - name: a\n    dmp: true\n    wait: 1s\n", 4, 5, "phases[0]", "exactly one of dmp, announce, wait, traffic, mpi (has dmp, wait)"},
		{"phase no kind", head + "phases:\n  - name: a\n", 4, 5, "phases[0]", "(has none)"},
		{"phase no name", head + "phases:\n  - dmp: true\n", 4, 5, "phases[0].name", "required"},
		{"phase dup name", head + "phases:\n  - name: a\n    dmp: true\n  - name: a\n    wait: 1s\n", 6, 11, "phases[1].name", `duplicate phase name "a" (also phases[0])`},
		{"dmp false", head + "phases:\n  - name: a\n    dmp: false\n", 5, 10, "phases[0].dmp", "must be true"},
		{"mpi no program", head + "phases:\n  - name: a\n    mpi: {hosts: [g0s0h0]}\n", 5, 10, "phases[0].mpi.program", "required"},
		{"mpi program word", head + "phases:\n  - name: a\n    mpi: {program: hello}\n", 5, 20, "phases[0].mpi.program", "must be a list"},
		{"mpi program shell", head + "phases:\n  - name: a\n    mpi: {program: [a, \"x;rm\"]}\n", 5, 24, "phases[0].mpi.program[1]", "passes it through a shell"},
		{"mpi unknown host", head + "phases:\n  - name: a\n    mpi: {program: [a], hosts: [g9s9h9]}\n", 5, 33, "phases[0].mpi.hosts[0]", `has no host "g9s9h9"`},
		{"mpi host twice", head + "phases:\n  - name: a\n    mpi: {program: [a], hosts: [g0s0h0, g0s0h0]}\n", 5, 41, "phases[0].mpi.hosts[1]", "listed twice"},
		{"mpi np", head + "phases:\n  - name: a\n    mpi: {program: [a], hosts: [g0s0h0], np: 2}\n", 5, 46, "phases[0].mpi.np", "2 ranks do not fit 1 hosts with 1 slots each"},
		{"mpi slots", head + "phases:\n  - name: a\n    mpi: {program: [a], slots: 0}\n", 5, 32, "phases[0].mpi.slots", "between 1 and 64"},
		{"mpi timeout", head + "phases:\n  - name: a\n    mpi: {program: [a], timeout: 60}\n", 5, 34, "phases[0].mpi.timeout", "has no unit"},
		{"mpi expect", head + "phases:\n  - name: a\n    mpi: {program: [a]}\n    expect: [\"loss == 0\"]\n", 6, 5, "phases[0].expect", "only traffic phases have expectations"},
		{"wait zero", head + "phases:\n  - name: a\n    wait: 0s\n", 5, 11, "phases[0].wait", "must be positive"},
		{"announce count", head + "phases:\n  - name: a\n    announce: {count: 0}\n", 5, 23, "phases[0].announce.count", "between 1 and 1000"},
		{"announce peer", head + "phases:\n  - name: a\n    announce: {peer_mac_from: source}\n", 5, 31, "phases[0].announce.peer_mac_from", `unknown value "source"`},
		{"announce before dmp", head + "phases:\n  - name: a\n    announce: {before_dmp: true}\n", 5, 28, "phases[0].announce.before_dmp", "needs addressing.assign: dmp"},
		{"pattern typo", head + "phases:\n  - name: a\n    dmp: true\n  - name: b\n    dmp: true\n  - name: c\n    traffic:\n      pattern: unifrom\n      loads: [0.1]\n", 10, 16, "phases[2].traffic.pattern", `unknown pattern "unifrom" (want uniform, adv+N,`},
		{"adv zero", head + "phases:\n  - name: a\n    traffic: {pattern: adv+0, loads: [0.1]}\n", 5, 24, "phases[0].traffic.pattern", "at least 1"},
		{"adv wraps", head + "phases:\n  - name: a\n    traffic: {pattern: adv+9, loads: [0.1]}\n", 5, 24, "phases[0].traffic.pattern", "wrap around the 9 groups"},
		{"adv no offset", head + "phases:\n  - name: a\n    traffic: {pattern: adv, loads: [0.1]}\n", 5, 24, "phases[0].traffic.pattern", "adv+N"},
		{"app on uniform", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, app: CG, loads: [0.1]}\n", 5, 33, "phases[0].traffic.app", "only applies to pattern npb-like"},
		{"bad app", head + "phases:\n  - name: a\n    traffic: {pattern: npb-like, app: EP, loads: [0.1]}\n", 5, 39, "phases[0].traffic.app", `unknown NPB application "EP"`},
		{"load zero", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [0.1, 0]}\n", 5, 46, "phases[0].traffic.loads[1]", "in (0, 1]"},
		{"load above one", head + "phases:\n  - name: a\n    traffic:\n      pattern: uniform\n      loads:\n        - 0.5\n        - 1.5\n", 9, 11, "phases[0].traffic.loads[1]", "in (0, 1]"},
		{"loads missing", head + "phases:\n  - name: a\n    traffic: {pattern: uniform}\n", 5, 14, "phases[0].traffic.loads", "required"},
		{"loads empty", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: []}\n", 5, 40, "phases[0].traffic.loads", "at least one load"},
		{"frame small", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1], frame: 63}\n", 5, 52, "phases[0].traffic.frame", "64..9000"},
		{"duration negative", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1], duration: -1s}\n", 5, 55, "phases[0].traffic.duration", "must be positive"},
		{"seed float", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1], seed: 1.5}\n", 5, 51, "phases[0].traffic.seed", "must be an integer"},
		{"traffic unknown", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1], rate: 1}\n", 5, 45, "phases[0].traffic.rate", `unknown field "rate"`},
		{"expect metric", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1]}\n    expect: [\"loss == 0\", \"throughput > 1\"]\n", 6, 27, "phases[0].expect[1]", `unknown metric "throughput"`},
		{"expect op", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1]}\n    expect:\n      - loss = 0\n", 7, 9, "phases[0].expect[0]", "want an operator"},
		{"expect latency number", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1]}\n    expect: [\"p99_latency < 5\"]\n", 6, 14, "phases[0].expect[0]", "needs a duration"},
		{"expect dimension", head + "phases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1]}\n    expect: [\"loss < 0.5 * p50_latency\"]\n", 6, 14, "phases[0].expect[0]", "cannot compare loss (a fraction) with p50_latency (a latency)"},
		{"expect on wait", head + "phases:\n  - name: a\n    wait: 1s\n    expect: [\"loss == 0\"]\n", 6, 5, "phases[0].expect", "only traffic phases"},
		{"assign dmp without dmp phase", "name: x\ntopology: {kind: clos, k: 4}\naddressing: {assign: dmp}\nphases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1]}\n", 3, 22, "addressing.assign", `phase "a" sends before any dmp phase`},
		{"duplicate key", "name: x\nname: y\n", 2, 1, "", "already defined"},
		{"yaml syntax", "name: x\ntopology: {kind: clos, k: 4\n", 2, 11, "", "flow mapping end"},
		{"not a mapping", "- a\n- b\n", 1, 1, "", "must be a mapping"},
		{"two documents", head + "---\nname: y\n", 4, 1, "", "exactly one YAML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("scenarios/x.yaml", []byte(c.doc))
			if err == nil {
				t.Fatalf("no error for\n%s", c.doc)
			}
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v is not Errors", err, err)
			}
			e := es[0]
			if os.Getenv("CARET") != "" {
				lines := strings.Split(c.doc, "\n")
				if e.Line >= 1 && e.Line <= len(lines) {
					t.Logf("%s\n%s\n%s^", e, lines[e.Line-1], strings.Repeat(" ", max(e.Col-1, 0)))
				}
			}
			if e.File != "scenarios/x.yaml" || e.Line != c.line || (c.col != 0 && e.Col != c.col) || e.Path != c.path || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got  %s (line %d col %d path %q)\nwant line %d col %d path %q msg containing %q", e, e.Line, e.Col, e.Path, c.line, c.col, c.path, c.msg)
			}
			if want := "scenarios/x.yaml:"; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error text %q does not start with %q", err, want)
			}
		})
	}
}

func TestAllErrorsReported(t *testing.T) {
	doc := "name: x\ntopology: {kind: clos, k: 4}\nrouting: {mode: fast}\nphases:\n  - name: a\n    wait: 1\n"
	_, err := Parse("x.yaml", []byte(doc))
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("want 2 errors, got %v", err)
	}
	if es[0].Path != "routing.mode" || es[1].Path != "phases[0].wait" || es[1].Line != 6 {
		t.Errorf("errors %v", err)
	}
	want := "x.yaml:3:17: routing.mode: unknown value \"fast\" (want minimal, valiant, conditional, qcn-switch, vlan, shortest, snoop-ar)"
	if es[0].Error() != want {
		t.Errorf("error text\n%q\nwant\n%q", es[0].Error(), want)
	}
}

func TestSet(t *testing.T) {
	s, err := Parse("full.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	raw := string(s.Raw)
	for _, o := range [][2]string{
		{"routing.mode", "valiant"},
		{"topology.g", "5"},
		{"phases[3].traffic.loads", "[0.1,0.2]"},
		{"links.global.delay", "{value: 1ms, required: true}"},
		{"description", `"changed: by --set"`},
	} {
		if err := s.Set(o[0], o[1]); err != nil {
			t.Fatalf("Set(%q, %q): %v", o[0], o[1], err)
		}
	}
	if s.Routing.Mode != controller.Valiant || !s.Routing.XOff.IsZero() || s.Topology.G != 5 || len(s.Phases[3].Traffic.Loads) != 2 || s.Phases[3].Traffic.Loads[1] != 0.2 ||
		s.Links[GlobalLinks].Delay != (Impairment[time.Duration]{time.Millisecond, true}) || s.Description != "changed: by --set" {
		t.Errorf("overrides not applied: %+v", s)
	}
	if string(s.Raw) != raw || len(s.Overrides) != 5 || s.Overrides[1] != "topology.g=5" {
		t.Errorf("Raw or Overrides wrong: %q", s.Overrides)
	}
	// The effective file carries the overrides and reads back the same.
	roundTrip(t, s)
	out, _ := s.MarshalYAML()
	if !strings.Contains(string(out), "# --set topology.g=5\n") || !strings.Contains(string(out), "g: 5") {
		t.Errorf("effective file lacks the override:\n%s", out)
	}

	// Creating a section the file does not have.
	s2, err := Parse("min.yaml", []byte("name: x\ntopology: {kind: clos, k: 4}\nrouting:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Set("routing.mode", "conditional"); err != nil {
		t.Fatal(err)
	}
	if err := s2.Set("routing.xoff", "20"); err != nil {
		t.Fatal(err)
	}
	if err := s2.Set("ovs.datapath", "netdev"); err != nil {
		t.Fatal(err)
	}
	if s2.Routing.XOff != (Threshold{20, Frames}) || s2.OVS.Datapath != DatapathNetdev {
		t.Errorf("created sections not applied: %+v %+v", s2.Routing, s2.OVS)
	}
}

func TestSetErrors(t *testing.T) {
	s, err := Parse("full.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.MarshalYAML()
	cases := []struct{ path, value, want string }{
		{"routing.mod", "valiant", `--set routing.mod=valiant: routing.mod: unknown field "mod" (want mode, xoff, xon, pause, qcn, vlan)`},
		{"routing.mode", "fast", `--set routing.mode=fast: routing.mode: unknown value "fast"`},
		{"routing.xoff", "5kb", "full.yaml:6:47: routing.xon: 10kb must be below xoff (5kb)"},
		{"description", "a: b", "description: must be a single value, got a mapping"},
		{"topology.h", "0", "--set topology.h=0: topology.h: must be at least 1"},
		{"phases[9].wait", "1s", "phases[9]: index out of range (the list has 6 entries)"},
		{"phases[1]x", "1", "want . or [ after ]"},
		{"name.first", "x", "name.first: name is not a mapping"},
		{"phases.0.traffic.duration", "40s", "phases.0: phases is a list: index it, e.g. phases[0]"},
		{"bogus", "1", `--set bogus=1: bogus: unknown field "bogus"`},
		{"phases[3].traffic.loads", "[0.1, 2]", "--set phases[3].traffic.loads=[0.1, 2]: phases[3].traffic.loads[1]: a load must be in (0, 1]"},
		{"routing.mode", "[unclosed", "--set routing.mode=[unclosed: value:"},
		// Changing the kind makes the file's own parameters wrong; that
		// error points into the file.
		{"topology.kind", "clos", `full.yaml:4:29: topology.p: unknown field "p"`},
	}
	for _, c := range cases {
		err := s.Set(c.path, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%q, %q) = %v, want error containing %q", c.path, c.value, err, c.want)
		}
	}
	after, _ := s.MarshalYAML()
	if string(before) != string(after) || len(s.Overrides) != 0 {
		t.Errorf("failed Set changed the scenario")
	}
}

func TestWriteFile(t *testing.T) {
	s, err := Parse("full.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "as-run.yaml")
	if err := s.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	s2, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !sameScenario(s, s2) {
		t.Errorf("written scenario reads back different")
	}
	if data, _ := os.ReadFile(p); string(data) != string(s2.Raw) {
		t.Errorf("Raw is not the file's bytes")
	}
}

func TestUnits(t *testing.T) {
	// Link rates: tc notation read by internal/rate, held to what tbf
	// can shape; what the effective scenario writes reads back the same.
	rates := map[string]uint64{"100mbit": 1e8, "1gbit": 1e9, "100kbit": 1e5, "1500": 1500, "1.5mbit": 1.5e6, "1mbps": 8e6, "1mibit": 1 << 20, "10Gbit": 1e10, "100tbit": 1e14}
	for in, want := range rates {
		got, err := linkRate(in)
		if err != nil || got != want {
			t.Errorf("linkRate(%q) = %d, %v; want %d", in, got, err, want)
		}
		if back, err := linkRate(rate.Format(got)); err != nil || back != got {
			t.Errorf("rate.Format(%d) = %q does not read back", got, rate.Format(got))
		}
	}
	for _, bad := range []string{"", "0", "fast", "10 mbitz", "-1mbit", "1e20gbit", "999bit", "100.000000001tbit", "1000tbit"} {
		if _, err := linkRate(bad); err == nil {
			t.Errorf("linkRate(%q) accepted", bad)
		}
	}
	th := map[string]Threshold{"20": {20, Frames}, "30kb": {30 << 10, Bytes}, "1500b": {1500, Bytes}, "2mb": {2 << 20, Bytes}}
	for in, want := range th {
		got, err := ParseThreshold(in)
		if err != nil || got != want {
			t.Errorf("ParseThreshold(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, _ := ParseThreshold(got.String()); back != got {
			t.Errorf("Threshold %v renders as %q, which reads back as %v", got, got.String(), back)
		}
	}
	for _, bad := range []string{"0", "1.5", "20kbit", "x"} {
		if _, err := ParseThreshold(bad); err == nil {
			t.Errorf("ParseThreshold(%q) accepted", bad)
		}
	}
	if FormatDuration(40*time.Microsecond) != "40us" {
		t.Errorf("FormatDuration(40us) = %q", FormatDuration(40*time.Microsecond))
	}
}

func TestParseExpectation(t *testing.T) {
	good := map[string]Expectation{
		"loss == 0":                       {Metric: Loss, Op: Equal, Value: 0},
		"loss<1%":                         {Metric: Loss, Op: Less, Value: 0.01},
		"nonminimal_share <= 0.5":         {Metric: NonminimalShare, Op: LessEqual, Value: 0.5},
		"mean_latency != 2 * p50_latency": {Metric: MeanLatency, Op: NotEqual, Value: 2, Of: P50Latency},
		"p50_latency > 100us":             {Metric: P50Latency, Op: Greater, Value: 100e-6},
		"  offered >= 0.5 ":               {Metric: Offered, Op: GreaterEqual, Value: 0.5},
	}
	for in, want := range good {
		got, err := ParseExpectation(in)
		want.Text = in
		if err != nil || got != want {
			t.Errorf("ParseExpectation(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseExpectation(got.String()); err != nil || again.Metric != got.Metric || again.Op != got.Op || again.Of != got.Of {
			t.Errorf("String() %q does not read back: %v", got.String(), err)
		}
	}
	for _, bad := range []string{"", "loss", "loss ==", "loss == x", "latency < 1ms", "accepted >= 0.9 * loss", "accepted >= 1ms", "loss == NaN", "p99_latency < 1ms * 2"} {
		if _, err := ParseExpectation(bad); err == nil {
			t.Errorf("ParseExpectation(%q) accepted", bad)
		}
	}
}

// Aliases are expanded, but a "billion laughs" document must be refused
// quickly rather than exhaust memory.
func TestAliasBomb(t *testing.T) {
	doc := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for i, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		_ = i
		doc += n + ": &" + n + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = n
	}
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("alias bomb: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("alias bomb took %v", d)
	}
	// Ordinary aliases work.
	s, err := Parse("alias.yaml", []byte("name: x\ntopology: {kind: clos, k: 4}\nlinks:\n  host: &l {rate: 1gbit}\n  local: *l\n"))
	if err != nil || s.Links[LocalLinks].Rate != 1e9 {
		t.Fatalf("aliases: %v %+v", err, s)
	}
}

// A scenario's switch_profile gives link events Table 6's times: on/off
// for on, the speed change's for rate (PC5324: 1G to 100M 4.1 s, back
// 2.4 s), unless an event gives its own hold; and it survives the
// effective scenario.
func TestLinkEventHolds(t *testing.T) {
	src := "name: x\ntopology: {kind: ring, n: 4}\nlinks: {host: {rate: 50mbit}, local: {rate: 50mbit}}\nswitch_profile: PC5324\nphases:\n  - name: t\n    traffic: {pattern: uniform, loads: [0.1], duration: 20s}\n" +
		"    probes: {interval: 100ms, pairs: [[s0h0, s1h0]]}\n    link_events:\n" +
		"      - {at: 1s, link: [s0, s1], op: rate, rate: 5mbit}\n      - {at: 6s, link: [s0, s1], op: rate, rate: 50mbit}\n" +
		"      - {at: 9s, link: [s0, s1], op: off}\n      - {at: 10s, link: [s0, s1], op: on}\n" +
		"      - {at: 14s, link: [s0, s1], op: off}\n      - {at: 15s, link: [s0, s1], op: on, hold: 1s}\n"
	s, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *Scenario) {
		t.Helper()
		evs := s.Phases[0].LinkEvents
		want := []struct {
			op   string
			hold time.Duration
		}{{"rate", 4100 * time.Millisecond}, {"rate", 2400 * time.Millisecond}, {"off", 0}, {"on", 3200 * time.Millisecond}, {"off", 0}, {"on", time.Second}}
		if len(evs) != len(want) {
			t.Fatalf("%d events", len(evs))
		}
		for i, w := range want {
			if evs[i].Op() != w.op || evs[i].Hold != w.hold {
				t.Errorf("event %d: %s hold %v, want %s hold %v", i, evs[i].Op(), evs[i].Hold, w.op, w.hold)
			}
		}
		if evs[0].Rate != 5_000_000 || s.SwitchProfile != "PC5324" {
			t.Errorf("rate %d, profile %q", evs[0].Rate, s.SwitchProfile)
		}
		if p := s.Phases[0].Probes; p == nil || p.Interval != 100*time.Millisecond || len(p.Pairs) != 1 || p.Size != DefaultProbeSize {
			t.Errorf("probes %+v", p)
		}
	}
	check(s)
	roundTrip(t, s)
}

// traffic.warmup is the phase's own, and survives marshalling.
func TestTrafficWarmup(t *testing.T) {
	s, err := Parse("x.yaml", []byte("name: x\ntopology: {kind: mesh, dims: [2]}\nphases:\n  - name: a\n    traffic: {pattern: uniform, loads: [1], warmup: 8s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Phases[0].Traffic.Warmup; w != 8*time.Second {
		t.Errorf("warmup %v, want 8s", w)
	}
	roundTrip(t, s)
}

// routing.vlan.macs learn takes its aging time and learning procedure,
// with defaults, and survives marshalling.
func TestVLANLearnFields(t *testing.T) {
	for src, want := range map[string]VLANRouting{
		"{assign: fixed, macs: learn}":                            {Assign: "fixed", Torus: "dateline", MACs: "learn", Aging: DefaultAging, Learning: "broadcasts"},
		"{assign: fixed, macs: learn, aging: 0s, learning: none}": {Assign: "fixed", Torus: "dateline", MACs: "learn", Aging: 0, Learning: "none"},
		"{assign: fixed}":                                         {Assign: "fixed", Torus: "dateline", MACs: "static"},
		"{tagged_hosts: [s1-0h0, s0-0h0]}":                        {Assign: "renamed", Torus: "dateline", MACs: "static", TaggedHosts: []string{"s1-0h0", "s0-0h0"}},
	} {
		s, err := Parse("x.yaml", []byte("name: x\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: "+src+"}\n"))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := s.Routing.VLAN; got == nil || !reflect.DeepEqual(*got, want) {
			t.Errorf("%s: %+v, want %+v", src, got, want)
		}
		roundTrip(t, s)
	}
}

// Seed 003's topologies read, default to flat addressing, and write back
// as they were read.
func TestSeed003Topologies(t *testing.T) {
	for _, doc := range []string{
		"name: x\ntopology: {kind: xgft, h: 2, m: [8, 16], w: [1, 8]}\nrouting: {mode: shortest}\n",
		"name: x\ntopology: {kind: xgft, h: 2, m: 2x2, w: 1x2}\n",
		"name: x\ntopology:\n  kind: custom\n  switches: [A, B, C]\n  links: [[A, B], [B, C], [A, C]]\n  hosts: {C: 2, A: 1}\n",
	} {
		s, err := Parse("x.yaml", []byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if s.Addressing.Scheme != addressing.Flat {
			t.Errorf("%s: addressing %s, want flat", doc, s.Addressing.Scheme)
		}
		p := filepath.Join(t.TempDir(), "as-run.yaml")
		if err := s.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		s2, err := Load(p)
		if err != nil {
			t.Fatalf("%s: written back: %v", doc, err)
		}
		if !sameScenario(s, s2) || s2.Topology.String() != s.Topology.String() {
			t.Errorf("%s: reads back as %s", doc, s2.Topology)
		}
	}
	s, _ := Parse("x.yaml", []byte("name: x\ntopology:\n  kind: custom\n  switches: [A, B, C]\n  links: [[A, B], [B, C], [A, C]]\n  hosts: {C: 2, A: 1}\n"))
	if got := s.Topology.String(); got != "custom:switches=A+B+C,links=A-B+B-C+A-C,hosts=A:1+C:2" {
		t.Errorf("custom fabric as text: %s", got)
	}
}

// routing.vlan.torus lines on a torus with two links between neighbours,
// surviving marshalling.
func TestVLANTorusLines(t *testing.T) {
	s, err := Parse("x.yaml", []byte("name: x\ntopology: {kind: torus, dims: [5, 5], links: 2}\nrouting: {mode: vlan, vlan: {assign: fixed, torus: lines}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Routing.VLAN; v.Torus != vlan.Lines || v.Assign != vlan.Fixed {
		t.Errorf("routing.vlan %+v", *v)
	}
	roundTrip(t, s)
}
