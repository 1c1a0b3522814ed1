package vlan

import (
	"fmt"
	"slices"

	"github.com/ethfab/ethfab/topology"
)

// tie is the link a switch of a repaired tree hangs from: the switch
// above it, the port that one sends on, the port it enters by, and its
// depth (switches from the tree's root).
type tie struct {
	from, out, in, depth int
	set                  bool
}

// repairTree is the fixed assignment's tree of paths from switch s (its
// host port port) around the links off: the paths of s's tree as far as
// they go before a link off, then every switch still unreached hung on by
// breadth-first search over the links on, shallowest first and by port
// number, so every new path is as short as it can be from where the kept
// tree stops. The result is a tree by construction (each switch gets one
// tie), which the fixed method needs.
func repairTree(top *topology.Topology, tp Torus, off Off, s, port int) ([]tie, error) {
	t := make([]tie, len(top.Switches))
	t[s] = tie{from: -1, set: true}
	for d := range top.Switches {
		if top.Switches[d].NumHosts == 0 {
			continue
		}
		p, err := pathOn(top, Fixed, tp, nil, s, port, d)
		if err != nil {
			return nil, err
		}
		for k := 0; k+1 < len(p); k++ {
			a, b := p[k], p[k+1]
			if off.Has(a.Switch, b.Switch) {
				break
			}
			if !t[b.Switch].set {
				t[b.Switch] = tie{from: a.Switch, out: a.Out, in: b.In, depth: t[a.Switch].depth + 1, set: true}
			}
		}
	}
	// Breadth-first from every kept switch at its own depth: a bucket per
	// depth, the kept switches in theirs from the start.
	var buckets [][]int
	put := func(x, depth int) {
		for len(buckets) <= depth {
			buckets = append(buckets, nil)
		}
		buckets[depth] = append(buckets[depth], x)
	}
	for x := range t {
		if t[x].set {
			put(x, t[x].depth)
		}
	}
	for depth := 0; depth < len(buckets); depth++ {
		for _, x := range buckets[depth] {
			for _, p := range top.Switches[x].Ports {
				if p.Class == topology.ClassHost {
					continue
				}
				y := p.Peer.Switch
				if t[y].set || off.Has(x, y) {
					continue
				}
				t[y] = tie{from: x, out: p.Num, in: p.Peer.Port, depth: depth + 1, set: true}
				put(y, depth+1)
			}
		}
	}
	return t, nil
}

// treePath is the path from s (entered by port) to d down a repaired tree.
func treePath(top *topology.Topology, t []tie, off Off, s, port, d int) ([]Hop, error) {
	if !t[d].set {
		return nil, cutErr(top, off, s, d)
	}
	var rev []tie
	for x := d; x != s; x = t[x].from {
		rev = append(rev, t[x])
	}
	hops := make([]Hop, 0, len(rev)+1)
	at, in := s, port
	for i := len(rev) - 1; i >= 0; i-- {
		hops = append(hops, Hop{Switch: at, In: in, Out: rev[i].out})
		at, in = top.Switches[at].Port(rev[i].out).Peer.Switch, rev[i].in
	}
	return append(hops, Hop{Switch: d, In: in}), nil
}

func cutErr(top *topology.Topology, off Off, s, d int) error {
	var names []string
	for l := range off {
		names = append(names, top.Switches[l[0]].Name+"-"+top.Switches[l[1]].Name)
	}
	slices.Sort(names)
	return fmt.Errorf("vlan: with the links %v off, %s cannot reach %s", names, top.Switches[s].Name, top.Switches[d].Name)
}

// upDownTables is up*/down* routing over the links on: every switch ranked
// (rank 0 the root), a hop towards a lower rank going up, the other way
// down, and no frame going up once it has gone down. The channel
// dependencies then have no cycle, on any connected topology, so renamed
// VLANs' broadcasts terminate (Theorem 1). A frame's phase (may it still
// go up?) is a function of the port it entered by, so the routing is
// C×N↦C, which the renamed method needs.
type upDownTables struct {
	off  Off
	rank []int
	// dist[d][2x+phase]: hops from switch x in that phase (0 may go up,
	// 1 down only) to d; -1 where d cannot be reached.
	dist map[int][]int
}

