package controller

import (
	"fmt"
	"math"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
)

func compile(t testing.TB, spec string, sc addressing.Scheme, o Options) *Controller {
	t.Helper()
	sp, err := topology.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return compileSpec(t, sp, sc, o)
}

func compileSpec(t testing.TB, sp topology.Spec, sc addressing.Scheme, o Options) *Controller {
	t.Helper()
	top, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := addressing.New(top, sc, o.Compact)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(plan, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Shapes include the odd ones: g < a*h+1, t != k,
// one-dimensional FB, partial Clos.
var verifyShapes = []string{
	"dragonfly:p=2,a=4,h=2",
	"dragonfly:p=2,a=4,h=2,g=5",
	"dragonfly:p=3,a=3,h=2,g=2",
	"dragonfly:p=1,a=5,h=1,g=3",
	"dragonfly:p=2,a=1,h=3",
	"flatfly:dims=5,t=2",
	"flatfly:dims=3x3,t=2",
	"flatfly:dims=4x3x2,t=3",
	"flatfly:dims=2x3x2x2,t=1",
	"clos:k=4",
	"clos:k=6,pods=3",
	"clos:k=4,levels=4",
	"clos:k=6,levels=4,pods=5",
}

func TestEveryPairDeliveredWithinBound(t *testing.T) {
	for _, spec := range verifyShapes {
		for _, sc := range addressing.Schemes {
			for _, mode := range []Mode{Minimal, Valiant, Conditional} {
				for _, compact := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/%s/compact=%v", spec, sc, mode, compact)
					c := compile(t, spec, sc, Options{Mode: mode, Compact: compact})
					r, err := Verify(NewTables(c), VerifyOptions{})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if r.Failures+r.BroadcastFailures+r.DMPFailures != 0 || r.Sampled {
						t.Fatalf("%s: %d unicast, %d broadcast, %d DMP failures, e.g. %+v", name, r.Failures, r.BroadcastFailures, r.DMPFailures, r.Examples)
					}
					if r.MaxHops > r.HopBound {
						t.Fatalf("%s: %d hops > %d", name, r.MaxHops, r.HopBound)
					}
				}
			}
		}
	}
}

// The walk must be able to fail: break a table and see it caught.
func TestVerifyCatchesBrokenTables(t *testing.T) {
	c := compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, Options{})
	ts := NewTables(c)
	tab, _ := ts.Get(5)
	for i := range tab.Rules {
		if tab.Rules[i].Kind == KindRouting && len(tab.Rules[i].Out) == 1 {
			tab.Rules[i].Out[0] = int32(1) // misdeliver to host port 1
		}
	}
	r, err := Verify(ts, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failures == 0 {
		t.Fatal("a misrouting table passed the walk")
	}
	loop := NewTables(compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, Options{}))
	a, _ := loop.Get(0)
	for i := range a.Rules {
		if a.Rules[i].Kind == KindBroadcast {
			a.Rules[i].Out = append(a.Rules[i].Out, 3, 4, 5, 6, 7) // flood on every port
		}
	}
	if r, _ := Verify(loop, VerifyOptions{}); r.BroadcastFailures == 0 {
		t.Fatal("a flooding broadcast passed the walk")
	}
}

// Seed 000 Eq. 1: uncompacted per-group routing rules per access switch are
// R = (G-1) + (S-1) + T; per-switch addressing gives (switches-1) + T.
func TestEquationOne(t *testing.T) {
	for _, c := range []struct {
		spec    string
		G, S, T int
	}{
		{"dragonfly:p=2,a=4,h=2", 9, 4, 2},
		{"dragonfly:p=4,a=8,h=4", 33, 8, 4},
		{"dragonfly:p=3,a=3,h=2,g=5", 5, 3, 3},
		{"flatfly:dims=4x4,t=3", 4, 4, 3},
		{"flatfly:dims=4x3x2,t=2", 6, 4, 2},
	} {
		for _, sc := range []addressing.Scheme{addressing.PerGroup, addressing.PerSwitch} {
			ctl := compile(t, c.spec, sc, Options{})
			st, err := ctl.Stats(nil)
			if err != nil {
				t.Fatal(err)
			}
			want := (c.G - 1) + (c.S - 1) + c.T
			if sc == addressing.PerSwitch {
				want = c.G*c.S - 1 + c.T
			}
			r := st.ByKind["routing"]
			if r.Min != want || r.Max != want {
				t.Errorf("%s %s: routing rules %+v, want %d", c.spec, sc, r, want)
			}
			if d := st.ByKind["dmp"]; d.Min != c.T || d.Max != c.T {
				t.Errorf("%s: DMP rules %+v, want %d", c.spec, d, c.T)
			}
		}
	}
}

