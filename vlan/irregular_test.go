package vlan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ethfab/ethfab/topology"
)

// irregular is a random connected fabric: n switches, each with 1 or 2
// hosts and at most maxLinks links to other switches (a random spanning
// tree, then random extra links).
func irregular(rng *rand.Rand, n, maxLinks int) *topology.Topology {
	top := &topology.Topology{Spec: topology.Spec{Kind: topology.Mesh, Dims: []int{n}}}
	adj := make([][]int, n)
	linked := map[[2]int]bool{}
	link := func(a, b int) bool {
		if a == b || linked[[2]int{min(a, b), max(a, b)}] || len(adj[a]) >= maxLinks || len(adj[b]) >= maxLinks {
			return false
		}
		linked[[2]int{min(a, b), max(a, b)}] = true
		adj[a], adj[b] = append(adj[a], b), append(adj[b], a)
		return true
	}
	for i := 1; i < n; i++ {
		for !link(i, rng.IntN(i)) {
		}
	}
	for range n * maxLinks {
		link(rng.IntN(n), rng.IntN(n))
	}
	for s := range n {
		sw := topology.Switch{ID: s, Name: fmt.Sprintf("s%d", s), NumHosts: 1 + rng.IntN(2)}
		for i := range sw.NumHosts {
			h := topology.Host{ID: len(top.Hosts), Name: fmt.Sprintf("s%dh%d", s, i), Switch: s, Port: i + 1, Index: i}
			top.Hosts = append(top.Hosts, h)
			sw.Ports = append(sw.Ports, topology.Port{Num: i + 1, Class: topology.ClassHost, Host: h.ID})
		}
		top.Switches = append(top.Switches, sw)
	}
	// After its hosts' ports, a switch's k-th port leads to adj[s][k].
	for s := range n {
		for range adj[s] {
			top.Switches[s].Ports = append(top.Switches[s].Ports, topology.Port{Num: len(top.Switches[s].Ports) + 1, Class: topology.ClassLocal, Host: -1})
		}
	}
	for s := range n {
		for k, d := range adj[s] {
			if d < s {
				continue
			}
			ps := top.Switches[s].NumHosts + k + 1
			kd := 0
			for j, x := range adj[d] {
				if x == s {
					kd = j
				}
			}
			pd := top.Switches[d].NumHosts + kd + 1
			top.Switches[s].Ports[ps-1].Peer = topology.Endpoint{Switch: d, Port: pd}
			top.Switches[d].Ports[pd-1].Peer = topology.Endpoint{Switch: s, Port: ps}
			top.Links = append(top.Links, topology.Link{Class: topology.ClassLocal, A: topology.Endpoint{Switch: s, Port: ps}, B: topology.Endpoint{Switch: d, Port: pd}, Host: -1})
		}
	}
	return top
}

// upDownTrees is up*/down* routing on a breadth-first spanning tree from
// switch 0 (the deadlock-free routing seed 002 assigns VLANs to on
// irregular topologies): a link leads up towards the lower level (the
// lower ID on one level), and no path goes up after it went down. From
// each source the paths follow one tree, as the fixed assignment wants:
// breadth-first over (switch, gone down) states, each switch keeping the
// first state that reaches it.
func upDownTrees(top *topology.Topology) PathFunc {
	n := len(top.Switches)
	level := make([]int, n)
	for i := range level {
		level[i] = -1
	}
	level[0] = 0
	for q := []int{0}; len(q) > 0; q = q[1:] {
		for _, p := range top.Switches[q[0]].Ports {
			if p.Class != topology.ClassHost && level[p.Peer.Switch] < 0 {
				level[p.Peer.Switch] = level[q[0]] + 1
				q = append(q, p.Peer.Switch)
			}
		}
	}
	up := func(a, b int) bool { return level[b] < level[a] || (level[b] == level[a] && b < a) }
	type state struct {
		prev, in, out int // predecessor switch, port entered by, port it left prev by
		down          bool
	}
	trees := make([][]state, n)
	for s := range n {
		st := make([]state, n)
		for i := range st {
			st[i].prev = -1 // unreached
		}
		seen := make([]bool, n)
		seen[s] = true
		st[s] = state{prev: -1}
		for q := []int{s}; len(q) > 0; q = q[1:] {
			x := q[0]
			for _, p := range top.Switches[x].Ports {
				if p.Class == topology.ClassHost {
					continue
				}
				y := p.Peer.Switch
				goingUp := up(x, y)
				if seen[y] || (st[x].down && goingUp) {
					continue
				}
				seen[y] = true
				st[y] = state{prev: x, in: p.Peer.Port, out: p.Num, down: st[x].down || !goingUp}
				q = append(q, y)
			}
		}
		trees[s] = st
	}
	return func(s, port, d int) ([]Hop, error) {
		st := trees[s]
		var rev []int
		for x := d; x != s; x = st[x].prev {
			if st[x].prev < 0 {
				return nil, fmt.Errorf("no up*/down* path from s%d to s%d", s, d)
			}
			rev = append(rev, x)
		}
		hops := []Hop{{Switch: s, In: port}}
		for i := len(rev) - 1; i >= 0; i-- {
			x := rev[i]
			hops[len(hops)-1].Out = st[x].out
			hops = append(hops, Hop{Switch: x, In: st[x].in})
		}
		return hops, nil
	}
}

// Seed 002 Theorem 2 on random irregular topologies routed up*/down*
// (check C.7-4): fixed needs at most n VLANs (the switches), renamed at
// most p (the switch degree); and both carry every pair on its path, a
// fixed broadcast reaching every host once and a renamed one terminating
// (Theorem 1: up*/down* is deadlock-free).
func TestTheorem2Irregular(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 10))
	worst := map[Method]float64{}
	for trial := range 60 {
		n, links := 4+rng.IntN(13), 2+rng.IntN(4)
		top := irregular(rng, n, links)
		degree := 0
		for _, sw := range top.Switches {
			degree = max(degree, len(sw.Ports))
		}
		for _, m := range []Method{Fixed, Renamed} {
			a, err := AssignPaths(top, m, upDownTrees(top))
			if err != nil {
				t.Fatalf("trial %d (%d switches, up to %d links each) %s: %v", trial, n, links, m, err)
			}
			bound := map[Method]int{Fixed: n, Renamed: degree}[m]
			if a.VLANs > bound {
				t.Errorf("trial %d %s: %d VLANs, Theorem 2 bounds them at %d", trial, m, a.VLANs, bound)
			}
			worst[m] = max(worst[m], float64(a.VLANs)/float64(bound))
			r, err := Verify(top, a)
			if err != nil {
				t.Fatal(err)
			}
			if r.Failures != 0 || r.BroadcastFailures != 0 {
				t.Errorf("trial %d %s: %d of %d pairs failed, %d of %d broadcasts: %v", trial, m, r.Failures, r.Pairs, r.BroadcastFailures, r.Broadcasts, r.Examples)
			}
		}
	}
	t.Logf("largest share of Theorem 2's bound used: fixed %.2f, renamed %.2f", worst[Fixed], worst[Renamed])
}
