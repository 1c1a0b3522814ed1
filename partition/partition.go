// Package partition splits a fabric across machines (MaxiNet's recipe:
// partition the topology, tunnel the cut links): which machine runs each
// switch, with the switch's hosts, and which inter-switch links cross
// between machines. Pure: no kernel, no network.
//
// Fabrics with groups go to machines a whole group at a time — Dragonfly
// groups, Flattened Butterfly rows along the first dimension, Clos pods —
// so that only the links between groups are cut (global links, the other
// dimensions' links, the links above the pods): those are the links the
// papers' fabrics already treat as long, and a group's local links, which
// carry most of minimal routing's hops, stay on one machine. Switches
// outside every group (a Clos's top levels) go where their load is
// lightest. Other fabrics are split as a weighted graph: by the
// GraphSplitter a caller supplies (gpmetis, when installed:
// emulator/gpmetis runs it), or by region growing.
//
// Every split balances the machines' load — a switch weighs its hosts
// plus its ports, the namespaces and veth ends it costs the machine's
// kernel — in proportion to each machine's cores.
package partition

import (
	"fmt"
	"slices"

	"github.com/ethfab/ethfab/topology"
)

// Machine is one machine a fabric is split across, and its share: its
// cores, relative to the others'.
type Machine struct {
	Name  string `json:"name"`
	Cores int    `json:"cores"`
}

// Graph is a fabric as a weighted graph: a vertex per switch, weighing its
// hosts plus its ports, and an edge per pair of linked switches, weighing
// their links.
type Graph struct {
	Weights []int
	// Edges lists each vertex's neighbours (each edge in both lists).
	Edges [][]Edge
}

// Edge is a vertex's neighbour and the links between them.
type Edge struct {
	To, Links int
}

// GraphSplitter splits a graph into len(targets) parts whose weights
// approach the target fractions (summing to 1), returning each vertex's
// part.
type GraphSplitter interface {
	Name() string
	Split(g Graph, targets []float64) ([]int, error)
}

// Partition is a fabric split across machines.
type Partition struct {
	// Method is how: "groups" (whole groups, rows or pods), or the graph
	// splitter's name ("gpmetis", "regions").
	Method string `json:"method"`
	// Unit names what went whole to one machine: "group", "row", "pod"
	// or "switch".
	Unit     string  `json:"unit"`
	Machines []Share `json:"machines"`
	// Of is each switch's machine (an index into Machines).
	Of []int `json:"of"`
	// Cut lists the inter-switch links (indices into Topology.Links)
	// whose ends are on two machines.
	Cut []int `json:"cut"`
	// CutByClass counts the cut links by class, and LinksByClass all
	// inter-switch links.
	CutByClass   map[string]int `json:"cut_by_class"`
	LinksByClass map[string]int `json:"links_by_class"`
	// Imbalance is the largest machine's load per core over the mean
	// load per core, less one: 0 is perfect.
	Imbalance float64 `json:"imbalance"`
}

// Share is one machine's part of the fabric.
type Share struct {
	Machine  Machine `json:"machine"`
	Switches int     `json:"switches"`
	Hosts    int     `json:"hosts"`
	Ports    int     `json:"ports"`
	// Units are the groups (rows, pods) the machine runs whole, when the
	// split is by groups.
	Units []int `json:"units,omitempty"`
	// Load is the machine's hosts plus ports: what the split balances.
	Load int `json:"load"`
	// Links counts the inter-switch links inside the machine; CutLinks
	// those with one end here: each a tunnel the machine terminates.
	Links    int `json:"links"`
	CutLinks int `json:"cut_links"`
}

// weight is a switch's load on the machine that runs it.
func weight(sw *topology.Switch) int { return sw.NumHosts + len(sw.Ports) }

// GraphOf is the fabric's switch graph.
func GraphOf(top *topology.Topology) Graph {
	g := Graph{Weights: make([]int, len(top.Switches)), Edges: make([][]Edge, len(top.Switches))}
	for i := range top.Switches {
		g.Weights[i] = weight(&top.Switches[i])
	}
	for _, l := range top.Links {
		if l.Class == topology.ClassHost {
			continue
		}
		a, b := l.A.Switch, l.B.Switch
		g.Edges[a] = addEdge(g.Edges[a], b)
		g.Edges[b] = addEdge(g.Edges[b], a)
	}
	return g
}

