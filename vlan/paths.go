// Package vlan is seed 002's switch-tagged VLAN routing, as pure data: the
// path sets it routes (N×N↦P: a switch path for every ordered pair of
// switches) and the two ways it turns them into VLANs every commodity
// switch can hold, the fixed assignment (one VLAN per distinct tree of
// paths, chosen by the source switch's host ports' PVID) and the renamed
// one (per switch, one VLAN per distinct set of ports the frames arriving
// on an input port may leave by; frames untagged on every wire). Nothing
// here touches the kernel.
package vlan

import (
	"fmt"
	"slices"

	"github.com/ethfab/ethfab/topology"
)

// Hop is one switch on a path: the port the frame enters by and the port
// it leaves by. At the path's first switch In is the source host's port;
// at its last Out is 0, any of the switch's host ports.
type Hop struct {
	Switch, In, Out int
}

// Path is the switch path from switch s to switch d on seed 002's path
// set for the topology (§C.2):
//
//   - mesh: dimension order, the first dimension first;
//   - torus and ring: dimension order, each dimension the shorter way
//     round, ties forward, except under the fixed method (pairedTies);
//     with two links between neighbours the frame keeps lane 0 until it
//     crosses its ring's wrap link and lane 1 from it on (the classic
//     dateline, which breaks the ring's cycle), or, with tp Lines, takes
//     one of the ring's two lines, a lane each (linesWay);
//   - M-tree: the tree's path;
//   - Myrinet-Clos: straight across, or through the other column's
//     switch in the destination's row;
//   - fat tree: up to the lowest level whose group holds d, then down;
//     the switch taken at every level, up and down, is picked by the
//     source leaf's digit (leaf / U^(level-1)) mod U, so that all paths
//     from a leaf form one tree (Table 3's u^r trees for the fixed
//     assignment) and stay in the plane of their digits. The renamed
//     assignment routes by input port (C×N↦C): there the first level's
//     switch is picked by the source host's port (its index mod U), as
//     seed 002 Fig. 2 sends half a leaf's hosts through each middle
//     switch, so every up link of a leaf carries traffic. A (2,4,2)
//     tree's switches then need 2 renamed VLANs each (Fig. 3b, Table 3's
//     u); deeper trees cannot be configured (Assign says why).
//
// These are source-dependent (the torus's lane, the fat tree's choices),
// unlike the destination-based tables of ethfab's minimal routing on the
// same topologies (controller/paths.go); VLANs carry the state. port is
// the source host's port on s; m the assignment the paths are for.
func Path(top *topology.Topology, m Method, tp Torus, s, port, d int) ([]Hop, error) {
	return pathOn(top, m, tp, nil, s, port, d)
}

// pairedTies: on a ring of even size k, the destination half way round
// ties, and a fixed path goes forward from an even position and backward
// from an odd one. The fixed method needs all paths from a switch in one
// tree, and a ring's spanning tree leaves out one of its link positions
// (one lane at each of the others). A source's shortest paths cover
// every position but one of the two beside its antipode: with ties
// forward, every source leaves out a different one, so each has its own
// tree and a 4×4 torus needs 16 fixed VLANs. Paired, the sources 2j and
// 2j+1 leave out the same position and share their trees: k/2 per ring,
// (k/2)·k^(n−1) VLANs for a k-ary n-cube, which is seed 002 Table 3's
// 2k^(n−1) at k = 4 (8 for 4×4, 32 for 4×4×4; the paper takes its torus
// paths from its reference [8]). No set of shortest paths does better:
// two sources share a tree only if they leave out the same position,
// which only neighbours can, so a ring needs at least k/2 trees (k for
// odd k, where every source's left-out position is fixed), and Table 3's
// formula holds for minimal paths at k = 4 only.

// Off is a set of links turned off, as the switch pairs they join (lower
// ID first).
type Off map[[2]int]bool

// Has says whether the link between switches a and b is off.
func (o Off) Has(a, b int) bool { return o[[2]int{min(a, b), max(a, b)}] }