// upDown ranks the switches: trees (fat tree, M-tree) by level from the
// top, as their own up/down routing does; other topologies, and trees
// whose levels leave two switches with hosts without a legal path around
// the links off, by breadth-first distance over the links on from a
// centre (a switch with hosts of least eccentricity, the lowest ID among
// them), ties by ID. Ranked by distance, up*/down* routes every pair of a
// connected fabric (a frame can always climb to the centre and come down
// its breadth-first tree). Only the switches with hosts need to stay
// connected: a switch the links off leave alone without hosts (a spine
// turned off) is ranked last and carries nothing.
func upDown(top *topology.Topology, off Off) (*upDownTables, error) {
	n := len(top.Switches)
	hops := func(from int) []int { // breadth-first distances over the links on
		dist := make([]int, n)
		for i := range dist {
			dist[i] = -1
		}
		dist[from] = 0
		q := []int{from}
		for len(q) > 0 {
			x := q[0]
			q = q[1:]
			for _, p := range top.Switches[x].Ports {
				if p.Class == topology.ClassHost || off.Has(x, p.Peer.Switch) || dist[p.Peer.Switch] >= 0 {
					continue
				}
				dist[p.Peer.Switch] = dist[x] + 1
				q = append(q, p.Peer.Switch)
			}
		}
		return dist
	}
	var hosted []int
	for x := range top.Switches {
		if top.Switches[x].NumHosts > 0 {
			hosted = append(hosted, x)
		}
	}
	if len(hosted) == 0 {
		return nil, fmt.Errorf("vlan: %s has no hosts", top.Spec)
	}
	from := hops(hosted[0])
	for _, y := range hosted {
		if from[y] < 0 {
			return nil, cutErr(top, off, hosted[0], y)
		}
	}
	rank := func(key []int) *upDownTables {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return key[a] - key[b] })
		ud := &upDownTables{off: off, rank: make([]int, n), dist: map[int][]int{}}
		for r, x := range order {
			ud.rank[x] = r
		}
		return ud
	}
	if k := top.Spec.Kind; k == topology.FatTree || k == topology.MTree {
		key := make([]int, n)
		for x := range top.Switches {
			if k == topology.FatTree {
				key[x] = -top.Switches[x].Level
				continue
			}
			for y := top.TreeParent(x); y >= 0; y = top.TreeParent(y) {
				key[x]++
			}
		}
		if ud := rank(key); ud.routesAll(top, hosted) {
			return ud, nil
		}
	}
	centre, best := -1, n+1
	for _, x := range hosted {
		ecc := 0
		for _, h := range hops(x) {
			ecc = max(ecc, h)
		}
		if ecc < best {
			centre, best = x, ecc
		}
	}
	key := hops(centre)
	for x := range key {
		if key[x] < 0 {
			key[x] = n // cut off, without hosts: last
		}
	}
	return rank(key), nil
}

// routesAll says whether every switch with hosts reaches every other by
// legal hops.
func (ud *upDownTables) routesAll(top *topology.Topology, hosted []int) bool {
	for _, d := range hosted {
		dist := ud.distTo(top, d)
		for _, s := range hosted {
			if dist[2*s] < 0 {
				return false
			}
		}
	}
	return true
}

// step is one legal hop from switch x in phase ph: the phase after it, or
// -1 if up*/down* forbids it.
func (ud *upDownTables) step(x, y, ph int) int {
	if ud.rank[y] < ud.rank[x] { // up
		if ph == 1 {
			return -1
		}
		return 0
	}
	return 1
}

// distTo is dist[d], computed on first use: breadth-first search back from
// d over the legal hops.
func (ud *upDownTables) distTo(top *topology.Topology, d int) []int {
	if dist, ok := ud.dist[d]; ok {
		return dist
	}
	dist := make([]int, 2*len(top.Switches))
	for i := range dist {
		dist[i] = -1
	}
	dist[2*d], dist[2*d+1] = 0, 0
	q := []int{2 * d, 2*d + 1}
	for len(q) > 0 {
		st := q[0]
		q = q[1:]
		y, phy := st/2, st%2
		for _, p := range top.Switches[y].Ports {
			x := p.Peer.Switch
			if p.Class == topology.ClassHost || ud.off.Has(x, y) {
				continue
			}
			for ph := range 2 {
				if ud.step(x, y, ph) == phy && dist[2*x+ph] < 0 {
					dist[2*x+ph] = dist[st] + 1
					q = append(q, 2*x+ph)
				}
			}
		}
	}
	ud.dist[d] = dist
	return dist
}

// path follows the shortest legal hops from s to d. Where several tie, a
// switch prefers its ports in an order set by the destination alone (the
// port numbers rotated by d, to spread destinations over ties): every
// port a frame for d enters by then leaves by the same port when that
// one is legal for it. Ports whose frames may still go up have a superset
// of the down-only ports' choices, so two entry ports pick differently
// only when one picks an up port, which the other's VLAN cannot hold: the
// renamed method's merge of equal member sets never merges two that
// disagree (fdb would refuse them; a rotation by entry port did).
func (ud *upDownTables) path(top *topology.Topology, s, port, d int) ([]Hop, error) {
	dist := ud.distTo(top, d)
	at, in, ph := s, port, 0
	if dist[2*s] < 0 {
		return nil, fmt.Errorf("vlan: up*/down* around the links off has no path from %s to %s", top.Switches[s].Name, top.Switches[d].Name)
	}
	var hops []Hop
	for at != d {
		type cand struct{ out, ph int }
		var cs []cand
		for _, p := range top.Switches[at].Ports {
			y := p.Peer.Switch
			if p.Class == topology.ClassHost || ud.off.Has(at, y) {
				continue
			}
			if ph2 := ud.step(at, y, ph); ph2 >= 0 && dist[2*y+ph2] == dist[2*at+ph]-1 {
				cs = append(cs, cand{p.Num, ph2})
			}
		}
		np := len(top.Switches[at].Ports)
		c := slices.MinFunc(cs, func(a, b cand) int { return (a.out+d)%np - (b.out+d)%np })
		hops = append(hops, Hop{Switch: at, In: in, Out: c.out})
		p := top.Switches[at].Port(c.out)
		at, in, ph = p.Peer.Switch, p.Peer.Port, c.ph
	}
	return append(hops, Hop{Switch: d, In: in}), nil
}