// Seed 000 §III-B: compact FB (any dimension) and compact Clos reach the
// port count; compact DF lies between the port count and Eq. 1.
func TestCompactionReachesThePaper(t *testing.T) {
	for _, spec := range []string{"flatfly:dims=4x4,t=4", "flatfly:dims=3x4x5,t=3", "flatfly:dims=6,t=2", "clos:k=4", "clos:k=8", "clos:k=4,levels=4"} {
		ctl := compile(t, spec, addressing.PerGroup, Options{Compact: true})
		for sw := range ctl.top.Switches {
			tab, err := ctl.Table(sw)
			if err != nil {
				t.Fatal(err)
			}
			n := tab.Count(KindRouting) + tab.Count(KindUplink)
			if ports := len(ctl.top.Switches[sw].Ports); n != ports {
				t.Errorf("%s: %s has %d routing rules, port count %d", spec, ctl.top.Switches[sw].Name, n, ports)
			}
		}
	}
	for _, spec := range []string{"dragonfly:p=2,a=4,h=2", "dragonfly:p=4,a=8,h=4", "dragonfly:p=3,a=6,h=3,g=12"} {
		ctl := compile(t, spec, addressing.PerGroup, Options{Compact: true})
		full := compile(t, spec, addressing.PerGroup, Options{})
		for sw := range ctl.top.Switches {
			a, _ := ctl.Table(sw)
			b, _ := full.Table(sw)
			ports := len(ctl.top.Switches[sw].Ports)
			if n := a.Count(KindRouting); n < ports || n > b.Count(KindRouting) {
				t.Errorf("%s: %s compact %d outside [%d, %d]", spec, ctl.top.Switches[sw].Name, n, ports, b.Count(KindRouting))
			}
		}
	}
}