// Add turns the link between switches a and b off.
func (o Off) Add(a, b int) { o[[2]int{min(a, b), max(a, b)}] = true }

// OffByName is the links between the switches named in pairs, each
// checked: both switches exist and a link joins them.
func OffByName(top *topology.Topology, pairs [][2]string) (Off, error) {
	id := make(map[string]int, len(top.Switches))
	for i := range top.Switches {
		id[top.Switches[i].Name] = i
	}
	off := Off{}
	for _, p := range pairs {
		for _, n := range p {
			if _, ok := id[n]; !ok {
				return nil, fmt.Errorf("link %s-%s off: %s has no switch %s", p[0], p[1], top.Spec, n)
			}
		}
		a, b := id[p[0]], id[p[1]]
		if top.PortTo(a, b) == 0 {
			return nil, fmt.Errorf("link %s-%s off: no link joins them", p[0], p[1])
		}
		off.Add(a, b)
	}
	return off, nil
}

// OffPaths is the path set around links turned off, computed once and
// kept:
//
//   - With no link off, Path.
//   - Renamed, a mesh (two or more dimensions), links off in one row of
//     its first dimension: seed 002's own case ("a single horizontal
//     (x-directional) link is deactivated and the north-last turn model
//     is employed to avoid it", northLast).
//   - A ring, or a torus with its second link (dateline lanes or
//     lines), no ring with two links off, either method: dimension order
//     as with every link on, where a ring with a link off is a line and
//     its frames go round it the way that stays on (ringsAroundFit; on
//     lines, on their own lane, linesWay). A pair whose way round did not
//     cross the link keeps its path.
//   - Fixed, any other topology: the paths from each switch must stay
//     one tree (the method's precondition), so each switch keeps the
//     part of its tree the links off leave whole, and the switches cut
//     away hang back on by breadth-first search over the links still on
//     (repairTree): a pair whose path does not cross a link off keeps it.
//   - Renamed, any other case: up*/down* over the links still on
//     (upDown). The paper routes renamed VLANs by "an existing routing
//     algorithm" that is deadlock-free (Theorem 1: then broadcasts
//     terminate); dimension order with a link missing is not, and
//     up*/down* is on any topology whose switches with hosts stay
//     connected. It moves pairs that did not
//     cross the link too; the safe order's transit table
//     (controller/vlan.go) moves them without loss.
//
// A topology the links off cut in two is refused, naming a pair. The
// path set fills its tables on first use: it is not safe for concurrent
// use.
func OffPaths(top *topology.Topology, m Method, tp Torus, off Off) PathFunc {
	if len(off) == 0 {
		return func(s, port, d int) ([]Hop, error) { return Path(top, m, tp, s, port, d) }
	}
	if m == Renamed && northLastFits(top, off) == nil {
		return northLast(top, off)
	}
	if ringsAroundFit(top, off) == nil {
		return func(s, port, d int) ([]Hop, error) { return pathOn(top, m, tp, off, s, port, d) }
	}
	if m == Fixed {
		trees := map[int][]tie{}
		return func(s, port, d int) ([]Hop, error) {
			t, ok := trees[s]
			if !ok {
				var err error
				if t, err = repairTree(top, tp, off, s, port); err != nil {
					return nil, err
				}
				trees[s] = t
			}
			return treePath(top, t, off, s, port, d)
		}
	}
	var ud *upDownTables
	var udErr error
	return func(s, port, d int) ([]Hop, error) {
		if ud == nil && udErr == nil {
			ud, udErr = upDown(top, off)
		}
		if udErr != nil {
			return nil, udErr
		}
		return ud.path(top, s, port, d)
	}
}

