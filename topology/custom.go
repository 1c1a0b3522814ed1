package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// CustomGraph is a hand-drawn fabric (kind custom): named switches, the
// links between them, and how many hosts each has. Seed 003's 3-flow
// topologies are drawn this way. In a scenario:
//
//	topology: {kind: custom, switches: [A, B], links: [[A, B]], hosts: {A: 1, B: 1}}
//
// and on the command line custom:switches=A+B,links=A-B,hosts=A:1+B:1.
// Switch IDs follow the switches' order; hosts are named <switch>h<index>.
// Each switch numbers its host ports first, then one port per link in
// the links' order, so the order of the links decides the port numbers
// and with them the ties between equal paths (the lowest port wins).
// Inter-switch links are local.
type CustomGraph struct {
	Switches []string
	Links    [][2]string
	Hosts    []int // per switch, in Switches' order
}

// maxCustomSwitches bounds a hand-drawn fabric: the controller routes it
// by a breadth-first search from every switch.
const maxCustomSwitches = 4096

// validCustomName is what a switch name may be: it names the bridge, its
// management socket and, with a host suffix, namespaces.
func validCustomName(n string) bool {
	if n == "" || len(n) > 12 {
		return false
	}
	for i, r := range n {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case (r >= '0' && r <= '9' || r == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// index maps switch names to IDs.
func (g *CustomGraph) index() map[string]int {
	m := make(map[string]int, len(g.Switches))
	for i, n := range g.Switches {
		m[n] = i
	}
	return m
}

func (g *CustomGraph) clone() *CustomGraph {
	if g == nil {
		return nil
	}
	return &CustomGraph{Switches: append([]string(nil), g.Switches...), Links: append([][2]string(nil), g.Links...), Hosts: append([]int(nil), g.Hosts...)}
}

// NumHosts is the total number of hosts.
func (g *CustomGraph) NumHosts() int {
	n := 0
	for _, h := range g.Hosts {
		n += h
	}
	return n
}

func (s Spec) validateCustom() error {
	g := s.Custom
	if g == nil || len(g.Switches) == 0 {
		return paramErr(s.Kind, "switches", "needs at least one switch")
	}
	if len(g.Switches) > maxCustomSwitches {
		return paramErr(s.Kind, "switches", "%d switches is more than %d", len(g.Switches), maxCustomSwitches)
	}
	seen := map[string]bool{}
	for i, n := range g.Switches {
		if !validCustomName(n) {
			return itemErr(s.Kind, "switches", i, "%q is not a switch name (a letter, then letters, digits or _, at most 12)", n)
		}
		if seen[n] {
			return itemErr(s.Kind, "switches", i, "switch %s is listed twice", n)
		}
		seen[n] = true
	}
	if len(g.Hosts) != len(g.Switches) {
		return paramErr(s.Kind, "hosts", "%d host counts for %d switches", len(g.Hosts), len(g.Switches))
	}
	total := 0
	for i, h := range g.Hosts {
		if h < 0 || h > 4096 {
			return itemErr(s.Kind, "hosts", i, "switch %s: %d hosts (want 0 to 4096)", g.Switches[i], h)
		}
		total += h
	}
	if total == 0 {
		return paramErr(s.Kind, "hosts", "no switch has a host")
	}
	id := g.index()
	adj := make([][]int, len(g.Switches))
	for i, l := range g.Links {
		a, okA := id[l[0]]
		b, okB := id[l[1]]
		switch {
		case !okA:
			return itemErr(s.Kind, "links", i, "%s-%s: no switch %s", l[0], l[1], l[0])
		case !okB:
			return itemErr(s.Kind, "links", i, "%s-%s: no switch %s", l[0], l[1], l[1])
		case a == b:
			return itemErr(s.Kind, "links", i, "%s-%s joins a switch to itself", l[0], l[1])
		}
		adj[a] = append(adj[a], b)
		adj[b] = append(adj[b], a)
	}
	reached := make([]bool, len(g.Switches))
	reached[0] = true
	q := []int{0}
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		for _, v := range adj[u] {
			if !reached[v] {
				reached[v] = true
				q = append(q, v)
			}
		}
	}
	for i, r := range reached {
		if !r {
			return paramErr(s.Kind, "links", "switch %s is not connected to %s", g.Switches[i], g.Switches[0])
		}
	}
	return nil
}

func buildCustom(s Spec) *Topology {
	g := s.Custom
	t := &Topology{Spec: s, groups: 1}
	for i, n := range g.Switches {
		id := t.addSwitch(Switch{Name: n, Index: i})
		t.addHosts(id, g.Hosts[i])
	}
	id := g.index()
	for _, l := range g.Links {
		t.connect(id[l[0]], id[l[1]], ClassLocal)
	}
	return t
}

// params renders the command-line form's parameters (links only if any).
func (g *CustomGraph) params() []string {
	links := make([]string, len(g.Links))
	for i, l := range g.Links {
		links[i] = l[0] + "-" + l[1]
	}
	var hosts []string
	for i, h := range g.Hosts {
		if h > 0 {
			hosts = append(hosts, g.Switches[i]+":"+strconv.Itoa(h))
		}
	}
	out := []string{"switches=" + strings.Join(g.Switches, "+")}
	if len(links) > 0 {
		out = append(out, "links="+strings.Join(links, "+"))
	}
	return append(out, "hosts="+strings.Join(hosts, "+"))
}

// parseCustomParam reads one of custom's command-line parameters into g.
// Host counts are kept by name until every parameter is read (hosts may
// come before switches).
func parseCustomParam(g *CustomGraph, hosts map[string]int, hostOrder *[]string, key, val string) error {
	items := strings.Split(val, "+")
	switch key {
	case "switches":
		for _, n := range items {
			g.Switches = append(g.Switches, strings.TrimSpace(n))
		}
	case "links":
		for _, l := range items {
			a, b, ok := strings.Cut(strings.TrimSpace(l), "-")
			if !ok {
				return fmt.Errorf("parameter links: %q is not A-B", l)
			}
			g.Links = append(g.Links, [2]string{strings.TrimSpace(a), strings.TrimSpace(b)})
		}
	case "hosts":
		for _, h := range items {
			n, c, ok := strings.Cut(strings.TrimSpace(h), ":")
			v, err := strconv.Atoi(strings.TrimSpace(c))
			if !ok || err != nil {
				return fmt.Errorf("parameter hosts: %q is not SWITCH:COUNT", h)
			}
			n = strings.TrimSpace(n)
			if _, dup := hosts[n]; dup {
				return fmt.Errorf("parameter hosts: switch %s given twice", n)
			}
			hosts[n] = v
			*hostOrder = append(*hostOrder, n)
		}
	default:
		return fmt.Errorf("custom has no parameter %q (want switches, links, hosts)", key)
	}
	return nil
}

// setHosts fills g.Hosts from counts by switch name; a name that is
// not a switch is an error naming it.
func (g *CustomGraph) setHosts(counts map[string]int, order []string) error {
	id := g.index()
	g.Hosts = make([]int, len(g.Switches))
	for _, n := range order {
		i, ok := id[n]
		if !ok {
			return fmt.Errorf("parameter hosts: no switch %s", n)
		}
		g.Hosts[i] = counts[n]
	}
	return nil
}

// customDiameter is the largest switch distance between two switches with
// hosts, by a breadth-first search from each.
func customDiameter(t *Topology) int {
	best := 0
	for _, dist := range t.SwitchDistances() {
		for s, n := range dist { // nil rows: switches without hosts
			if t.Switches[s].NumHosts > 0 && n > best {
				best = n
			}
		}
	}
	return best
}

// SwitchDistances is, for every switch with hosts, the hop count from
// every switch to it (-1: unreachable); nil rows for switches without
// hosts. Row d, entry s: hops from s to d.
func (t *Topology) SwitchDistances() [][]int {
	out := make([][]int, len(t.Switches))
	var q []int
	for d := range t.Switches {
		if t.Switches[d].NumHosts == 0 {
			continue
		}
		out[d] = make([]int, len(t.Switches))
		// From d is to d: every link goes both ways.
		q = t.hopsFrom(d, out[d], q)
	}
	return out
}