func addEdge(es []Edge, to int) []Edge {
	for i := range es {
		if es[i].To == to {
			es[i].Links++
			return es
		}
	}
	return append(es, Edge{To: to, Links: 1})
}

// Split splits the fabric across machines: whole groups where the fabric
// has them, else by graph (nil: region growing).
func Split(top *topology.Topology, machines []Machine, graph GraphSplitter) (*Partition, error) {
	if len(machines) == 0 {
		return nil, fmt.Errorf("no machines")
	}
	for _, m := range machines {
		if m.Cores <= 0 {
			return nil, fmt.Errorf("machine %s: %d cores", m.Name, m.Cores)
		}
	}
	var of []int
	var method, unit string
	var units [][]int
	switch unit = unitName(top.Spec.Kind); unit {
	case "switch":
		if len(top.Switches) < len(machines) {
			return nil, fmt.Errorf("%s has %d switches: at most %d machines, not %d", top.Spec, len(top.Switches), len(top.Switches), len(machines))
		}
		if graph == nil {
			graph = Regions{}
		}
		parts, err := graph.Split(GraphOf(top), targets(machines))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", graph.Name(), err)
		}
		if len(parts) != len(top.Switches) {
			return nil, fmt.Errorf("%s: %d parts for %d switches", graph.Name(), len(parts), len(top.Switches))
		}
		for i, p := range parts {
			if p < 0 || p >= len(machines) {
				return nil, fmt.Errorf("%s: switch %s in part %d of %d", graph.Name(), top.Switches[i].Name, p, len(machines))
			}
		}
		of, method = parts, graph.Name()
	default:
		var err error
		if of, units, err = byGroups(top, machines, unit); err != nil {
			return nil, err
		}
		method = "groups"
	}
	p := &Partition{Method: method, Unit: unit, Of: of, CutByClass: map[string]int{}, LinksByClass: map[string]int{}}
	for k, m := range machines {
		sh := Share{Machine: m}
		if units != nil {
			sh.Units = units[k]
		}
		p.Machines = append(p.Machines, sh)
	}
	for i := range top.Switches {
		sw := &top.Switches[i]
		sh := &p.Machines[of[i]]
		sh.Switches++
		sh.Hosts += sw.NumHosts
		sh.Ports += len(sw.Ports)
		sh.Load += weight(sw)
	}
	for li, l := range top.Links {
		if l.Class == topology.ClassHost {
			continue
		}
		c := l.Class.String()
		p.LinksByClass[c]++
		if a, b := of[l.A.Switch], of[l.B.Switch]; a != b {
			p.Cut = append(p.Cut, li)
			p.CutByClass[c]++
			p.Machines[a].CutLinks++
			p.Machines[b].CutLinks++
		} else {
			p.Machines[a].Links++
		}
	}
	total, cores := 0, 0
	for k := range p.Machines {
		if p.Machines[k].Switches == 0 {
			return nil, fmt.Errorf("machine %s gets no switch: its %d of %d cores are less than one %s's share", machines[k].Name, machines[k].Cores, coresOf(machines), unit)
		}
		total += p.Machines[k].Load
		cores += machines[k].Cores
	}
	for _, sh := range p.Machines {
		perCore := float64(sh.Load) / float64(sh.Machine.Cores)
		p.Imbalance = max(p.Imbalance, perCore/(float64(total)/float64(cores))-1)
	}
	return p, nil
}

// unitName is what a fabric of this kind goes to machines by.
func unitName(k topology.Kind) string {
	switch k {
	case topology.Dragonfly:
		return "group"
	case topology.FlatFly:
		return "row"
	case topology.Clos:
		return "pod"
	}
	return "switch"
}

func coresOf(ms []Machine) int {
	n := 0
	for _, m := range ms {
		n += m.Cores
	}
	return n
}

// targets are the machines' shares of the load: their cores'.
func targets(ms []Machine) []float64 {
	c := float64(coresOf(ms))
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = float64(m.Cores) / c
	}
	return out
}