// pathOn is the path set's own routing; off, on rings and tori only
// (ringsAroundFit), are links the frames go round the other way.
func pathOn(top *topology.Topology, m Method, tp Torus, off Off, s, port, d int) ([]Hop, error) {
	var hops []Hop
	in := port
	step := func(at, out int) int {
		hops = append(hops, Hop{Switch: at, In: in, Out: out})
		p := top.Switches[at].Port(out)
		in = p.Peer.Port
		return p.Peer.Switch
	}
	sp := top.Spec
	at := s
	switch sp.Kind {
	case topology.Mesh, topology.Torus, topology.Ring:
		dims := sp.Dims
		if sp.Kind == topology.Ring {
			dims = []int{sp.N}
		}
		for dim, k := range dims {
			lane := 0
			// way is the direction round a ring when it is fixed for the
			// whole stretch: a fixed path's tie (pairedTies), or the way
			// that stays on around a link off (ringsAroundFit); 0: the
			// shorter way.
			way := 0
			c, t := top.Switches[at].Coords[dim], top.Switches[d].Coords[dim]
			if m == Fixed && sp.Kind != topology.Mesh && k > 2 && k%2 == 0 && (t-c+k)%k == k/2 {
				way = 1 - 2*(c%2)
			}
			lines := tp == Lines && sp.Kind == topology.Torus && sp.Links == 2 && k > 2
			if lines && c != t {
				way, lane = linesWay(k, c, t)
			}
			// Round a ring with a link off the other way, on the same lane:
			// with the link off the ring's lanes have no cycle left.
			if len(off) > 0 && c != t {
				if way == 0 {
					way = topology.GridDir(sp.Kind, c, t, k)
				}
				if arcOff(top, off, at, dim, way, t) {
					if way = -way; arcOff(top, off, at, dim, way, t) {
						return nil, fmt.Errorf("vlan: the links off cut %s from %s along dimension %d", top.Switches[at].Name, top.Switches[d].Name, dim)
					}
				}
			}
			for top.Switches[at].Coords[dim] != top.Switches[d].Coords[dim] {
				c := top.Switches[at].Coords[dim]
				dir := topology.GridDir(sp.Kind, c, top.Switches[d].Coords[dim], k)
				if way != 0 {
					dir = way
				}
				if sp.Links == 2 && k > 2 && !lines && ((dir == 1 && c == k-1) || (dir == -1 && c == 0)) {
					lane = 1 // the wrap link and everything after it
				}
				out := top.Switches[at].GridPort(dim, dir, lane)
				if out == 0 {
					return nil, fmt.Errorf("vlan: %s has no port along dimension %d, direction %+d, lane %d", top.Switches[at].Name, dim, dir, lane)
				}
				at = step(at, out)
			}
		}
	case topology.MTree:
		up := ancestors(top, s)
		down := ancestors(top, d)
		// Climb to the lowest common ancestor, then descend.
		common := map[int]bool{}
		for _, x := range down {
			common[x] = true
		}
		for !common[at] {
			at = step(at, top.PortTo(at, up[1]))
			up = up[1:]
		}
		for i := indexOf(down, at) - 1; i >= 0; i-- {
			at = step(at, top.PortTo(at, down[i]))
		}
	case topology.MyriClos:
		sw, dw := top.Switches[s].Coords, top.Switches[d].Coords
		if sw[1] == dw[1] && s != d {
			at = step(at, top.PortTo(at, dw[0]+(1-sw[1])*sp.N))
		}
		if at != d {
			at = step(at, top.PortTo(at, d))
		}
	case topology.FatTree:
		first := top.LevelFirsts()
		src, dst := top.Switches[s].Index, top.Switches[d].Index
		top0 := 0 // the lowest level whose group holds both leaves
		for j := 1; j <= sp.R && s != d; j++ {
			if src/sp.FatTreeSpan(j) == dst/sp.FatTreeSpan(j) {
				top0 = j
				break
			}
		}
		digit := func(j int) int {
			if j == 1 && m == Renamed {
				return (port - 1) % sp.U // host ports come first
			}
			return sp.FatTreeDigit(src, j)
		}
		for j := 1; j <= top0; j++ {
			at = step(at, top.PortTo(at, first[j]+(src/sp.FatTreeSpan(j))*sp.U+digit(j)))
		}
		for j := top0 - 1; j >= 1; j-- {
			at = step(at, top.PortTo(at, first[j]+(dst/sp.FatTreeSpan(j))*sp.U+digit(j)))
		}
		if at != d {
			at = step(at, top.PortTo(at, d))
		}
	default:
		return nil, fmt.Errorf("vlan: %s has no seed 002 path set (want mesh, torus, ring, mtree, myriclos or fattree)", sp.Kind)
	}
	if at != d {
		return nil, fmt.Errorf("vlan: the path from %s ended at %s, not %s", top.Switches[s].Name, top.Switches[at].Name, top.Switches[d].Name)
	}
	return append(hops, Hop{Switch: d, In: in}), nil
}

