package topology

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// shapes covers balanced, partial and odd fabrics.
var shapes = []string{
	"dragonfly:p=1,a=1,h=1",
	"dragonfly:p=2,a=4,h=2",
	"dragonfly:p=2,a=4,h=2,g=5",
	"dragonfly:p=3,a=3,h=2,g=2",
	"dragonfly:p=4,a=8,h=4",
	"dragonfly:p=1,a=5,h=1,g=3",
	"flatfly:dims=4,t=2",
	"flatfly:dims=3x3,t=2",
	"flatfly:dims=4x3x2,t=3",
	"flatfly:dims=2x2x2x2,t=1",
	"clos:k=4",
	"clos:k=6,pods=3",
	"clos:k=8",
	"clos:k=4,levels=4",
	"clos:k=4,levels=4,pods=3",
	"clos:k=6,levels=4,pods=7",
}

func build(t testing.TB, s string) *Topology {
	t.Helper()
	sp, err := ParseSpec(s)
	if err != nil {
		t.Fatalf("ParseSpec(%q): %v", s, err)
	}
	top, err := Build(sp)
	if err != nil {
		t.Fatalf("Build(%q): %v", s, err)
	}
	return top
}

func TestWiringIsConsistent(t *testing.T) {
	for _, s := range shapes {
		top := build(t, s)
		names := map[string]bool{}
		for i := range top.Switches {
			sw := &top.Switches[i]
			if names[sw.Name] {
				t.Errorf("%s: duplicate switch name %s", s, sw.Name)
			}
			names[sw.Name] = true
			last := ClassHost
			for n, p := range sw.Ports {
				if p.Num != n+1 {
					t.Fatalf("%s: %s port %d numbered %d", s, sw.Name, n+1, p.Num)
				}
				if p.Class < last {
					t.Errorf("%s: %s port %d (%s) after a %s port", s, sw.Name, p.Num, p.Class, last)
				}
				last = p.Class
				if p.Class == ClassHost {
					h := top.Hosts[p.Host]
					if h.Switch != sw.ID || h.Port != p.Num {
						t.Errorf("%s: %s port %d points at host %s on %d/%d", s, sw.Name, p.Num, h.Name, h.Switch, h.Port)
					}
					continue
				}
				back := top.Switches[p.Peer.Switch].Port(p.Peer.Port)
				if back.Peer != (Endpoint{sw.ID, p.Num}) || back.Class != p.Class {
					t.Errorf("%s: %s port %d -> %v does not point back", s, sw.Name, p.Num, p.Peer)
				}
			}
		}
		for _, h := range top.Hosts {
			if names[h.Name] {
				t.Errorf("%s: duplicate name %s", s, h.Name)
			}
			names[h.Name] = true
		}
		ports := 0
		for _, l := range top.Links {
			if l.Host >= 0 {
				ports++
			} else {
				ports += 2
			}
		}
		if ports != top.NumPorts() {
			t.Errorf("%s: %d link ends but %d ports", s, ports, top.NumPorts())
		}
	}
}

// bfsDiameter is the largest shortest-path switch distance between two
// switches that have hosts.
func bfsDiameter(top *Topology) int {
	worst := 0
	dist := make([]int, len(top.Switches))
	for src := range top.Switches {
		if top.Switches[src].NumHosts == 0 {
			continue
		}
		for i := range dist {
			dist[i] = -1
		}
		dist[src] = 0
		q := []int{src}
		for len(q) > 0 {
			u := q[0]
			q = q[1:]
			for _, p := range top.Switches[u].Ports {
				if p.Class == ClassHost || dist[p.Peer.Switch] >= 0 {
					continue
				}
				dist[p.Peer.Switch] = dist[u] + 1
				q = append(q, p.Peer.Switch)
			}
		}
		for v, d := range dist {
			if top.Switches[v].NumHosts == 0 {
				continue
			}
			if d < 0 {
				return -1
			}
			worst = max(worst, d)
		}
	}
	return worst
}

