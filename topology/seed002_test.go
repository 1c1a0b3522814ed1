package topology

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

var seed002Shapes = []string{
	"mesh:dims=4x4,t=1", "mesh:dims=4x2,t=2", "mesh:dims=3x2x2", "mesh:dims=5", "mesh:dims=1,t=16", "mesh:dims=4x1",
	"torus:dims=4x4,t=1", "torus:dims=4x2,t=2", "torus:dims=3x3,links=2", "torus:dims=2x2", "torus:dims=5x3x2,t=2",
	"ring:n=4", "ring:n=2", "ring:n=5,links=2", "ring:n=3,t=2",
	"mtree:dims=4x4", "mtree:dims=3x2x4", "mtree:dims=2",
	"myriclos:n=4,t=2", "myriclos:n=1", "myriclos:n=3,t=1",
	"fattree:u=2,d=4,r=2", "fattree:u=2,d=4,r=3", "fattree:u=1,d=3,r=2", "fattree:u=3,d=3,r=2", "fattree:u=2,d=6,r=1,t=1",
}

// Table 11 of seed 002: switches, inter-switch links and Avg.H of the
// testbed topologies, all with 16 hosts.
func TestTable11(t *testing.T) {
	for _, c := range []struct {
		spec            string
		switches, links int
		avgH            float64
	}{
		{"mesh:dims=4x2,t=2", 8, 10, 2.75},
		{"torus:dims=4x2,t=2", 8, 12, 2.50},
		{"myriclos:n=4,t=2", 8, 16, 2.25},
		{"mtree:dims=4x4", 16, 15, 4.81},
		{"mesh:dims=4x4", 16, 24, 3.50},
		{"torus:dims=4x4", 16, 32, 3.00},
		{"fattree:u=2,d=4,r=2", 14, 24, 3.75},
	} {
		top := build(t, c.spec)
		links := len(top.Links) - len(top.Hosts)
		avg, ok := top.AvgPathSwitches()
		if len(top.Switches) != c.switches || links != c.links || len(top.Hosts) != 16 || !ok || math.Round(avg*100)/100 != c.avgH {
			t.Errorf("%s: %d switches, %d links, %d hosts, Avg.H %.4f (ok %v); Table 11 has %d, %d, 16, %.2f",
				c.spec, len(top.Switches), links, len(top.Hosts), avg, ok, c.switches, c.links, c.avgH)
		}
	}
	// The M-tree's 4.81 is 4.8125 with its spine on an edge row.
	if avg, _ := build(t, "mtree:dims=4x4").AvgPathSwitches(); avg != 4.8125 {
		t.Errorf("mtree Avg.H %v, want 4.8125", avg)
	}
}

func TestSeed002Wiring(t *testing.T) {
	saved := shapes
	shapes = seed002Shapes
	defer func() { shapes = saved }()
	TestWiringIsConsistent(t)
	for _, s := range seed002Shapes {
		top := build(t, s)
		if got, want := bfsDiameter(top), top.Diameter(); got != want {
			t.Errorf("%s: breadth-first diameter %d, Diameter() %d", s, got, want)
		}
		h, sw, p := top.Spec.Size()
		if h != len(top.Hosts) || sw != len(top.Switches) || p < top.NumPorts() {
			t.Errorf("%s: Size %d hosts %d switches %d ports, built %d, %d, %d", s, h, sw, p, len(top.Hosts), len(top.Switches), top.NumPorts())
		}
	}
}

// Grid ports lead one step along their dimension, in their direction.
func TestGridPortsStepOneCoordinate(t *testing.T) {
	for _, s := range []string{"mesh:dims=4x3x2", "torus:dims=4x3x2,links=2", "ring:n=5", "mtree:dims=3x3"} {
		top := build(t, s)
		dims := top.Spec.Dims
		if top.Spec.Kind == Ring {
			dims = []int{top.Spec.N}
		}
		for _, sw := range top.Switches {
			for _, p := range sw.Ports {
				if p.Class == ClassHost {
					continue
				}
				peer := top.Switches[p.Peer.Switch]
				for d := range dims {
					want := sw.Coords[d]
					if d == p.Dim {
						want = (sw.Coords[d] + p.Dir + dims[d]) % dims[d]
					}
					if peer.Coords[d] != want {
						t.Errorf("%s: %s port %d (dim %d dir %+d) leads to %s", s, sw.Name, p.Num, p.Dim, p.Dir, peer.Name)
					}
				}
			}
		}
	}
	// A torus's lanes: each neighbour pair joined twice, lanes 0 and 1.
	top := build(t, "torus:dims=3x3,links=2")
	pairs := map[[3]int]int{}
	for _, l := range top.Links {
		if l.Host < 0 {
			a, b := l.A.Switch, l.B.Switch
			pairs[[3]int{min(a, b), max(a, b), top.Switches[a].Port(l.A.Port).Lane}]++
		}
	}
	if len(pairs) != 2*18 {
		t.Errorf("3x3 torus, 2 links: %d (pair, lane) links, want 36", len(pairs))
	}
}

// A fat tree's leaves reach the top by U^R distinct up-paths.
func TestFatTreeUpPaths(t *testing.T) {
	for _, c := range [][3]int{{2, 4, 2}, {2, 4, 3}, {3, 6, 2}, {1, 2, 3}} {
		s := fmt.Sprintf("fattree:u=%d,d=%d,r=%d", c[0], c[1], c[2])
		top := build(t, s)
		var paths func(sw int) int
		paths = func(sw int) int {
			n := 0
			for _, p := range top.Switches[sw].Ports {
				if p.Class != ClassHost && p.Up {
					n += paths(p.Peer.Switch)
				}
			}
			return max(n, 1)
		}
		want := int(math.Pow(float64(c[0]), float64(c[2])))
		for _, sw := range top.Switches {
			if sw.Level == 1 && paths(sw.ID) != want {
				t.Errorf("%s: %s has %d up-paths, want u^r = %d", s, sw.Name, paths(sw.ID), want)
			}
		}
	}
}

func TestSeed002SpecErrors(t *testing.T) {
	for s, param := range map[string]string{
		"mesh:dims=4x0":          "dims",
		"torus:dims=4x1":         "dims",
		"torus:dims=4x4,links=3": "links",
		"ring:n=1":               "n",
		"mtree:dims=4x4,t=-1":    "t",
		"myriclos:n=0":           "n",
		"fattree:u=2,d=3,r=2":    "d",
		"fattree:u=0,d=4,r=2":    "u",
		"fattree:u=2,d=4,r=0":    "r",
	} {
		_, err := ParseSpec(s)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%s: error %v, want one naming %s", s, err, param)
		}
	}
	for _, s := range []string{"mesh:n=4", "ring:dims=4", "myriclos:links=2", "torus:n=3"} {
		if _, err := ParseSpec(s); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
	if sp, _ := ParseSpec("fattree:u=2,d=4,r=2"); sp.String() != "fattree:u=2,d=4,r=2,t=2" {
		t.Errorf("fat tree canonical form %q", sp.String())
	}
}