// ringsAroundFit says why dimension order cannot route a ring or torus
// around the links off, or nil. A ring with one link off is a line, so
// its channels form no cycle whichever way a frame goes round; on a
// torus the other rings stay cycles, broken only by the second link's
// dateline lanes (links=2), so dimension order stays deadlock-free there
// and renamed broadcasts die out (Theorem 1). Only the pairs whose way
// round crossed the link move. The ring's sources then share one line,
// so neither method needs more VLANs than with every link on: a 4×4
// torus needs 5–6 renamed (up*/down* over the links still on needed 9)
// and 8 fixed (repaired trees needed 9); 8×8, 30 fixed instead of 32.
func ringsAroundFit(top *topology.Topology, off Off) error {
	sp := top.Spec
	dims := sp.Dims
	switch {
	case sp.Kind == topology.Ring:
		dims = []int{sp.N}
	case sp.Kind != topology.Torus || sp.Links != 2:
		return fmt.Errorf("vlan: dimension order goes round links off on rings and on tori with two links between neighbours, not %s", sp)
	}
	rings := map[string]bool{}
	for l := range off {
		a, b := &top.Switches[l[0]], &top.Switches[l[1]]
		dim := -1
		for i := range a.Coords {
			if a.Coords[i] != b.Coords[i] {
				dim = i
			}
		}
		if dim < 0 || dims[dim] <= 2 {
			return fmt.Errorf("vlan: %s-%s is not a link of a ring of three or more switches", a.Name, b.Name)
		}
		key := ring(a.Coords, dim)
		if rings[key] {
			return fmt.Errorf("vlan: two links off one ring (%s-%s's) cut it", a.Name, b.Name)
		}
		rings[key] = true
	}
	return nil
}

// linesWay is the direction and lane of a Lines path along a ring of k
// switches from coordinate c to t. Lane 0 is the ring without its wrap
// link (positions as coordinates), lane 1 the ring without the link
// between k/2-1 and k/2 (positions counted from k/2); the source takes
// the line whose distances from it sum least, lane 0 on a tie. Around a
// link off (ringsAroundFit: at most one per ring, both lanes) pathOn
// turns a way that crosses it round on the same lane: a pair that did not
// cross keeps its path, and each lane's sources still share one tree.
func linesWay(k, c, t int) (way, lane int) {
	start := [2]int{0, k / 2} // each lane's line starts here
	pos := func(lane, x int) int { return (x - start[lane] + k) % k }
	sum := func(lane int) int {
		n := 0
		for x := range k {
			n += max(pos(lane, x)-pos(lane, c), pos(lane, c)-pos(lane, x))
		}
		return n
	}
	if sum(1) < sum(0) {
		lane = 1
	}
	if way = 1; pos(lane, t) < pos(lane, c) {
		way = -1
	}
	return way, lane
}

// ring names the ring of dimension dim a switch at coords is on.
func ring(coords []int, dim int) string {
	r := slices.Clone(coords)
	r[dim] = -1
	return fmt.Sprint(r)
}