func TestDiameterMatchesSearch(t *testing.T) {
	for _, s := range shapes {
		top := build(t, s)
		if got, want := bfsDiameter(top), top.Diameter(); got != want {
			t.Errorf("%s: breadth-first diameter %d, Diameter() %d", s, got, want)
		}
	}
}

func TestDragonflyCounts(t *testing.T) {
	for _, s := range shapes {
		if !strings.HasPrefix(s, "dragonfly") {
			continue
		}
		top := build(t, s)
		sp := top.Spec
		if len(top.Switches) != sp.G*sp.A || len(top.Hosts) != sp.G*sp.A*sp.P {
			t.Errorf("%s: %d switches %d hosts", s, len(top.Switches), len(top.Hosts))
		}
		pairs := map[[2]int]int{}
		for _, l := range top.Links {
			if l.Class != ClassGlobal {
				continue
			}
			ga, gb := top.Switches[l.A.Switch].Group, top.Switches[l.B.Switch].Group
			if ga == gb {
				t.Errorf("%s: global link inside group %d", s, ga)
			}
			pairs[[2]int{min(ga, gb), max(ga, gb)}]++
		}
		if len(pairs) != sp.G*(sp.G-1)/2 {
			t.Errorf("%s: %d group pairs linked, want %d", s, len(pairs), sp.G*(sp.G-1)/2)
		}
		for k, n := range pairs {
			if n != 1 {
				t.Errorf("%s: groups %v joined by %d links", s, k, n)
			}
		}
		for _, sw := range top.Switches {
			glob := len(sw.Ports) - sp.P - (sp.A - 1)
			if glob > sp.H || (sp.G == sp.A*sp.H+1 && glob != sp.H) {
				t.Errorf("%s: %s has %d global ports (h=%d)", s, sw.Name, glob, sp.H)
			}
		}
	}
}

func TestDragonflyMatchesMininetArrangement(t *testing.T) {
	// ../shared/bench/mininet_dragonfly.py: group gi port k links to group
	// (gi+k+1) mod g, landing on its port (gi-gj-1) mod g.
	top := build(t, "dragonfly:p=2,a=4,h=2")
	sp := top.Spec
	want := map[[4]int]bool{}
	for gi := 0; gi < sp.G; gi++ {
		for k := 0; k < sp.A*sp.H; k++ {
			gj := (gi + k + 1) % sp.G
			if gj > gi {
				kj := ((gi-gj-1)%sp.G + sp.G) % sp.G
				want[[4]int{gi, k, gj, kj}] = true
			}
		}
	}
	for _, l := range top.Links {
		if l.Class != ClassGlobal {
			continue
		}
		a, b := top.Switches[l.A.Switch], top.Switches[l.B.Switch]
		ka := a.Index*sp.H + l.A.Port - sp.P - sp.A
		kb := b.Index*sp.H + l.B.Port - sp.P - sp.A
		if !want[[4]int{a.Group, ka, b.Group, kb}] {
			t.Errorf("link g%d port %d - g%d port %d not in the Mininet arrangement", a.Group, ka, b.Group, kb)
		}
		delete(want, [4]int{a.Group, ka, b.Group, kb})
	}
	if len(want) != 0 {
		t.Errorf("%d Mininet links missing", len(want))
	}
}

func TestFlatFlyNeighboursDifferInOneCoordinate(t *testing.T) {
	top := build(t, "flatfly:dims=4x3x2,t=3")
	for _, sw := range top.Switches {
		if len(sw.Ports) != 3+3+2+1 {
			t.Errorf("%s has %d ports", sw.Name, len(sw.Ports))
		}
		for _, p := range sw.Ports {
			if p.Class == ClassHost {
				continue
			}
			peer := top.Switches[p.Peer.Switch]
			diff := 0
			for d := range sw.Coords {
				if sw.Coords[d] != peer.Coords[d] {
					diff++
					if d != p.Dim {
						t.Errorf("%s port %d (dim %d) differs in dim %d", sw.Name, p.Num, p.Dim, d)
					}
				}
			}
			if diff != 1 {
				t.Errorf("%s - %s differ in %d coordinates", sw.Name, peer.Name, diff)
			}
		}
	}
	if top.NumGroups() != 6 {
		t.Errorf("groups = %d, want 3*2", top.NumGroups())
	}
}

