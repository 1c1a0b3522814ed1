package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

var seed002Shapes = []string{
	"mesh:dims=4x4", "mesh:dims=4x2,t=2", "mesh:dims=3x2x3", "mesh:dims=5",
	"torus:dims=4x4", "torus:dims=4x2,t=2", "torus:dims=5x3,links=2", "torus:dims=4x4x3,links=2", "torus:dims=2x2",
	"ring:n=4", "ring:n=2", "ring:n=7,links=2",
	"mtree:dims=4x4", "mtree:dims=3x2x3",
	"myriclos:n=4,t=2", "myriclos:n=1", "myriclos:n=3",
	"fattree:u=2,d=4,r=2", "fattree:u=2,d=4,r=3", "fattree:u=3,d=6,r=2", "fattree:u=1,d=3,r=2", "fattree:u=3,d=3,r=2",
}

// Minimal routing on seed 002's topologies: every pair delivered within
// the diameter, broadcasts once, with flat and per-switch addressing, and
// compacted.
func TestSeed002PairsDelivered(t *testing.T) {
	for _, spec := range seed002Shapes {
		for _, sc := range []addressing.Scheme{addressing.Flat, addressing.PerSwitch} {
			for _, compact := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/compact=%v", spec, sc, compact)
				c := compile(t, spec, sc, Options{Compact: compact})
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

// Every path is a shortest one, and a torus's lanes never close a ring:
// along a dimension a frame keeps lane 0 until it has crossed the wrap
// link, on lane 0, and lane 1 after.
func TestPathsAreShortest(t *testing.T) {
	for _, spec := range seed002Shapes {
		c := compile(t, spec, addressing.PerSwitch, Options{})
		top := c.top
		for src := range top.Switches {
			dist := bfs(top, src)
			for dst := range top.Switches {
				if dst == src || top.Switches[dst].NumHosts == 0 {
					continue
				}
				hops, at, lane, dim := 0, src, 0, -1
				for at != dst && hops <= len(top.Switches) {
					s := &top.Switches[at]
					port := c.pathHop(s, dst)
					if port < 1 || int(port) > len(s.Ports) || s.Port(int(port)).Class == topology.ClassHost {
						t.Fatalf("%s: %s -> %s: port %d at %s", spec, top.Switches[src].Name, top.Switches[dst].Name, port, s.Name)
					}
					p := s.Port(int(port))
					if top.Spec.Links == 2 {
						if p.Dim != dim {
							dim, lane = p.Dim, 0
						}
						peer := top.Switches[p.Peer.Switch]
						wraps := (p.Dir == 1 && peer.Coords[p.Dim] < s.Coords[p.Dim]) || (p.Dir == -1 && peer.Coords[p.Dim] > s.Coords[p.Dim])
						if p.Lane < lane || (wraps && p.Lane != 0) {
							t.Fatalf("%s: %s -> %s: lane %d after lane %d at %s (wrap %v)", spec, top.Switches[src].Name, top.Switches[dst].Name, p.Lane, lane, s.Name, wraps)
						}
						lane = p.Lane
					}
					at = p.Peer.Switch
					hops++
				}
				if hops != dist[dst] {
					t.Fatalf("%s: %s -> %s in %d hops, shortest %d", spec, top.Switches[src].Name, top.Switches[dst].Name, hops, dist[dst])
				}
			}
		}
	}
}

func bfs(top *topology.Topology, src int) []int {
	dist := make([]int, len(top.Switches))
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	for q := []int{src}; len(q) > 0; q = q[1:] {
		for _, p := range top.Switches[q[0]].Ports {
			if p.Class != topology.ClassHost && dist[p.Peer.Switch] < 0 {
				dist[p.Peer.Switch] = dist[q[0]] + 1
				q = append(q, p.Peer.Switch)
			}
		}
	}
	return dist
}

// Seed 002's topologies are routed minimally only, and without groups.
func TestSeed002Refusals(t *testing.T) {
	top, _ := topology.Build(topology.Spec{Kind: topology.Mesh, Dims: []int{3, 3}, T: 1})
	for _, c := range []struct {
		sc   addressing.Scheme
		mode Mode
	}{{addressing.PerGroup, Minimal}, {addressing.PerSwitch, Valiant}, {addressing.Flat, Conditional}, {addressing.Flat, QCNSwitch}} {
		plan, err := addressing.New(top, c.sc, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(plan, Options{Mode: c.mode}); err == nil {
			t.Errorf("mesh with %s addressing, %s routing: accepted", c.sc, c.mode)
		}
	}
}

// hostPort says whether port p of switch sw leads to a host.
func hostPort(c *Controller, sw int, p int32) bool {
	return c.top.Switches[sw].Ports[p-1].Class == topology.ClassHost
}

// VLAN mode compiles each switch as an 802.1Q bridge: table 0 tags an
// untagged frame with its port's PVID (and, fixed, passes a trunk's tagged
// VLANs), table 1 holds a flood per VLAN and the static filtering
// database (a unicast it does not know going on to table 2), table 2
// takes the frames an inter-switch port gets outside every path (while
// paths change) to every destination the switch knows, each table ending
// in a counted miss.
func TestVLANTables(t *testing.T) {
	for _, m := range []vlan.Method{vlan.Renamed, vlan.Fixed} {
		c := compile(t, "mesh:dims=3x3", addressing.PerSwitch, Options{Mode: VLAN, VLANAssign: m})
		a := c.VLANAssignment()
		for sw := range c.top.Switches {
			tab, err := c.Table(sw)
			if err != nil {
				t.Fatal(err)
			}
			as := &a.Switches[sw]
			var classify, trunk, flood, fdb, miss, transitIn, transit, unknown int
			for _, r := range tab.Rules {
				switch {
				case r.Kind == KindMiss:
					miss++
				case r.Kind == KindVLANTransit && r.Table == 1 && r.Goto == 2 && r.PopVLAN && r.Match.DstMask == GroupAddressBit && r.Match.Dst == 0:
					unknown++
				case r.Kind == KindVLANTransit && r.Table == 0 && r.Goto == 2 && r.Priority < PrioRouting:
					transitIn++
				case r.Kind == KindVLANTransit && r.Table == 2 && len(r.Out) == 1 && (r.PushVLAN != 0) == (m == vlan.Fixed && !hostPort(c, sw, r.Out[0])):
					transit++
				case r.Table == 0 && r.Match.VLAN == VLANUntagged && r.PushVLAN == uint16(as.PVID[r.Match.InPort-1]):
					classify++
				case r.Table == 0 && r.Match.VLAN != 0 && r.Goto == 1:
					trunk++
				case r.Table == 1 && r.Match.Dst == Broadcast:
					flood++
				case r.Table == 1 && len(r.Out)+len(r.Untagged) == 1:
					fdb++
				default:
					t.Errorf("%s %s: unexpected rule %s", m, as.Name, r.OpenFlow())
				}
			}
			pvids := 0
			for _, v := range as.PVID {
				if v != 0 {
					pvids++
				}
			}
			tagged := 0
			for _, mb := range as.Members {
				tagged += len(mb.Tagged)
			}
			// Every inter-switch port sends tagged frames outside its
			// VLANs to table 2, and untagged ones too where no path enters.
			inter, unused := 0, 0
			for _, p := range c.top.Switches[sw].Ports {
				if p.Class != topology.ClassHost {
					inter++
					if as.PVID[p.Num-1] == 0 {
						unused++
					}
				}
			}
			if classify != pvids || trunk != tagged || flood != len(as.Members) || fdb != as.MACEntries || miss != 3 ||
				transitIn != inter+unused || transit != len(c.top.Hosts) || unknown != 1 {
				t.Errorf("%s %s: %d classify (%d PVIDs), %d trunk (%d tagged), %d flood (%d VLANs), %d FDB (%d), %d miss, %d to transit (%d ports), %d transit (%d hosts)",
					m, as.Name, classify, pvids, trunk, tagged, flood, len(as.Members), fdb, as.MACEntries, miss, transitIn, inter+unused, transit, len(c.top.Hosts))
			}
			if m == vlan.Renamed && trunk != 0 {
				t.Errorf("renamed %s: tagged trunks", as.Name)
			}
		}
	}
	// While paths change, the new tables keep the old routes below their
	// own: a (2,4,2) fat tree's link t0s0-t1s0 going off, the fixed
	// assignment; t1s0's new paths lead nowhere to t0s0's hosts, so its
	// transit table keeps sending them down the link, below everything
	// the new paths know.
	was := compile(t, "fattree:u=2,d=4,r=2", addressing.PerSwitch, Options{Mode: VLAN, VLANAssign: vlan.Fixed})
	off := vlan.Off{}
	off.Add(0, 8) // t0s0 (leaf 0) and t1s0 (the first switch above the leaves)
	c := compile(t, "fattree:u=2,d=4,r=2", addressing.PerSwitch, Options{Mode: VLAN, VLANAssign: vlan.Fixed, VLANOff: off, VLANWas: was.VLANAssignment()})
	down := int32(c.top.PortTo(8, 0))
	tab, err := c.Table(8)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[addressing.MAC]bool{}
	for _, r := range tab.Rules {
		if r.Table == 2 && r.Priority == PrioRouting-1 {
			if len(r.Out) != 1 || r.Out[0] != down {
				t.Errorf("t1s0 keeps %s", r.OpenFlow())
			}
			kept[r.Match.Dst] = true
		}
	}
	if len(kept) != 2 || !kept[c.plan.HostMAC(0)] || !kept[c.plan.HostMAC(1)] {
		t.Errorf("t1s0 keeps old routes to %v, want t0s0's two hosts", kept)
	}
	top, _ := topology.Build(topology.Spec{Kind: topology.Dragonfly, P: 1, A: 2, H: 1, G: 3})
	plan, _ := addressing.New(top, addressing.PerGroup, false)
	if _, err := New(plan, Options{Mode: VLAN}); err == nil {
		t.Error("vlan routing on a Dragonfly: accepted")
	}
}

// macs learn compiles a learning bridge (tables 0-3, the learned table
// left to the switch) for the fixed assignment only, and no paths around
// links off.
func TestVLANLearnTables(t *testing.T) {
	c := compile(t, "mesh:dims=3x3", addressing.PerSwitch, Options{Mode: VLAN, VLANAssign: vlan.Fixed, VLANLearn: true, VLANAging: 300 * time.Second})
	tab, err := c.Table(4)
	if err != nil {
		t.Fatal(err)
	}
	var learn, floods int
	for _, r := range tab.Rules {
		if r.Table == LearnTable {
			t.Errorf("compiled into the learned table: %s", r.OpenFlow())
		}
		if strings.Contains(r.OpenFlow(), "learn(table=10,hard_timeout=300,") {
			learn++
		}
		if r.Kind == KindVLANFlood {
			floods++
		}
	}
	if as := &c.VLANAssignment().Switches[4]; learn != 1 || floods != len(as.Members) {
		t.Errorf("%d learn rules, %d unknown-unicast floods for %d VLANs", learn, floods, len(as.Members))
	}
	top := c.top
	plan, _ := addressing.New(top, addressing.PerSwitch, false)
	if _, err := New(plan, Options{Mode: VLAN, VLANAssign: vlan.Renamed, VLANLearn: true}); err == nil {
		t.Error("learning with the renamed assignment accepted")
	}
	off := vlan.Off{}
	off.Add(0, 1)
	if _, err := New(plan, Options{Mode: VLAN, VLANAssign: vlan.Fixed, VLANLearn: true, VLANOff: off}); err == nil {
		t.Error("learning around a link off accepted")
	}
}