// arcOff says whether the way from switch at along dimension dim in
// direction dir to coordinate t crosses a link off (or has no link).
func arcOff(top *topology.Topology, off Off, at, dim, dir, t int) bool {
	for top.Switches[at].Coords[dim] != t {
		out := top.Switches[at].GridPort(dim, dir, 0)
		if out == 0 {
			return true
		}
		next := top.Switches[at].Port(out).Peer.Switch
		if off.Has(at, next) {
			return true
		}
		at = next
	}
	return false
}

// ancestors lists an M-tree switch and its ancestors up to the root.
func ancestors(top *topology.Topology, s int) []int {
	out := []int{s}
	for s = top.TreeParent(s); s >= 0; s = top.TreeParent(s) {
		out = append(out, s)
	}
	return out
}

func indexOf(xs []int, v int) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return -1
}

// northLast is the path set round links off in one row of a mesh's
// first dimension (OffPaths, once northLastFits): a frame whose first-dimension stretch would cross
// a link off goes along the second dimension to the edge row nearest the
// link's (the far one if the link is in an edge row), crosses there, and
// goes back along the second dimension last, then on in dimension order;
// every other frame keeps its dimension order. Toward the edge first and
// back last is the north-last turn model (south-last when the edge is
// the far one), so the paths are deadlock-free and renamed broadcasts die
// out (Theorem 1). Crossing in the edge row is what keeps Table 3's n
// renamed VLANs: there a switch has one port along the second dimension,
// so the frames that come down it to cross get the one set of ports of
// their own that the row had for that port anyway. Crossing one row below
// the link's (sessions before 50) gave the switches there a third set
// (frames from above that may turn east but not west, beside those that
// go straight on).
func northLast(top *topology.Topology, off Off) PathFunc {
	var row []int // the coordinates of the links' row, the first one's ignored
	base := 0     // the switch at the row's first coordinate 0 (stride 1 along it)
	for l := range off {
		row = top.Switches[l[0]].Coords
		base = l[0] - row[0]
	}
	edge := 0
	if k := top.Spec.Dims[1]; row[1] == 0 || (row[1] != k-1 && k-1-row[1] < row[1]) {
		edge = k - 1
	}
	return func(s, port, d int) ([]Hop, error) {
		src, dst := top.Switches[s].Coords, top.Switches[d].Coords
		crosses := false
		if slices.Equal(src[1:], row[1:]) {
			for x := min(src[0], dst[0]); x < max(src[0], dst[0]) && !crosses; x++ {
				crosses = off.Has(base+x, base+x+1)
			}
		}
		var hops []Hop
		in, cur := port, s
		walk := func(dim, to int) {
			for c := top.Switches[cur].Coords[dim]; c != to; c = top.Switches[cur].Coords[dim] {
				dir := 1
				if to < c {
					dir = -1
				}
				out := top.Switches[cur].GridPort(dim, dir, 0)
				hops = append(hops, Hop{Switch: cur, In: in, Out: out})
				p := top.Switches[cur].Port(out)
				in, cur = p.Peer.Port, p.Peer.Switch
			}
		}
		if crosses {
			walk(1, edge)
		}
		for dim := range dst {
			walk(dim, dst[dim])
		}
		return append(hops, Hop{Switch: d, In: in}), nil
	}
}

// northLastFits says why north-last cannot route around the links off,
// or nil: it needs a mesh of two or more dimensions, the second of at
// least two switches, and the links in one row of its first dimension.
func northLastFits(top *topology.Topology, off Off) error {
	sp := top.Spec
	if sp.Kind != topology.Mesh || len(sp.Dims) < 2 || sp.Dims[1] < 2 {
		return fmt.Errorf("vlan: north-last routes around links off on meshes of two or more dimensions, not %s", sp)
	}
	var row []int
	for l := range off {
		a, b := &top.Switches[l[0]], &top.Switches[l[1]]
		if !slices.Equal(a.Coords[1:], b.Coords[1:]) || (row != nil && !slices.Equal(a.Coords[1:], row)) {
			return fmt.Errorf("vlan: north-last routes around links off in one row of the first dimension; %s-%s is not", a.Name, b.Name)
		}
		row = a.Coords[1:]
	}
	return nil
}
