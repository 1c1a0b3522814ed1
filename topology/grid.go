package topology

import (
	"strconv"
	"strings"
)

// Meshes, tori, rings and M-trees (seed 002 Table 11, Figs 1, 4, 5): the
// switches sit at the points of a k1 x k2 x ... array, IDs in mixed radix
// with the first dimension fastest (as a Flattened Butterfly's), T hosts
// each.
//
//   - mesh: each switch is linked to its neighbours one step away in each
//     dimension (k-ary n-cube mesh; 4x4 has 24 links).
//   - torus: a mesh plus the wrap link from the last coordinate to the
//     first in every dimension of more than 2 switches (the 4x2 testbed's
//     12 links: rings along x, single links along y); Links=2 doubles every
//     link, the second lane breaking each ring's cycle (Table 3).
//   - ring: the torus of one dimension of N switches (Figs 4/5's square).
//   - mtree: the comb that is Fig. 1's VLAN #10 tree: along the first
//     dimension only where every higher coordinate is 0 (the spine, an
//     edge row), along dimension j only where the coordinates above j are
//     0, along the last dimension everywhere. A switch's parent is one step
//     back along its highest non-zero coordinate.
//
// Port numbers: 1..T hosts, then for each dimension in order the ports
// towards the previous coordinate (lane 0, lane 1), then those towards the
// next. Ports a switch lacks (a mesh's edges, a size-2 dimension's single
// link) are skipped, so numbers stay dense.

// gridDir is one direction a grid switch may have a link in.
type gridDir struct{ dim, dir, lane int }

func buildGrid(s Spec) *Topology {
	dims := s.Dims
	if s.Kind == Ring {
		dims = []int{s.N}
	}
	lanes := max(1, s.Links)
	if s.Kind == Mesh || s.Kind == MTree {
		lanes = 1
	}
	n := 1
	for _, k := range dims {
		n *= k
	}
	stride := make([]int, len(dims))
	for d, st := 0, 1; d < len(dims); d++ {
		stride[d], st = st, st*dims[d]
	}
	// neighbour returns the switch one step along dim in dir, or -1.
	neighbour := func(id int, c []int, g gridDir) int {
		k, v := dims[g.dim], c[g.dim]+g.dir
		wrap := (s.Kind == Torus || s.Kind == Ring) && k > 2
		switch {
		case v >= 0 && v < k:
		case wrap:
			v = (v + k) % k
		default:
			return -1
		}
		if s.Kind == MTree {
			// Comb: a link along dim only where every higher coordinate is 0.
			for d := g.dim + 1; d < len(dims); d++ {
				if c[d] != 0 {
					return -1
				}
			}
		}
		return id + (v-c[g.dim])*stride[g.dim]
	}
	t := &Topology{Spec: s, groups: 1}
	t.Switches = make([]Switch, 0, n)
	port := make([]map[gridDir]int, n) // per switch: direction -> port number
	for id := 0; id < n; id++ {
		c := make([]int, len(dims))
		parts := make([]string, len(dims))
		for d, r := 0, id; d < len(dims); d++ {
			c[d] = r % dims[d]
			r /= dims[d]
			parts[d] = strconv.Itoa(c[d])
		}
		sid := t.addSwitch(Switch{Name: "s" + strings.Join(parts, "-"), Index: id, Coords: c})
		t.addHosts(sid, s.T)
		port[id] = map[gridDir]int{}
		num := s.T
		for d := range dims {
			for _, dir := range []int{-1, 1} {
				for lane := 0; lane < lanes; lane++ {
					g := gridDir{d, dir, lane}
					if peer := neighbour(id, c, g); peer >= 0 && (dir == 1 || neighbour(id, c, gridDir{d, 1, lane}) != peer) {
						// In a dimension of 2 the one neighbour is both
						// previous and next: its link counts once, as next.
						num++
						port[id][g] = num
					}
				}
			}
		}
		t.Switches[sid].Ports = append(t.Switches[sid].Ports, make([]Port, num-s.T)...)
	}
	for id := 0; id < n; id++ {
		c := t.Switches[id].Coords
		for d := range dims {
			for lane := 0; lane < lanes; lane++ {
				g := gridDir{d, 1, lane}
				pa, ok := port[id][g]
				if !ok {
					continue
				}
				peer := neighbour(id, c, g)
				back := gridDir{d, -1, lane}
				pb, ok := port[peer][back]
				if !ok {
					pb = port[peer][g] // size 2: the peer's next is this switch
					back = g
				}
				t.wire(id, pa, peer, pb, ClassLocal)
				pA, pB := t.Switches[id].Port(pa), t.Switches[peer].Port(pb)
				pA.Dim, pA.Dir, pA.Lane = d, 1, lane
				pB.Dim, pB.Dir, pB.Lane = d, back.dir, lane
			}
		}
	}
	return t
}

// GridPort is the port of a mesh, torus, ring or M-tree switch that leads
// one step along dim in dir (+1, -1) on lane, 0 if it has none.
func (s *Switch) GridPort(dim, dir, lane int) int {
	for _, p := range s.Ports {
		if p.Class != ClassHost && p.Dim == dim && p.Lane == lane && p.Dir == dir {
			return p.Num
		}
	}
	return 0
}

// TreeParent is an M-tree switch's parent, one step back along its
// highest non-zero coordinate; -1 for the root.
func (t *Topology) TreeParent(s int) int {
	sw := &t.Switches[s]
	for dim := len(sw.Coords) - 1; dim >= 0; dim-- {
		if sw.Coords[dim] != 0 {
			return sw.Port(sw.GridPort(dim, -1, 0)).Peer.Switch
		}
	}
	return -1
}

// GridDir is the direction from coordinate c to t along a dimension of k
// switches: on a mesh towards t; on a torus or ring the shorter way
// round, ties forward (+1).
func GridDir(kind Kind, c, t, k int) int {
	if kind == Mesh || kind == MTree || k <= 2 {
		if t < c {
			return -1
		}
		return 1
	}
	if fwd := (t - c + k) % k; k-fwd < fwd {
		return -1
	}
	return 1
}

// seed002Diameter is the largest switch-to-switch distance of a seed 002
// topology, from its construction (TestSeed002Diameter checks it against
// a breadth-first search).
func seed002Diameter(s Spec) int {
	switch s.Kind {
	case Mesh:
		n := 0
		for _, k := range s.Dims {
			n += k - 1
		}
		return n
	case Torus:
		n := 0
		for _, k := range s.Dims {
			n += k / 2
		}
		return n
	case Ring:
		return s.N / 2
	case MTree:
		// Between the far ends of two different last-dimension teeth:
		// up one, along the spine, down the other.
		n := s.Dims[0] - 1
		for _, k := range s.Dims[1:] {
			n += 2 * (k - 1)
		}
		return n
	case MyriClos:
		if s.N == 1 {
			return 1
		}
		return 2
	case FatTree:
		if s.D/s.U == 1 {
			// One group per level: every leaf shares the first one.
			if s.D == 1 {
				return 0
			}
			return 2
		}
		return 2 * s.R
	}
	return 0
}
