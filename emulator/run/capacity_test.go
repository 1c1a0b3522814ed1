package run

import (
	"strings"
	"testing"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/doctor"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/scenario"
	pat "github.com/ethfab/ethfab/traffic"
)

const capScenario = `version: 1
name: capw
topology: {kind: dragonfly, p: 2, a: 3, h: 2}
routing: {mode: valiant}
links: {host: {rate: 5mbit}, local: {rate: 5mbit}, global: {rate: 5mbit}}
phases:
  - name: adv
    traffic: {pattern: adv+1, loads: [0.1, 0.5], duration: 1s, seed: 1}
`

// The paper's path lengths: on a Dragonfly a minimal path has at most 3
// inter-switch hops (local, global, local: 4 switches), a Valiant one leaves
// on its switch's own global port and then goes minimally (at most 5
// switches, seed 000 §V-D); adv+1 always leaves the group, so at least 2.
func TestMeanSwitchesCrossed(t *testing.T) {
	for _, c := range []struct {
		mode     string
		min, max float64
	}{{"minimal", 2, 4}, {"valiant", 3, 5}} {
		sc, err := scenario.Parse("x.yaml", []byte(strings.Replace(capScenario, "valiant", c.mode, 1)))
		if err != nil {
			t.Fatal(err)
		}
		comp, err := fabric.Compile(sc)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pat.New(pat.Spec{Kind: pat.Adversarial, Offset: 1}, comp.Top, 1, pat.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := meanSwitchesCrossed(controller.NewTables(comp.Ctl), p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if m < c.min || m > c.max {
			t.Errorf("%s: %.2f switches per frame, want %g..%g", c.mode, m, c.min, c.max)
		}
	}
}

func TestCapacityWarnings(t *testing.T) {
	sc, err := scenario.Parse("x.yaml", []byte(capScenario))
	if err != nil {
		t.Fatal(err)
	}
	comp, err := fabric.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := capacityWarnings(sc, nil, "netdev", comp); w != nil || err != nil {
		t.Errorf("no capacity measured: %v, %v", w, err)
	}
	// 42 hosts × 625 frames/s × load × ~4 switches: ~10k/s at 0.1, ~50k/s at 0.5.
	c := &doctor.Capacity{Measured: "then", SwitchHopFPS: 1e6, ByCase: map[string]float64{"df(2,3,2) valiant adv+1": 30000}}
	caps := &doctor.Capacities{File: "f", ByDatapath: map[string]*doctor.Capacity{"netdev": c}}
	if w, err := capacityWarnings(sc, caps, "ebpf", comp); w != nil || err != nil {
		t.Errorf("the lab's datapath not measured: %v, %v", w, err)
	}
	w, err := capacityWarnings(sc, caps, "netdev", comp)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 1 || !strings.Contains(w[0], "load 0.5") || !strings.Contains(w[0], "would fit") || strings.Contains(w[0], "ebpf") {
		t.Fatalf("warnings %q: want one, for load 0.5, with what fits, and no word of an unmeasured eBPF datapath", w)
	}
	if !strings.Contains(w[0], "load 0.2") && !strings.Contains(w[0], "load 0.3") {
		t.Errorf("suggested load not about 0.3: %s", w[0])
	}
	// The eBPF datapath, measured with room for it, is suggested.
	caps.ByDatapath["ebpf"] = &doctor.Capacity{SwitchHopFPS: 1e6}
	if w, _ := capacityWarnings(sc, caps, "netdev", comp); len(w) != 1 || !strings.Contains(w[0], "ovs.datapath: ebpf") {
		t.Errorf("warnings %q: want the eBPF datapath suggested", w)
	}
	c.ByCase = map[string]float64{"df(2,3,2) valiant adv+1": 1e6}
	if w, _ := capacityWarnings(sc, caps, "netdev", comp); len(w) != 0 {
		t.Errorf("under capacity, warned: %q", w)
	}
}

func TestTwoDigits(t *testing.T) {
	for in, want := range map[float64]float64{4.025157e6: 4.0e6, 0.3127: 0.31, 99: 99, 0: 0, 1234: 1200} {
		if got := twoDigits(in); got < want*0.9999 || got > want*1.0001 {
			t.Errorf("twoDigits(%g) = %g, want %g", in, got, want)
		}
	}
}
