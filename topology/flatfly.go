package topology

import (
	"strconv"
	"strings"
)

// Flattened Butterfly layout (Kim, Dally, Abts, ISCA 2007; seed 000 Fig. 3b):
// switches at the points of a k1 x k2 x ... array, each joined to every other
// switch that differs from it in exactly one coordinate. A switch's ID is its
// coordinates in mixed radix, first dimension fastest, so the switches of one
// row along the first dimension (the paper's addressing group) are
// consecutive.
//
// Port numbers: 1..T hosts, then for each dimension in order, one port per
// other coordinate value in increasing order.

// FlatFlyPort returns the port of a switch with coordinate own in dimension
// dim that leads to coordinate v of that dimension.
func FlatFlyPort(s Spec, dim, own, v int) int {
	p := s.T
	for d := 0; d < dim; d++ {
		p += s.Dims[d] - 1
	}
	if v < own {
		return p + v + 1
	}
	return p + v
}

func buildFlatFly(s Spec) *Topology {
	n := 1
	nports := s.T
	for _, k := range s.Dims {
		n *= k
		nports += k - 1
	}
	t := &Topology{Spec: s, groups: n / s.Dims[0]}
	t.Switches = make([]Switch, 0, n)
	t.Hosts = make([]Host, 0, n*s.T)
	t.Links = make([]Link, 0, n*s.T+n*(nports-s.T)/2) // hosts, then each pair of neighbours once
	for id := 0; id < n; id++ {
		c := make([]int, len(s.Dims))
		r := id
		parts := make([]string, len(s.Dims))
		for d, k := range s.Dims {
			c[d] = r % k
			r /= k
			parts[d] = strconv.Itoa(c[d])
		}
		sid := t.addSwitch(Switch{Name: "s" + strings.Join(parts, "-"), Group: id / s.Dims[0], Index: c[0], Coords: c})
		t.Switches[sid].Ports = make([]Port, 0, nports)
		t.addHosts(sid, s.T)
		t.Switches[sid].Ports = t.Switches[sid].Ports[:nports]
	}
	stride := 1
	for d, k := range s.Dims {
		for id := 0; id < n; id++ {
			own := t.Switches[id].Coords[d]
			for v := own + 1; v < k; v++ {
				peer := id + (v-own)*stride
				t.wire(id, FlatFlyPort(s, d, own, v), peer, FlatFlyPort(s, d, v, own), ClassLocal)
				t.Switches[id].Ports[FlatFlyPort(s, d, own, v)-1].Dim = d
				t.Switches[peer].Ports[FlatFlyPort(s, d, v, own)-1].Dim = d
			}
		}
		stride *= k
	}
	return t
}
