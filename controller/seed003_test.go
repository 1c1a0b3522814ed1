package controller

import (
	"fmt"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/topotest"
	"github.com/ethfab/ethfab/topology"
)

var seed003Shapes = []string{
	"xgft:h=2,m=8x16,w=1x8", "xgft:h=3,m=3x2x2,w=1x2x3", "xgft:h=3,m=2x1x3,w=1x2x2", "xgft:h=1,m=4,w=1",
	"custom:switches=A+B+C,links=A-B+B-C+A-C,hosts=A:1+C:2",
	"custom:switches=a1+a2+s7+s8+m1+n1+b1+b2,links=a1-s7+a2-s7+s7-s8+s8-b1+s8-b2+a1-m1+m1-n1+n1-b1,hosts=a1:1+a2:1+b1:1+b2:1",
	"custom:switches=A+B,links=A-B+A-B,hosts=A:2+B:2",
}

// Shortest routing on XGFTs and custom fabrics: every pair delivered
// within the diameter, broadcasts once, flat and per switch, compacted.
func TestSeed003PairsDelivered(t *testing.T) {
	for _, spec := range seed003Shapes {
		for _, sc := range []addressing.Scheme{addressing.Flat, addressing.PerSwitch} {
			for _, compact := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/compact=%v", spec, sc, compact)
				c := compile(t, spec, sc, Options{Mode: Shortest, Compact: compact})
				r, err := Verify(NewTables(c), VerifyOptions{})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if r.Failures+r.BroadcastFailures+r.DMPFailures != 0 || r.MaxHops > r.HopBound {
					t.Fatalf("%s: %d unicast, %d broadcast, %d DMP failures, %d hops (bound %d), e.g. %+v", name, r.Failures, r.BroadcastFailures, r.DMPFailures, r.MaxHops, r.HopBound, r.Examples)
				}
			}
		}
	}
}

// Host by host, an XGFT path is a shortest one, climbs at level l through
// the d-mod-m parent floor(x / (w1 ... wl)) mod w(l+1) of its destination
// x, and so all paths to x meet at x's top switch: the top switch is a
// function of x alone. A custom fabric's path is a shortest one and
// takes the lowest-numbered shortest port.
func TestSeed003PathsAreShortest(t *testing.T) {
	for _, spec := range seed003Shapes {
		c := compile(t, spec, addressing.Flat, Options{Mode: Shortest})
		top, sp := c.top, c.top.Spec
		for src := range top.Switches {
			dist := bfs(top, src)
			for x := range top.Hosts {
				dst := top.Hosts[x].Switch
				if dst == src {
					continue
				}
				hops, at, peak := 0, src, -1
				for at != dst && hops <= len(top.Switches) {
					s := &top.Switches[at]
					port := c.hostHop(s, x)
					if port < 1 || int(port) > len(s.Ports) || s.Port(int(port)).Class == topology.ClassHost {
						t.Fatalf("%s: %s -> host %d: port %d at %s", spec, top.Switches[src].Name, x, port, s.Name)
					}
					p := s.Port(int(port))
					switch sp.Kind {
					case topology.XGFT:
						if p.Up {
							if want := sp.M[s.Level-1] + sp.XGFTUpPort(s.Level, x) + 1; int(port) != want {
								t.Fatalf("%s: %s climbs by port %d towards host %d, d-mod-m says %d", spec, s.Name, port, x, want)
							}
							peak = p.Peer.Switch
						}
					case topology.Custom:
						if want := c.ShortestPorts(at, dst)[0]; int(port) != want {
							t.Fatalf("%s: %s -> %s by port %d, lowest shortest %d", spec, s.Name, top.Switches[dst].Name, port, want)
						}
					}
					at = p.Peer.Switch
					hops++
				}
				if hops != dist[dst] {
					t.Fatalf("%s: %s -> host %d in %d hops, shortest %d", spec, top.Switches[src].Name, x, hops, dist[dst])
				}
				if sp.Kind == topology.XGFT && peak >= 0 && top.Switches[peak].Level == sp.H && top.Switches[src].Level == 1 {
					// The top switch's parent digits are x's d-mod-m digits.
					for l := 1; l < sp.H; l++ {
						if got, want := top.Switches[peak].Coords[l], sp.XGFTUpPort(l, x); got != want {
							t.Fatalf("%s: host %d reached through top switch %s (digit %d = %d, want %d)", spec, x, top.Switches[peak].Name, l+1, got, want)
						}
					}
				}
			}
		}
	}
}