func TestClosFullTree(t *testing.T) {
	for _, k := range []int{4, 6, 8} {
		top := build(t, "clos:k="+strconv.Itoa(k))
		if len(top.Switches) != 5*k*k/4 || len(top.Hosts) != k*k*k/4 {
			t.Errorf("k=%d: %d switches %d hosts, want %d, %d", k, len(top.Switches), len(top.Hosts), 5*k*k/4, k*k*k/4)
		}
		for _, sw := range top.Switches {
			if len(sw.Ports) != k {
				t.Errorf("k=%d: %s uses %d ports", k, sw.Name, len(sw.Ports))
			}
		}
	}
	top := build(t, "clos:k=4,levels=4")
	if len(top.Hosts) != 2*2*2*2*2 || len(top.Switches) != 8*4+4*4+4*2 {
		t.Errorf("k=4 levels=4: %d hosts %d switches", len(top.Hosts), len(top.Switches))
	}
	for _, sw := range top.Switches {
		if len(sw.Ports) != 4 {
			t.Errorf("k=4 levels=4: %s uses %d ports", sw.Name, len(sw.Ports))
		}
	}
}

func TestPaperScaleShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	for _, c := range []struct {
		spec            string
		switches, hosts int
	}{
		{"dragonfly:p=18,a=36,h=18,g=463", 16668, 300024},
		{"flatfly:dims=15x15x15x6,t=15", 20250, 303750},
		{"clos:k=72,levels=4,pods=234", 31104, 303264},
	} {
		top := build(t, c.spec)
		if len(top.Switches) != c.switches || len(top.Hosts) != c.hosts {
			t.Errorf("%s: %d switches %d hosts, want %d %d", c.spec, len(top.Switches), len(top.Hosts), c.switches, c.hosts)
		}
		for _, sw := range top.Switches {
			if len(sw.Ports) > 72 {
				t.Errorf("%s: %s has %d ports, more than 72", c.spec, sw.Name, len(sw.Ports))
				break
			}
		}
	}
}

func TestParseSpec(t *testing.T) {
	for _, s := range shapes {
		sp, err := ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseSpec(sp.String())
		if err != nil || again.String() != sp.String() {
			t.Errorf("%s -> %s -> %v %v", s, sp, again, err)
		}
	}
	if sp, _ := ParseSpec("dragonfly:p=4,a=8,h=4"); sp.G != 33 {
		t.Errorf("default g = %d, want a*h+1 = 33", sp.G)
	}
	bad := map[string]string{
		"dragonfly:p=2,a=4,h=2,g=10": "g",
		"dragonfly:p=0,a=4,h=2":      "p",
		"dragonfly:p=2,a=4,h=0":      "h",
		"flatfly:dims=4x1,t=2":       "dims",
		"flatfly:dims=4x4":           "t",
		"clos:k=5":                   "k",
		"clos:k=4,levels=5":          "levels",
		"clos:k=4,pods=5":            "pods",
	}
	for s, param := range bad {
		_, err := ParseSpec(s)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%s: error %v, want one naming %s", s, err, param)
		}
	}
	for _, s := range []string{"torus:k=4", "dragonfly:p=2,a=4,h=2,x=1", "dragonfly:p=two", "dragonfly:p=2,p=3", "flatfly:dims=4xx4,t=1"} {
		if _, err := ParseSpec(s); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range shapes {
		f.Add(s)
	}
	f.Add("dragonfly:p=2,a=4,h=2,g=99")
	f.Add("flatfly:dims=0x3,t=1")
	for _, s := range append(seed002Shapes, seed003Shapes...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseSpec(s)
		if err != nil {
			return
		}
		if err := sp.Validate(); err != nil {
			t.Fatalf("ParseSpec(%q) returned an invalid spec: %v", s, err)
		}
		again, err := ParseSpec(sp.String())
		if err != nil || again.String() != sp.String() {
			t.Fatalf("%q: round trip %q -> %v, %v", s, sp.String(), again, err)
		}
	})
}