func TestOpenFlowText(t *testing.T) {
	c := compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, Options{})
	tab, _ := c.Table(4)
	txt := tab.OpenFlow()
	for _, want := range []string{
		"cookie=0x4,priority=40000,in_port=1,dl_type=0x88b5,actions=set_field:02:00:00:01:00:01->eth_src,IN_PORT",
		"dl_dst=01:00:00:00:00:00/01:00:00:00:00:00",
		"cookie=0x6,priority=0,actions=drop",
	} {
		if !contains(txt, want) {
			t.Errorf("table lacks %q:\n%s", want, txt)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestCookieRoundTrip(t *testing.T) {
	for _, k := range Kinds() {
		got, ok := KindOfCookie(k.Cookie())
		if !ok || got != k {
			t.Errorf("kind %s: cookie %#x decodes to %v, %v", k, k.Cookie(), got, ok)
		}
	}
	if _, ok := KindOfCookie(0); ok {
		t.Error("cookie 0 (not set by ethfab) decoded as a kind")
	}
}

// assign rewrite (PortLand/MOOSE): table 0 maps each host's original source
// to its pseudo-MAC on its own port only; delivery restores the original
// destination; original MACs route nowhere; routing is unchanged.
func TestRewrite(t *testing.T) {
	for _, spec := range verifyShapes {
		for _, compact := range []bool{false, true} {
			plain := compile(t, spec, addressing.PerGroup, Options{Compact: compact})
			top := plain.top
			orig := make([]addressing.MAC, len(top.Hosts))
			for h := range orig {
				orig[h] = 0x0e0000000000 | addressing.MAC(h*7919+1)
			}
			c := compile(t, spec, addressing.PerGroup, Options{Compact: compact, Originals: orig})
			r, err := Verify(NewTables(c), VerifyOptions{})
			if err != nil || r.Failures+r.BroadcastFailures+r.DMPFailures != 0 {
				t.Fatalf("%s: verify %v %+v", spec, err, r)
			}
			for sw := range top.Switches {
				tab, _ := c.Table(sw)
				ref, _ := plain.Table(sw)
				if got, want := tab.Count(KindRewrite), top.Switches[sw].NumHosts+1; got != want {
					t.Errorf("%s %s: %d rewrite rules, want %d", spec, top.Switches[sw].Name, got, want)
				}
				if len(tab.Rules) != len(ref.Rules)+tab.Count(KindRewrite) {
					t.Errorf("%s: rewrite changed the routing table", spec)
				}
				for _, p := range top.Switches[sw].Ports {
					if p.Class != topology.ClassHost {
						continue
					}
					var r0 *Rule
					for i := range tab.Rules {
						if tab.Rules[i].Kind == KindRewrite && tab.Rules[i].Match.InPort == p.Num {
							r0 = &tab.Rules[i]
						}
					}
					if r0 == nil || r0.Match.Src != orig[p.Host] || r0.SetSrc != c.plan.HostMAC(p.Host) || r0.Goto != TableRouting {
						t.Errorf("%s port %d: ingress rewrite %+v", top.Switches[sw].Name, p.Num, r0)
					}
					d := tab.Lookup(top.Switches[(sw+1)%len(top.Switches)].Ports[0].Num, c.plan.HostMAC(p.Host), ethertype.Traffic)
					if d == nil || len(d.Out) != 1 || int(d.Out[0]) != p.Num || d.SetDst != orig[p.Host] {
						t.Errorf("%s: delivery to %s does not restore its original MAC: %+v", top.Switches[sw].Name, top.Hosts[p.Host].Name, d)
					}
				}
			}
			// Safety: a frame addressed to an original MAC reaches no host
			// (it may climb a Clos before the core drops it).
			for src := range top.Hosts {
				for _, dst := range []int{(src + 1) % len(orig), (src + len(orig)/2) % len(orig)} {
					if got := walkTo(t, c, src, orig[dst]); got >= 0 {
						t.Fatalf("%s: frame from %s to original MAC %s delivered to %s", spec, top.Hosts[src].Name, orig[dst], top.Hosts[got].Name)
					}
				}
			}
		}
	}
}

// walkTo follows a unicast frame and returns the host it reaches, or -1.
func walkTo(t *testing.T, c *Controller, src int, dst addressing.MAC) int {
	top := c.top
	sw, in := top.Hosts[src].Switch, top.Hosts[src].Port
	for hops := 0; hops <= c.HopBound()+1; hops++ {
		tab, err := c.Table(sw)
		if err != nil {
			t.Fatal(err)
		}
		r := tab.Lookup(in, dst, ethertype.Traffic)
		if r == nil || len(r.Out) != 1 || r.Out[0] == PortInPort {
			return -1
		}
		p := top.Switches[sw].Port(int(r.Out[0]))
		if p.Class == topology.ClassHost {
			return p.Host
		}
		sw, in = p.Peer.Switch, p.Peer.Port
	}
	t.Fatalf("frame to %s from %s loops", dst, top.Hosts[src].Name)
	return -1
}

// RoutingEntries counts, per switch, what Stats counts by kind: routing
// plus Clos uplink rules.
func TestRoutingEntries(t *testing.T) {
	for _, spec := range []string{"clos:k=4", "dragonfly:p=2,a=4,h=2"} {
		c := compile(t, spec, addressing.PerGroup, Options{Compact: true})
		got, err := c.RoutingEntries(nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Stats(nil)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, n := range got {
			sum += n
		}
		want := (st.ByKind["routing"].Mean + st.ByKind["uplink"].Mean) * float64(st.Switches)
		if len(got) != st.Switches || math.Abs(float64(sum)-want) > 0.5 {
			t.Errorf("%s: %d switches, %d entries; Stats: %d switches, %.0f", spec, len(got), sum, st.Switches, want)
		}
		one, err := c.RoutingEntries([]int{1})
		if err != nil || len(one) != 1 || one[0] != got[1] {
			t.Errorf("%s: switch 1 alone %v, %v; in all %d", spec, one, err, got[1])
		}
	}
}