// Shortest routing is refused where seed 000's schemes route, and the
// path-routed kinds refuse the other modes.
func TestShortestRefusals(t *testing.T) {
	for _, c := range []struct {
		spec string
		mode Mode
	}{{"dragonfly:p=2,a=4,h=2", Shortest}, {"xgft:h=2,m=2x2,w=1x2", Valiant}, {"custom:switches=A+B,links=A-B,hosts=A:1+B:1", Conditional}, {"xgft:h=2,m=2x2,w=1x2", VLAN}} {
		top := topotest.Build(t, c.spec)
		sc := addressing.Flat
		plan, err := addressing.New(top, sc, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(plan, Options{Mode: c.mode}); err == nil {
			t.Errorf("%s with %s routing: accepted", c.spec, c.mode)
		}
	}
}

// Every sequence of eligible choices on XGFTs and custom fabrics reaches
// its destination within the hop bound without a loop; the static choice
// comes first; an XGFT switch below its destination's top may climb by
// any of its up ports.
func TestEligibleLoopFree(t *testing.T) {
	for _, spec := range seed003Shapes {
		c := compile(t, spec, addressing.Flat, Options{Mode: Shortest})
		r := c.VerifyEligible()
		if r.Failures != 0 || r.MaxHops > c.HopBound() || (r.Lists == 0 && len(c.top.Switches) > 1) {
			t.Fatalf("%s: %+v", spec, r)
		}
		for s := range c.top.Switches {
			sw := &c.top.Switches[s]
			for h := range c.top.Hosts {
				l := c.Eligible(s, h)
				if c.top.Hosts[h].Switch == s {
					if l != nil {
						t.Fatalf("%s: %s lists ports %v for its own host", spec, sw.Name, l)
					}
					continue
				}
				if l[0] != int(c.hostHop(sw, h)) {
					t.Fatalf("%s: %s towards host %d prefers %d, static route %d", spec, sw.Name, h, l[0], c.hostHop(sw, h))
				}
				if c.top.Spec.Kind == topology.XGFT && sw.Port(l[0]).Up && len(l) != c.top.Spec.W[sw.Level] {
					t.Fatalf("%s: %s climbs towards host %d by %v, want all %d up ports", spec, sw.Name, h, l, c.top.Spec.W[sw.Level])
				}
			}
		}
	}
	// Topology 1 of seed 003's 3-flow experiment: A1 reaches B1 through
	// S7 (preferred) or M1.
	c := compile(t, seed003Shapes[5], addressing.Flat, Options{Mode: Shortest})
	if got := c.Eligible(0, 2); len(got) != 2 || c.top.Switches[0].Port(got[0]).Peer.Switch != 2 || c.top.Switches[0].Port(got[1]).Peer.Switch != 4 {
		t.Fatalf("a1 towards b1h0: %v", got)
	}
}

// Snoop-based adaptive routing compiles the shortest routing's tables
// with one movable rule per remote destination host, whose port is the
// first eligible one; it needs eligible ports, flat addressing and no
// compaction.
func TestSnoopARTables(t *testing.T) {
	for _, spec := range seed003Shapes {
		c := compile(t, spec, addressing.Flat, Options{Mode: SnoopAR})
		s := compile(t, spec, addressing.Flat, Options{Mode: Shortest})
		for sw := range c.top.Switches {
			a, err := c.Table(sw)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := s.Table(sw)
			if len(a.Rules) != len(b.Rules) {
				t.Fatalf("%s: switch %d has %d rules under snoop-ar, %d under shortest", spec, sw, len(a.Rules), len(b.Rules))
			}
			for h := range c.top.Hosts {
				i := c.AdaptiveRule(a, h)
				if c.top.Hosts[h].Switch == sw {
					if i >= 0 {
						t.Fatalf("%s: switch %d moves its own host %d's rule", spec, sw, h)
					}
					continue
				}
				if i < 0 || int(a.Rules[i].Out[0]) != c.Eligible(sw, h)[0] {
					t.Fatalf("%s: switch %d, host %d: rule %d, want one out of the first eligible port %d", spec, sw, h, i, c.Eligible(sw, h)[0])
				}
			}
		}
	}
	for _, c := range []struct {
		spec    string
		sc      addressing.Scheme
		compact bool
	}{{"mesh:dims=3x3", addressing.Flat, false}, {seed003Shapes[0], addressing.PerSwitch, false}, {seed003Shapes[0], addressing.Flat, true}, {"dragonfly:p=1,a=2,h=1", addressing.Flat, false}} {
		top := topotest.Build(t, c.spec)
		plan, err := addressing.New(top, c.sc, c.compact)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(plan, Options{Mode: SnoopAR, Compact: c.compact}); err == nil {
			t.Errorf("snoop-ar on %s, %s addressing, compact %v: accepted", c.spec, c.sc, c.compact)
		}
	}
}

// The 3-flow topologies of snoop-3flow.yaml (spec §B.3): the max-min
// fair shares `plan --flows` prints and the scenario's checks use. With
// a private path per flow, adaptive routing can give every flow its whole
// link; with end-point contention every choice leaves the static share.
func TestFlowShares(t *testing.T) {
	const (
		t1   = "custom:switches=A1+A2+A3+S7+S8+B1+B2+B3+M1+M2+M3+N1+N2+N3,links=A1-S7+A2-S7+A3-S7+S7-S8+S8-B1+S8-B2+S8-B3+A1-M1+M1-N1+N1-B1+A2-M2+M2-N2+N2-B2+A3-M3+M3-N3+N3-B3,hosts=A1:1+A2:1+A3:1+B1:1+B2:1+B3:1"
		t1ep = "custom:switches=A1+A2+A3+S7+S8+D+E+M1+M2+M3+N1+N2+N3,links=A1-S7+A2-S7+A3-S7+S7-S8+S8-D+D-E+A1-M1+M1-N1+N1-D+A2-M2+M2-N2+N2-D+A3-M3+M3-N3+N3-D,hosts=A1:1+A2:1+A3:1+E:3"
		t3   = "custom:switches=A1+A2+A3+P+Q+R+B1+B2+B3+M1+N1+M2+N2+O2+M3+N3,links=A1-P+A2-P+A3-Q+P-Q+Q-R+Q-B1+R-B2+R-B3+A1-M1+M1-N1+N1-B1+A2-M2+M2-N2+N2-O2+O2-B2+A3-M3+M3-N3+N3-B3,hosts=A1:1+A2:1+A3:1+B1:1+B2:1+B3:1"
		t3ep = "custom:switches=A1+A2+CX+SX+SY+P1+M1+P2+M2,links=A1-P1+P1-CX+A2-P2+P2-CX+CX-SX+SX-SY+A1-M1+M1-CX+A2-M2+M2-CX,hosts=A1:1+A2:1+SX:2+SY:2"
	)
	for _, tc := range []struct {
		spec            string
		flows           [][2]string
		static, best    float64 // every flow's share
		meanMin, meanMx float64
	}{
		{t1, [][2]string{{"A1h0", "B1h0"}, {"A2h0", "B2h0"}, {"A3h0", "B3h0"}}, 1.0 / 3, 1, 1.0 / 3, 1},
		{t1ep, [][2]string{{"A1h0", "Eh0"}, {"A2h0", "Eh1"}, {"A3h0", "Eh2"}}, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3},
		{t3, [][2]string{{"A1h0", "B1h0"}, {"A2h0", "B2h0"}, {"A3h0", "B3h0"}}, 0.5, 1, 0.5, 1},
		{t3ep, [][2]string{{"A1h0", "SXh1"}, {"A2h0", "SYh0"}, {"SXh0", "SYh1"}}, 0.5, 0.5, 0.5, 0.5},
	} {
		c := compile(t, tc.spec, addressing.Flat, Options{Mode: Shortest})
		byName := map[string]int{}
		for _, h := range c.top.Hosts {
			byName[h.Name] = h.ID
		}
		flows := make([][2]int, len(tc.flows))
		for i, f := range tc.flows {
			flows[i] = [2]int{byName[f[0]], byName[f[1]]}
		}
		fs, err := c.FlowShares(flows)
		if err != nil {
			t.Fatal(err)
		}
		near := func(a, b float64) bool { return a > b-1e-9 && a < b+1e-9 }
		for i := range flows {
			if !near(fs.Static[i], tc.static) || !near(fs.Best[i], tc.best) {
				t.Errorf("%s: flow %d static %.4f best %.4f, want %.4f and %.4f", tc.spec[:40], i+1, fs.Static[i], fs.Best[i], tc.static, tc.best)
			}
		}
		if !near(fs.MeanMin, tc.meanMin) || !near(fs.MeanMax, tc.meanMx) || fs.Choices < 2 {
			t.Errorf("%s: mean over %d choices %.4f..%.4f, want %.4f..%.4f", tc.spec[:40], fs.Choices, fs.MeanMin, fs.MeanMax, tc.meanMin, tc.meanMx)
		}
	}
}
