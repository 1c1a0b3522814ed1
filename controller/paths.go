package controller

import "github.com/ethfab/ethfab/topology"

// Minimal routing on seed 002's topologies (meshes, tori, rings, M-trees,
// Myrinet-Clos, fat trees): the deterministic minimal path sets its
// §C.2 assigns VLANs over, as destination-based next hops, with one entry
// per destination host (flat addressing) or switch (per-switch):
//
//   - mesh: dimension order, the first dimension first;
//   - torus and ring: dimension order, each dimension the shorter way
//     round, ties forward (+); with two links between neighbours, lane 0
//     for a frame that has yet to cross the wrap link of that dimension's
//     ring and lane 1 otherwise, so no ring's lanes form a cycle (the
//     dateline of Table 3's tori);
//   - M-tree: the tree's one path;
//   - Myrinet-Clos: straight across; between two switches of one column
//     through the other column's switch in the destination's row;
//   - fat tree: up to the lowest level whose group holds the destination,
//     then down; at each level the switch is the destination leaf's digit
//     (leaf / U^(level-1)) mod U of its group, going up and coming down,
//     so all frames to a leaf converge (D-mod-k routing);
//   - XGFT (seed 003): up until a switch above the destination, then down
//     by the destination's digits; going up at level l through parent
//     floor(x / (w1 ... wl)) mod w(l+1) for destination x (d-mod-m), a
//     host by host choice with flat addressing (per switch: the leaf's
//     first host);
//   - custom: breadth-first shortest paths, the lowest-numbered port where
//     several are shortest (the links' order in the scenario decides).
//
// Every one is a shortest path (TestPathsAreShortest), so HopBound is the
// topology's diameter.

// pathHop is the first hop from switch s towards switch d (s != d).
func (c *Controller) pathHop(s *topology.Switch, d int) int32 {
	sp := c.top.Spec
	ds := &c.top.Switches[d]
	switch sp.Kind {
	case topology.Mesh, topology.Torus, topology.Ring:
		return gridHop(sp, s, ds)
	case topology.MTree:
		return c.treeHop(s, ds)
	case topology.MyriClos:
		if s.Coords[1] != ds.Coords[1] {
			return int32(c.top.PortTo(s.ID, d))
		}
		via := ds.Coords[0] + (1-s.Coords[1])*sp.N // the other column, the destination's row
		return int32(c.top.PortTo(s.ID, via))
	case topology.FatTree:
		return c.fatTreeHop(s, ds)
	case topology.XGFT:
		return c.xgftHop(s, ds.Index*sp.M[0])
	case topology.Custom:
		return int32(c.ShortestPorts(s.ID, d)[0])
	}
	return -1
}

// xgftHop routes up/down towards compute node x (see above pathHop).
func (c *Controller) xgftHop(s *topology.Switch, x int) int32 {
	sp := c.top.Spec
	l, xd := s.Level, sp.XGFTLabel(0, x)
	for j := l + 1; j <= sp.H; j++ {
		if s.Coords[j-1] != xd[j-1] {
			return int32(sp.M[l-1] + sp.XGFTUpPort(l, x) + 1)
		}
	}
	return int32(xd[l-1] + 1) // down ports first, by child digit
}

// ShortestPorts are the ports of switch s on a shortest path to switch d
// (which has hosts) of a custom fabric, lowest first.
func (c *Controller) ShortestPorts(s, d int) []int {
	dist := c.dist[d]
	var out []int
	for _, p := range c.top.Switches[s].Ports {
		if p.Class != topology.ClassHost && dist[p.Peer.Switch] == dist[s]-1 {
			out = append(out, p.Num)
		}
	}
	return out
}

// gridHop corrects the first dimension that differs.
func gridHop(sp topology.Spec, s, ds *topology.Switch) int32 {
	dims := sp.Dims
	if sp.Kind == topology.Ring {
		dims = []int{sp.N}
	}
	for dim, k := range dims {
		c, t := s.Coords[dim], ds.Coords[dim]
		if c == t {
			continue
		}
		dir := topology.GridDir(sp.Kind, c, t, k)
		// Lane 0 until the wrap link is crossed: going forward from
		// above the target, or back from below it.
		lane := 0
		if sp.Links == 2 && !((dir == 1 && c > t) || (dir == -1 && c < t)) {
			lane = 1
		}
		return int32(s.GridPort(dim, dir, lane))
	}
	return -1
}

// treeHop follows the M-tree: down if d is below s, else up.
func (c *Controller) treeHop(s, ds *topology.Switch) int32 {
	for x := ds.ID; x >= 0; {
		up := c.top.TreeParent(x)
		if up == s.ID {
			return int32(c.top.PortTo(s.ID, x))
		}
		x = up
	}
	return int32(c.top.PortTo(s.ID, c.top.TreeParent(s.ID)))
}

// fatTreeHop routes up/down (see the package comment above pathHop).
func (c *Controller) fatTreeHop(s, ds *topology.Switch) int32 {
	sp := c.top.Spec
	leaf, level := ds.Index, s.Level-1
	if level > 0 && leaf/sp.FatTreeSpan(level) == s.Index/sp.U {
		// Down: into the destination's group one level below.
		if level == 1 {
			return int32(c.top.PortTo(s.ID, ds.ID))
		}
		return int32(c.top.PortTo(s.ID, c.levelFirst[level-1]+(leaf/sp.FatTreeSpan(level-1))*sp.U+sp.FatTreeDigit(leaf, level-1)))
	}
	// Up: the group above holds s's index / D of this level.
	return int32(c.top.PortTo(s.ID, c.levelFirst[level+1]+(s.Index/sp.D)*sp.U+sp.FatTreeDigit(leaf, level+1)))
}
