package topology

import "fmt"

// Dragonfly layout (Kim et al., ISCA 2008; seed 000 Fig. 3c, seed 004 §II):
// G groups of A switches; the switches of a group form a complete graph; each
// switch has P hosts and H global ports.
//
// Global links use the consecutive ("palmtree") arrangement: seen from group
// gi, the other groups are at offsets 1..G-1 (group (gi+off) mod G). The
// offsets are dealt out in order and in contiguous blocks to the group's
// switches, so switch j serves offsets j*H+1 .. j*H+H when G = A*H+1 (the
// balanced, maximum size, identical to ../shared/bench/mininet_dragonfly.py).
// With fewer groups each switch gets floor or ceil((G-1)/A) offsets, the
// first switches taking the larger blocks, and the remaining global ports
// stay unconnected. The link at offset off of group gi lands on the port of
// offset G-off in group gi+off, so there is exactly one global link per
// group pair.
//
// Port numbers on a switch: 1..P hosts, then the A-1 local ports in order of
// the peer's index, then the connected global ports in order of offset.

// dfBlock returns the first group offset served by switch j and how many.
func dfBlock(s Spec, j int) (first, n int) {
	base, extra := (s.G-1)/s.A, (s.G-1)%s.A
	n = base
	if j < extra {
		n++
	}
	return 1 + j*base + min(j, extra), n
}

// DragonflyGlobalOwner returns which switch index of a group owns the global
// link at group offset off (1..G-1), and which of its global ports (0-based).
func DragonflyGlobalOwner(s Spec, off int) (sw, l int) {
	base, extra := (s.G-1)/s.A, (s.G-1)%s.A
	b := extra * (base + 1)
	if off-1 < b {
		return (off - 1) / (base + 1), (off - 1) % (base + 1)
	}
	return extra + (off-1-b)/base, (off - 1 - b) % base
}

func buildDragonfly(s Spec) *Topology {
	t := &Topology{Spec: s, groups: s.G}
	t.Switches = make([]Switch, 0, s.G*s.A)
	t.Hosts = make([]Host, 0, s.G*s.A*s.P)
	for g := 0; g < s.G; g++ {
		for j := 0; j < s.A; j++ {
			_, n := dfBlock(s, j)
			id := t.addSwitch(Switch{Name: fmt.Sprintf("g%ds%d", g, j), Group: g, Index: j})
			t.Switches[id].Ports = make([]Port, 0, s.P+s.A-1+n)
			t.addHosts(id, s.P)
			t.Switches[id].Ports = t.Switches[id].Ports[:s.P+s.A-1+n]
		}
	}
	swID := func(g, j int) int { return g*s.A + j }
	localPort := func(j, peer int) int {
		if peer < j {
			return s.P + 1 + peer
		}
		return s.P + peer
	}
	for g := 0; g < s.G; g++ {
		for i := 0; i < s.A; i++ {
			for j := i + 1; j < s.A; j++ {
				t.wire(swID(g, i), localPort(i, j), swID(g, j), localPort(j, i), ClassLocal)
			}
		}
	}
	globalPort := func(off int) (sw, port int) {
		j, l := DragonflyGlobalOwner(s, off)
		return j, s.P + s.A - 1 + l + 1
	}
	for g := 0; g < s.G; g++ {
		for off := 1; off < s.G; off++ {
			h := (g + off) % s.G
			if h < g {
				continue
			}
			ja, pa := globalPort(off)
			jb, pb := globalPort(s.G - off)
			t.wire(swID(g, ja), pa, swID(h, jb), pb, ClassGlobal)
		}
	}
	return t
}
