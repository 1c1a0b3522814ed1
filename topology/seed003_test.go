package topology

import (
	"errors"
	"strings"
	"testing"
)

var seed003Shapes = []string{
	"xgft:h=2,m=8x16,w=1x8", // seed 003's 128-node NAS fabric
	"xgft:h=3,m=3x2x2,w=1x2x3",
	"xgft:h=1,m=4,w=1",
	"xgft:h=3,m=2x1x3,w=1x2x2",
	"xgft:h=2,m=2x3,w=1x1",
	"custom:switches=A+B+C,links=A-B+B-C+A-C,hosts=A:1+C:2",
	"custom:switches=S,hosts=S:3",
	"custom:switches=a1+s7+s8+b1,links=a1-s7+s7-s8+s8-b1+a1-s8,hosts=a1:1+b1:1",
}

func TestSeed003Wiring(t *testing.T) {
	saved := shapes
	shapes = seed003Shapes
	defer func() { shapes = saved }()
	TestWiringIsConsistent(t)
	TestParseSpec(t)
	for _, s := range seed003Shapes {
		top := build(t, s)
		if got, want := bfsDiameter(top), top.Diameter(); got != want {
			t.Errorf("%s: breadth-first diameter %d, Diameter() %d", s, got, want)
		}
		h, sw, p := top.Spec.Size()
		if h != len(top.Hosts) || sw != len(top.Switches) || p != top.NumPorts() {
			t.Errorf("%s: Size %d hosts %d switches %d ports, built %d, %d, %d", s, h, sw, p, len(top.Hosts), len(top.Switches), top.NumPorts())
		}
	}
}

// Check 11 of seed 003's spec (§B.4): XGFT(3; 3,2,2; 2,2,3) has 12
// compute nodes, 8 + 8 switches below 12 top ones, and exactly w1 w2 w3 =
// 12 paths between two nodes in different top subtrees, one through each
// top switch. Its w1 = 2 makes the compute nodes multi-homed, which
// ethfab's hosts cannot be, so the count is made on the labels and Build
// refuses the fabric naming w.
func TestXGFTCheck11(t *testing.T) {
	sp := Spec{Kind: XGFT, H: 3, M: []int{3, 2, 2}, W: []int{2, 2, 3}}
	if got := joinInts(sp.XGFTLevelSizes(), ","); got != "12,8,8,12" {
		t.Fatalf("level sizes %s, want 12,8,8,12", got)
	}
	// Paths up from node a to the top, as sequences of nodes; the same from
	// b; a path between them joins an up path of each at a shared top switch.
	ups := func(x int) map[int]int { // top switch -> up paths reaching it
		out := map[int]int{}
		var walk func(level, idx int)
		walk = func(level, idx int) {
			if level == sp.H {
				out[idx]++
				return
			}
			for y := 0; y < sp.W[level]; y++ {
				walk(level+1, sp.XGFTParent(level, idx, y))
			}
		}
		walk(0, x)
		return out
	}
	a, b := 0, 11 // digits (0,0,0) and (2,1,1): they differ at position 3
	ua, ub := ups(a), ups(b)
	paths := 0
	for top, n := range ua {
		if n != 1 {
			t.Errorf("node %d reaches top switch %d by %d up paths, want 1", a, top, n)
		}
		paths += n * ub[top]
	}
	if len(ua) != 12 || paths != 12 {
		t.Errorf("node %d reaches %d top switches, %d paths to node %d; want 12 and 12", a, len(ua), paths, b)
	}
	_, err := ParseSpec("xgft:h=3,m=3x2x2,w=2x2x3")
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "w" || !strings.Contains(err.Error(), "12 compute nodes and 8, 8, 12 switches") {
		t.Errorf("multi-homed XGFT: %v", err)
	}
}

// Every compute node of an XGFT reaches every top switch by exactly one up
// path, and the labels round-trip.
func TestXGFTUpPaths(t *testing.T) {
	for _, s := range seed003Shapes {
		if !strings.HasPrefix(s, "xgft") {
			continue
		}
		top := build(t, s)
		sp := top.Spec
		sizes := sp.XGFTLevelSizes()
		for i := 0; i <= sp.H; i++ {
			for idx := 0; idx < sizes[i]; idx++ {
				if got := sp.XGFTIndex(i, sp.XGFTLabel(i, idx)); got != idx {
					t.Fatalf("%s: level %d node %d labels back to %d", s, i, idx, got)
				}
			}
		}
		first := sp.XGFTFirst(sp.H)
		for h := range top.Hosts {
			reach := map[int]int{}
			var walk func(sw int)
			walk = func(sw int) {
				if top.Switches[sw].Level == sp.H {
					reach[sw]++
					return
				}
				for _, p := range top.Switches[sw].Ports {
					if p.Up {
						walk(p.Peer.Switch)
					}
				}
			}
			walk(top.Hosts[h].Switch)
			if len(reach) != sizes[sp.H] {
				t.Fatalf("%s: host %d reaches %d of %d top switches", s, h, len(reach), sizes[sp.H])
			}
			for sw, n := range reach {
				if n != 1 || sw < first {
					t.Fatalf("%s: host %d reaches switch %d by %d paths", s, h, sw, n)
				}
			}
		}
	}
}

func TestSeed003SpecErrors(t *testing.T) {
	for s, want := range map[string]struct {
		param string
		item  int
	}{
		"xgft:h=0,m=1,w=1":                            {"h", 0},
		"xgft:h=2,m=2,w=1x2":                          {"m", 0},
		"xgft:h=2,m=2x2,w=1x0":                        {"w", 0},
		"xgft:h=2,m=2x2,w=2x2":                        {"w", 0},
		"custom:switches=A+A,hosts=A:1":               {"switches", 2},
		"custom:switches=A+b-c,hosts=A:1":             {"switches", 2},
		"custom:switches=A+B,links=A-B+B-Q,hosts=A:1": {"links", 2},
		"custom:switches=A+B,links=A-A,hosts=A:1":     {"links", 1},
		"custom:switches=A+B,hosts=A:1":               {"links", 0},
		"custom:switches=A+B,links=A-B,hosts=A:0":     {"hosts", 0},
		"custom:switches=A,hosts=A:-1":                {"hosts", 1},
	} {
		_, err := ParseSpec(s)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != want.param || pe.Item != want.item {
			t.Errorf("%s: error %v, want one naming %s item %d", s, err, want.param, want.item)
		}
	}
	for _, s := range []string{"xgft:dims=4", "xgft:h=2,m=2xx2,w=1x2", "custom:switches=A,hosts=B:1", "custom:switches=A,hosts=A", "custom:switches=A,links=AB,hosts=A:1", "custom:switches=A,t=1"} {
		if _, err := ParseSpec(s); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}
