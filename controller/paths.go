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
//     so all frames to a leaf converge (D-mod-k routing).
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
			return portTo(s, d)
		}
		via := ds.Coords[0] + (1-s.Coords[1])*sp.N // the other column, the destination's row
		return portTo(s, via)
	case topology.FatTree:
		return c.fatTreeHop(s, ds)
	}
	return -1
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
		dir := 1
		if t < c {
			dir = -1
		}
		lane := 0
		if sp.Kind != topology.Mesh && k > 2 {
			fwd := (t - c + k) % k
			dir = 1
			if k-fwd < fwd {
				dir = -1
			}
			// Lane 0 until the wrap link is crossed: going forward from
			// above the target, or back from below it.
			if sp.Links == 2 && !((dir == 1 && c > t) || (dir == -1 && c < t)) {
				lane = 1
			}
		}
		for _, p := range s.Ports {
			if p.Class != topology.ClassHost && p.Dim == dim && p.Lane == lane && (p.Dir == dir || k == 2) {
				return int32(p.Num)
			}
		}
		return -1
	}
	return -1
}

// treeHop follows the M-tree: down if d is below s, else up. A switch's
// parent is one step back along its highest non-zero coordinate.
func (c *Controller) treeHop(s, ds *topology.Switch) int32 {
	parent := func(x *topology.Switch) *topology.Switch {
		for dim := len(x.Coords) - 1; dim >= 0; dim-- {
			if x.Coords[dim] != 0 {
				for _, p := range x.Ports {
					if p.Class != topology.ClassHost && p.Dim == dim && p.Dir == -1 {
						return &c.top.Switches[p.Peer.Switch]
					}
				}
			}
		}
		return nil // the root
	}
	for x := ds; x != nil; {
		up := parent(x)
		if up != nil && up.ID == s.ID {
			return portTo(s, x.ID)
		}
		x = up
	}
	return portTo(s, parent(s).ID)
}

// fatTreeHop routes up/down (see the package comment above pathHop).
func (c *Controller) fatTreeHop(s, ds *topology.Switch) int32 {
	sp := c.top.Spec
	w := sp.D / sp.U
	leaf := ds.Index
	// span[j]: leaves under one level-j group.
	span := sp.D
	for j := 1; j < s.Level-1; j++ {
		span *= w
	}
	digit := func(level int) int {
		v := leaf
		for j := 1; j < level; j++ {
			v /= sp.U
		}
		return v % sp.U
	}
	first := func(level int) int { return c.levelFirst[level] }
	level := s.Level - 1
	if level > 0 && leaf/span == s.Index/sp.U {
		// Down: into the destination's group one level below.
		if level == 1 {
			return portTo(s, ds.ID)
		}
		return portTo(s, first(level-1)+(leaf/(span/w))*sp.U+digit(level-1))
	}
	// Up: the group above holds s's index / D of this level.
	return portTo(s, first(level+1)+(s.Index/sp.D)*sp.U+digit(level+1))
}

// levelFirsts is the first switch ID of each fat-tree level (leaves
// first; buildFatTree numbers level by level).
func levelFirsts(t *topology.Topology) []int {
	var first []int
	for i := range t.Switches {
		if l := t.Switches[i].Level - 1; l >= len(first) {
			first = append(first, i)
		}
	}
	return first
}

// portTo is s's first port to switch d.
func portTo(s *topology.Switch, d int) int32 {
	for _, p := range s.Ports {
		if p.Class != topology.ClassHost && p.Peer.Switch == d {
			return int32(p.Num)
		}
	}
	return -1
}
