package run

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/condition"
	"github.com/ethfab/ethfab/qcnswitch"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/topology"
)

// The QCN series replay a point's P changes from the probabilities at its
// start: CNMs counted in the bin they were sent in (dropped ones and those
// without a victim not), ports below 50 and class means at each bin's
// end, and P traces of the first group's ports only.
func TestQCNSeries(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	p0 := []condition.PortP{
		{Switch: "g0s0", Port: 3, Class: "local", P: 100},
		{Switch: "g0s0", Port: 5, Class: "global", P: 100},
		{Switch: "g1s0", Port: 3, Class: "local", P: 80},
	}
	change := func(s float64, sw string, port int, p float64) condition.PChange {
		return condition.PChange{Time: at(s), Switch: sw, Change: qcnswitch.Change{Port: port, New: p}}
	}
	// Out of order on purpose: the log is in poll order, not time order.
	ps := []condition.PChange{
		change(0.25, "g0s0", 3, 40),
		change(0.12, "g1s0", 3, 30),
		change(0.7, "g0s0", 3, 60),
		change(0.8, "g0s0", 5, 45),
	}
	cs := []condition.CNMRecord{{Time: at(0.1)}, {Time: at(0.4)}, {Time: at(0.45), Dropped: "no route"}, {Time: at(0.6)}, {Time: at(0.9), NoVictim: true}}
	ser, traces := qcnSeries(start, []float64{0.5, 1}, p0, ps, cs, map[string]bool{"g0s0": true})
	if ser.Ports != 3 {
		t.Errorf("%d transit ports, want 3", ser.Ports)
	}
	if want := []float64{4, 2}; !reflect.DeepEqual(ser.CNMsPerS, want) {
		t.Errorf("CNMs/s %v, want %v (2 sent in the first half second, 1 in the second)", ser.CNMsPerS, want)
	}
	if want := []int{2, 2}; !reflect.DeepEqual(ser.PortsBelow50, want) {
		t.Errorf("ports below 50: %v, want %v", ser.PortsBelow50, want)
	}
	if want := []float64{35, 45}; !reflect.DeepEqual(ser.PMeanLocal, want) {
		t.Errorf("mean local P %v, want %v", ser.PMeanLocal, want)
	}
	if want := []float64{100, 45}; !reflect.DeepEqual(ser.PMeanGlobal, want) {
		t.Errorf("mean global P %v, want %v", ser.PMeanGlobal, want)
	}
	if len(traces) != 2 {
		t.Fatalf("%d traces, want g0s0's two ports", len(traces))
	}
	for _, tr := range traces {
		if len(tr.T) != 11 || tr.T[0] != 0 || tr.T[10] != 1 {
			t.Errorf("%s: trace times %v, want 0, 0.1, ... 1", tr.Port, tr.T)
		}
		if tr.Port == "g0s0:3" && (tr.P[2] != 100 || tr.P[3] != 40 || tr.P[7] != 60) {
			t.Errorf("g0s0:3 trace %v: want 100 until 0.2 s, 40 from 0.3 s, 60 from 0.7 s", tr.P)
		}
	}
	// The caller's start probabilities are left as they were.
	if p0[0].P != 100 {
		t.Errorf("p0 changed: %+v", p0)
	}
}

// Check 14's probabilities at S_out: on DF(2,4,2) under adv+1, S_out is
// the group-0 switch whose global link leads to group 1; its global port's
// P and the others' local ports towards it are averaged over the window.
func TestSOutP(t *testing.T) {
	s, err := topology.ParseSpec("dragonfly:p=2,a=4,h=2")
	if err != nil {
		t.Fatal(err)
	}
	top, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	out, port := -1, 0
	for _, sw := range top.Switches {
		for _, p := range sw.Ports {
			if sw.Group == 0 && p.Class == topology.ClassGlobal && top.Switches[p.Peer.Switch].Group == 1 {
				out, port = sw.ID, p.Num
			}
		}
	}
	// S_out's global port: 100 before the window, 40 in it; the others'
	// local ports to S_out 60 in it; every other port 100.
	var traces []results.PTrace
	for _, sw := range top.Switches {
		if sw.Group != 0 {
			continue
		}
		for _, p := range sw.Ports {
			if p.Class == topology.ClassHost {
				continue
			}
			in := 100.0
			switch {
			case sw.ID == out && p.Num == port:
				in = 40
			case sw.ID != out && p.Class == topology.ClassLocal && p.Peer.Switch == out:
				in = 60
			}
			traces = append(traces, results.PTrace{Port: fmt.Sprintf("%s:%d", sw.Name, p.Num), T: []float64{0.1, 1, 2}, P: []float64{100, in, in}})
		}
	}
	name, g, l := sOutP(top, 1, traces, 0.5, 2)
	if name != top.Switches[out].Name || g == nil || *g != 40 || l == nil || *l != 60 {
		t.Errorf("S_out %q, global %v, local %v; want %s, 40, 60", name, g, l, top.Switches[out].Name)
	}
	if name, g, _ := sOutP(top, 0, traces, 0.5, 2); name != "" || g != nil {
		t.Errorf("no adversarial offset: %q, %v", name, g)
	}
}