// byGroups gives each machine a run of consecutive groups whose load
// approaches its share (every group of a Dragonfly, Flattened Butterfly
// or Clos weighs the same, so a run is as good as any choice, and reads
// better: g0-g16), then places the switches outside every group one by
// one on the machine furthest below its share.
func byGroups(top *topology.Topology, ms []Machine, unit string) (of []int, units [][]int, err error) {
	n := top.NumGroups()
	if n < len(ms) {
		return nil, nil, fmt.Errorf("%s has %d %ss: at most %d machines, not %d (a %s goes whole to one machine)", top.Spec, n, unit, n, len(ms), unit)
	}
	load := make([]int, n)
	total := 0
	var outside []int
	for i := range top.Switches {
		w := weight(&top.Switches[i])
		total += w
		if g := top.Switches[i].Group; g >= 0 {
			load[g] += w
		} else {
			outside = append(outside, i)
		}
	}
	share := targets(ms)
	grouped := 0
	for _, w := range load {
		grouped += w
	}
	groupMachine := make([]int, n)
	units = make([][]int, len(ms))
	have := make([]float64, len(ms))
	g, done, end := 0, 0.0, 0.0
	for k := range ms {
		// Where this machine's run should end, as a running total: each
		// machine's rounding is made up by the next, not left to pile up
		// on the last (33 groups on 10 machines: 3 or 4 each, not nine
		// 3s and a 6).
		end += share[k] * float64(grouped)
		left := len(ms) - k - 1 // machines after this one, each needs a group
		for g < n-left {
			// Take the group if this machine has none yet, or if taking it
			// ends the run nearer its end than not.
			after := done + float64(load[g])
			if len(units[k]) > 0 && k < len(ms)-1 && after-end > end-done {
				break
			}
			groupMachine[g] = k
			units[k] = append(units[k], g)
			have[k] += float64(load[g])
			done = after
			g++
		}
	}
	of = make([]int, len(top.Switches))
	for i := range top.Switches {
		if gr := top.Switches[i].Group; gr >= 0 {
			of[i] = groupMachine[gr]
		}
	}
	for _, i := range outside {
		best := 0
		for k := range ms {
			if have[k]/share[k] < have[best]/share[best] {
				best = k
			}
		}
		of[i] = best
		have[best] += float64(weight(&top.Switches[i]))
	}
	return of, units, nil
}

// Regions splits a graph by region growing: each part but the last grows
// from the lowest unassigned vertex, taking the neighbour with the most
// links into the part (then the lowest), until it holds its share; the
// last part takes the rest. No tool needed; gpmetis cuts fewer links on
// irregular graphs.
type Regions struct{}

// Name is "regions".
func (Regions) Name() string { return "regions" }

// Split grows the parts.
func (Regions) Split(g Graph, targets []float64) ([]int, error) {
	n := len(g.Weights)
	if len(targets) > n {
		return nil, fmt.Errorf("%d parts for %d vertices", len(targets), n)
	}
	total := 0
	for _, w := range g.Weights {
		total += w
	}
	part := make([]int, n)
	for i := range part {
		part[i] = -1
	}
	left := n
	done, end := 0.0, 0.0 // running totals, as in byGroups
	for k := range targets {
		if k == len(targets)-1 {
			for i := range part {
				if part[i] < 0 {
					part[i] = k
				}
			}
			break
		}
		end += targets[k] * float64(total)
		into := map[int]int{} // unassigned neighbour -> links into the part
		for taken := 0; left > len(targets)-k-1; taken++ {
			next := -1
			if len(into) == 0 {
				next = slices.Index(part, -1) // a new seed (disconnected rest)
			} else {
				for v, l := range into {
					if next < 0 || l > into[next] || l == into[next] && v < next {
						next = v
					}
				}
			}
			w := float64(g.Weights[next])
			if taken > 0 && done+w-end > end-done {
				break
			}
			part[next] = k
			done += w
			left--
			delete(into, next)
			for _, e := range g.Edges[next] {
				if part[e.To] < 0 {
					into[e.To] += e.Links
				}
			}
		}
	}
	return part, nil
}
