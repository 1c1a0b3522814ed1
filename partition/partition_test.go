package partition

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/internal/topotest"
	"github.com/ethfab/ethfab/topology"
)

// split builds the fabric and splits it across the machines, or fails t.
func split(t *testing.T, spec, machines string) (*topology.Topology, []Machine, *Partition) {
	t.Helper()
	top := topotest.Build(t, spec)
	ms, err := ParseMachines(machines)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Split(top, ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	return top, ms, p
}

// check asserts what every partition must hold: each switch on one of the
// machines, the shares adding up to the fabric, exactly the links whose
// ends are apart listed as cut, and every machine's load within one unit
// (the heaviest group, or switch) of its share.
func check(t *testing.T, top *topology.Topology, ms []Machine, p *Partition) {
	t.Helper()
	if len(p.Of) != len(top.Switches) || len(p.Machines) != len(ms) {
		t.Fatalf("%d switches placed of %d, %d shares of %d machines", len(p.Of), len(top.Switches), len(p.Machines), len(ms))
	}
	sw, hosts, ports, load := 0, 0, 0, 0
	for _, sh := range p.Machines {
		sw += sh.Switches
		hosts += sh.Hosts
		ports += sh.Ports
		load += sh.Load
	}
	if sw != len(top.Switches) || hosts != len(top.Hosts) || ports != top.NumPorts() {
		t.Fatalf("shares hold %d switches, %d hosts, %d ports; the fabric %d, %d, %d", sw, hosts, ports, len(top.Switches), len(top.Hosts), top.NumPorts())
	}
	cut := map[int]bool{}
	for _, li := range p.Cut {
		cut[li] = true
	}
	for li, l := range top.Links {
		apart := l.Class != topology.ClassHost && p.Of[l.A.Switch] != p.Of[l.B.Switch]
		if apart != cut[li] {
			t.Fatalf("link %d (%v) apart %v, listed cut %v", li, l, apart, cut[li])
		}
	}
	unit := 0 // the heaviest unit
	byGroup := map[int]int{}
	for i := range top.Switches {
		w := weight(&top.Switches[i])
		if g := top.Switches[i].Group; p.Method == "groups" && g >= 0 {
			byGroup[g] += w
			unit = max(unit, byGroup[g])
		} else {
			unit = max(unit, w)
		}
	}
	cores := coresOf(ms)
	for k, sh := range p.Machines {
		want := float64(load) * float64(ms[k].Cores) / float64(cores)
		if d := float64(sh.Load) - want; d > float64(unit) || -d > float64(unit) {
			t.Errorf("%s: load %d, share %.0f: off by more than one %s (%d)", ms[k].Name, sh.Load, want, p.Unit, unit)
		}
	}
}

// Whole groups, rows and pods: only the links between them are cut, and
// on a Dragonfly, whose groups each have one global link to every other,
// the cut is exactly the links between the two halves.
func TestSplitByGroups(t *testing.T) {
	cases := []struct {
		spec     string
		machines string
		unit     string
		cutClass string // the only class cut
	}{
		{"dragonfly:p=4,a=8,h=4", "2", "group", "global"},
		{"dragonfly:p=4,a=8,h=4", "3", "group", "global"},
		{"dragonfly:p=8,a=16,h=8", "4", "group", "global"},
		{"dragonfly:p=2,a=4,h=2", "a:1,b:3", "group", "global"},
		{"flatfly:dims=4x4x4,t=2", "2", "row", "local"},
		{"flatfly:dims=8x8,t=4", "3", "row", "local"},
		{"clos:k=8", "2", "pod", "global"},
		{"clos:k=8,levels=4,pods=8", "4", "pod", "global"},
		{"dragonfly:p=4,a=8,h=4", "10", "group", "global"},
		{"dragonfly:p=4,a=8,h=4", "n0,n1,n2,big:3,n4,n5,n6,n7,n8", "group", "global"},
		{"dragonfly:p=2,a=3,h=2,g=7", "5", "group", "global"},
	}
	for _, c := range cases {
		t.Run(c.spec+"/"+c.machines, func(t *testing.T) {
			top, ms, p := split(t, c.spec, c.machines)
			if p.Method != "groups" || p.Unit != c.unit {
				t.Fatalf("method %s by %s, want groups by %s", p.Method, p.Unit, c.unit)
			}
			check(t, top, ms, p)
			// Each group on one machine.
			at := map[int]int{}
			for i, sw := range top.Switches {
				if sw.Group < 0 {
					continue
				}
				if m, ok := at[sw.Group]; ok && m != p.Of[i] {
					t.Fatalf("%s %d split between machines %d and %d", c.unit, sw.Group, m, p.Of[i])
				}
				at[sw.Group] = p.Of[i]
			}
			for class, n := range p.CutByClass {
				if class != c.cutClass && n > 0 {
					t.Errorf("%d %s links cut, want only %s", n, class, c.cutClass)
				}
			}
			if top.Spec.Kind == topology.FlatFly {
				// Rows lie along the first dimension: its links stay.
				for _, li := range p.Cut {
					a := top.Links[li].A
					if top.Switches[a.Switch].Port(a.Port).Dim == 0 {
						t.Fatalf("a first-dimension link cut: %v", top.Links[li])
					}
				}
			}
			if top.Spec.Kind == topology.Dragonfly {
				want := 0
				for k := range p.Machines {
					for l := k + 1; l < len(p.Machines); l++ {
						want += len(p.Machines[k].Units) * len(p.Machines[l].Units)
					}
				}
				if len(p.Cut) != want {
					t.Errorf("%d links cut, want one per pair of groups apart: %d", len(p.Cut), want)
				}
			}
		})
	}
}

// DF(4,8,4)'s 33 groups on two machines: 17 and 16, consecutive.
func TestSplitDragonflyHalves(t *testing.T) {
	top := topotest.Build(t, "dragonfly:p=4,a=8,h=4")
	p, err := Split(top, alike("m", 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Machines[0], p.Machines[1]
	if len(a.Units) != 17 || len(b.Units) != 16 || a.Units[16] != 16 || b.Units[0] != 17 {
		t.Fatalf("groups %v and %v, want g0-g16 and g17-g32", a.Units, b.Units)
	}
	if len(p.Cut) != 17*16 || p.CutByClass["global"] != 272 || p.LinksByClass["global"] != 528 {
		t.Fatalf("cut %d (%v of %v), want 272 of 528 global links", len(p.Cut), p.CutByClass, p.LinksByClass)
	}
	if a.Hosts != 17*32 || b.Hosts != 16*32 {
		t.Fatalf("hosts %d and %d", a.Hosts, b.Hosts)
	}
}

// Fabrics without groups split as graphs: every switch placed, balanced
// within a switch, and region growing cuts what a straight cut would.
func TestSplitRegions(t *testing.T) {
	for _, c := range []struct {
		spec, machines string
		maxCut         int
	}{
		{"mesh:dims=8x8", "2", 8},           // a straight cut
		{"torus:dims=6x6,links=2", "3", 36}, // three bands of two rows: 3 boundaries x 6 x 2 lanes
		{"fattree:u=2,d=4,r=3", "2", 4},
		{"xgft:h=2,m=4x4,w=1x4", "2", 8},
		{"ring:n=12", "a:2,b:1", 2}, // an arc
		{"ring:n=33", "10", 10},     // ten arcs
	} {
		t.Run(c.spec, func(t *testing.T) {
			top, ms, p := split(t, c.spec, c.machines)
			if p.Method != "regions" || p.Unit != "switch" {
				t.Fatalf("method %s by %s", p.Method, p.Unit)
			}
			check(t, top, ms, p)
			t.Logf("%d links cut, imbalance %.3f", len(p.Cut), p.Imbalance)
			if len(p.Cut) > c.maxCut {
				t.Errorf("%d links cut, want at most %d", len(p.Cut), c.maxCut)
			}
		})
	}
}

// What cannot be split says why, naming the counts.
func TestSplitErrors(t *testing.T) {
	for _, c := range []struct {
		spec     string
		machines []Machine
		want     string
	}{
		{"dragonfly:p=2,a=4,h=2", alike("m", 10), "9 groups: at most 9 machines, not 10"},
		{"mesh:dims=2x2", alike("m", 5), "4 switches: at most 4 machines, not 5"},
		{"dragonfly:p=2,a=4,h=2", nil, "no machines"},
		{"dragonfly:p=2,a=4,h=2", []Machine{{Name: "a", Cores: 0}}, "a: 0 cores"},
	} {
		_, err := Split(topotest.Build(t, c.spec), c.machines, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %v: %v, want %q", c.spec, c.machines, err, c.want)
		}
	}
	// A splitter's answer is checked: parts out of range, and a machine
	// left without a switch.
	mesh := topotest.Build(t, "mesh:dims=2x2")
	for _, c := range []struct {
		parts []int
		want  string
	}{
		{[]int{0, 1, 2, 0}, "switch s0-1 in part 2 of 2"},
		{[]int{0, 0, 0, 0}, "machine m1 gets no switch"},
		{[]int{0, 1}, "2 parts for 4 switches"},
	} {
		_, err := Split(mesh, alike("m", 2), fixed(c.parts))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parts %v: %v, want %q", c.parts, err, c.want)
		}
	}
	// A tiny share still gets one group.
	p, err := Split(topotest.Build(t, "dragonfly:p=2,a=4,h=2"), []Machine{{Name: "big", Cores: 4000}, {Name: "small", Cores: 1}}, nil)
	if err != nil || len(p.Machines[1].Units) != 1 {
		t.Errorf("4000 cores and 1: %v, %v; want the small machine to run one group", p, err)
	}
}

// fixed is a GraphSplitter that answers parts.
type fixed []int

func (fixed) Name() string                            { return "fixed" }
func (f fixed) Split(Graph, []float64) ([]int, error) { return f, nil }

// A machine twice the cores gets twice the load, within a group.
func TestSplitByCores(t *testing.T) {
	top := topotest.Build(t, "dragonfly:p=4,a=8,h=4")
	ms := []Machine{{"a", 2}, {"b", 1}, {"c", 1}}
	p, err := Split(top, ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, top, ms, p)
	if n := len(p.Machines[0].Units); n < 16 || n > 17 {
		t.Errorf("the 2-core machine runs %d of 33 groups, want about half", n)
	}
	if p.Imbalance > 0.07 {
		t.Errorf("imbalance %.3f", p.Imbalance)
	}
}

func TestGraphOfMergesParallelLinks(t *testing.T) {
	top := topotest.Build(t, "ring:n=4,links=2")
	g := GraphOf(top)
	for v, es := range g.Edges {
		if len(es) != 2 {
			t.Fatalf("switch %d: %d neighbours, want 2", v, len(es))
		}
		for _, e := range es {
			if e.Links != 2 {
				t.Errorf("switch %d to %d: %d links, want 2", v, e.To, e.Links)
			}
		}
	}
	if fmt.Sprint(g.Weights) != "[6 6 6 6]" {
		t.Errorf("weights %v, want a host, its port and four ring ports each", g.Weights)
	}
}
