// Package graph draws a fabric: its switches, hosts and links as Graphviz
// dot, Mermaid, or networkx's node-link JSON (`ethfab graph`). It is data
// in, data out; rendering dot to SVG runs Graphviz (results.RenderDot).
//
// Every form has one node per switch and per host (named as in the lab:
// g0s1, g0s1h0), one edge per cable, and the link's class (host, local,
// global) on the edge; dot and Mermaid group the switches of a Dragonfly
// group, a Flattened Butterfly row or a Clos pod (and the Clos switches
// above the pods) into one cluster each, with their hosts.
package graph

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ethfab/ethfab/topology"
)

// Options choose what a drawing shows.
type Options struct {
	// NoHosts leaves the hosts and their links out (a 1,056-host
	// Dragonfly's switches fit a page; its hosts do not).
	NoHosts bool
}

// cluster is one group of switches: its key (a stable identifier) and
// label.
type cluster struct {
	key, label string
	switches   []int
}

// clusters groups t's switches by Dragonfly group, Flattened Butterfly
// row or Clos pod (those above the pods together); none for other kinds,
// whose groups are not a unit of the design.
func clusters(t *topology.Topology) []cluster {
	var word string
	switch t.Spec.Kind {
	case topology.Dragonfly:
		word = "group"
	case topology.FlatFly:
		word = "row"
	case topology.Clos:
		word = "pod"
	default:
		return nil
	}
	byGroup := map[int][]int{}
	for i := range t.Switches {
		byGroup[t.Switches[i].Group] = append(byGroup[t.Switches[i].Group], i)
	}
	groups := make([]int, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Ints(groups)
	out := make([]cluster, 0, len(groups))
	for _, g := range groups {
		c := cluster{key: fmt.Sprintf("%s%d", word, g), label: fmt.Sprintf("%s %d", word, g), switches: byGroup[g]}
		if g < 0 {
			c.key, c.label = "core", "core"
		}
		out = append(out, c)
	}
	return out
}

// hostsOf lists each switch's hosts.
func hostsOf(t *topology.Topology) [][]int {
	out := make([][]int, len(t.Switches))
	for h := range t.Hosts {
		s := t.Hosts[h].Switch
		out[s] = append(out[s], h)
	}
	return out
}

// edge is one cable as drawn: its ends' node names and ports (0 on a
// host) and its class.
type edge struct {
	a, b         string
	aPort, bPort int
	class        topology.LinkClass
}

func edges(t *topology.Topology, o Options) []edge {
	var out []edge
	for _, l := range t.Links {
		a := t.Switches[l.A.Switch].Name
		if l.Host >= 0 {
			if o.NoHosts {
				continue
			}
			out = append(out, edge{a: a, b: t.Hosts[l.Host].Name, aPort: l.A.Port, class: l.Class})
			continue
		}
		out = append(out, edge{a: a, b: t.Switches[l.B.Switch].Name, aPort: l.A.Port, bPort: l.B.Port, class: l.Class})
	}
	return out
}

// Link classes' styles, shared by dot and the SVG: host links thin and
// grey, local links blue, global links red and thick.
var dotStyle = map[topology.LinkClass]string{
	topology.ClassHost:   `color="#9e9e9e"`,
	topology.ClassLocal:  `color="#1f77b4"`,
	topology.ClassGlobal: `color="#d62728", penwidth=2`,
}

// Dot is t as a Graphviz graph (`dot -Tsvg` draws it).
func Dot(t *topology.Topology, o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph %s {\n", quote(t.Spec.String()))
	b.WriteString("\tgraph [fontname=\"Helvetica\", overlap=false, splines=true];\n")
	b.WriteString("\tnode [fontname=\"Helvetica\", shape=box, style=\"rounded,filled\", fillcolor=\"#f5f5f5\"];\n")
	b.WriteString("\tedge [fontname=\"Helvetica\"];\n")
	hosts := hostsOf(t)
	node := func(indent string, s int) {
		fmt.Fprintf(&b, "%s%s;\n", indent, quote(t.Switches[s].Name))
		if o.NoHosts {
			return
		}
		for _, h := range hosts[s] {
			fmt.Fprintf(&b, "%s%s [shape=ellipse, fontsize=9, fillcolor=\"#ffffff\"];\n", indent, quote(t.Hosts[h].Name))
		}
	}
	cs := clusters(t)
	if len(cs) == 0 {
		for s := range t.Switches {
			node("\t", s)
		}
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "\tsubgraph %s {\n\t\tlabel=%s;\n\t\tstyle=dashed;\n", quote("cluster_"+c.key), quote(c.label))
		for _, s := range c.switches {
			node("\t\t", s)
		}
		b.WriteString("\t}\n")
	}
	for _, e := range edges(t, o) {
		tip := fmt.Sprintf("%s:%d - %s", e.a, e.aPort, e.b)
		if e.bPort > 0 {
			tip += fmt.Sprintf(":%d", e.bPort)
		}
		fmt.Fprintf(&b, "\t%s -- %s [class=%s, tooltip=%s, %s];\n", quote(e.a), quote(e.b), e.class, quote(tip), dotStyle[e.class])
	}
	b.WriteString("}\n")
	return b.String()
}

// quote is a dot ID: every name is quoted, so any switch name is one.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Mermaid is t as a Mermaid flowchart (GitHub renders it in Markdown).
// Host links are dotted, global links thick.
func Mermaid(t *topology.Topology, o Options) string {
	var b strings.Builder
	b.WriteString("graph LR\n")
	hosts := hostsOf(t)
	node := func(indent string, s int) {
		fmt.Fprintf(&b, "%s%s[%s]\n", indent, mermaidID(t.Switches[s].Name), t.Switches[s].Name)
		if o.NoHosts {
			return
		}
		for _, h := range hosts[s] {
			fmt.Fprintf(&b, "%s%s((%s))\n", indent, mermaidID(t.Hosts[h].Name), t.Hosts[h].Name)
		}
	}
	cs := clusters(t)
	if len(cs) == 0 {
		for s := range t.Switches {
			node("  ", s)
		}
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "  subgraph %s [%s]\n", c.key, c.label)
		for _, s := range c.switches {
			node("    ", s)
		}
		b.WriteString("  end\n")
	}
	arrow := map[topology.LinkClass]string{topology.ClassHost: "-.-", topology.ClassLocal: "---", topology.ClassGlobal: "==="}
	for _, e := range edges(t, o) {
		fmt.Fprintf(&b, "  %s %s %s\n", mermaidID(e.a), arrow[e.class], mermaidID(e.b))
	}
	return b.String()
}

// mermaidID makes a name a Mermaid node ID (the label keeps the name):
// letters, digits and underscores (a Clos's c0-0 becomes c0_0; no other
// kind's names have a dash, and custom names cannot), and not a keyword
// ("end": a custom switch may be called so).
func mermaidID(s string) string {
	id := strings.Map(func(r rune) rune {
		if r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
	if strings.EqualFold(id, "end") || strings.EqualFold(id, "graph") || strings.EqualFold(id, "subgraph") {
		return "n_" + id
	}
	return id
}

// NodeLink is networkx's node-link form of t (json_graph.node_link_data,
// with links under "links": nx.node_link_graph(data, edges="links")
// reads it back): an undirected multigraph, since tori have parallel
// links.
type NodeLink struct {
	Directed   bool           `json:"directed"`
	Multigraph bool           `json:"multigraph"`
	Graph      map[string]any `json:"graph"`
	Nodes      []Node         `json:"nodes"`
	Links      []Link         `json:"links"`
}

// Node is a switch or a host.
type Node struct {
	ID   string `json:"id"`
	Type string `json:"type"` // switch or host
	// Switches: the addressing group (Dragonfly group, FB row, Clos
	// pod; -1 above the pods), the index in it, FB coordinates and the
	// Clos level.
	Group  *int  `json:"group,omitempty"`
	Index  *int  `json:"index,omitempty"`
	Coords []int `json:"coords,omitempty"`
	Level  int   `json:"level,omitempty"`
	// Hosts: the access switch and its port.
	Switch string `json:"switch,omitempty"`
	Port   int    `json:"port,omitempty"`
}

// Link is a cable: its ends, their ports (0 on a host), and its class.
type Link struct {
	Source     string `json:"source"`
	Target     string `json:"target"`
	Key        int    `json:"key"`
	Class      string `json:"class"`
	SourcePort int    `json:"source_port"`
	TargetPort int    `json:"target_port,omitempty"`
}

// JSON is t in node-link form, indented.
func JSON(t *topology.Topology, o Options) ([]byte, error) {
	g := NodeLink{Multigraph: true, Graph: map[string]any{"name": t.Spec.String(), "kind": string(t.Spec.Kind)}}
	for i := range t.Switches {
		s := &t.Switches[i]
		group, index := s.Group, s.Index
		g.Nodes = append(g.Nodes, Node{ID: s.Name, Type: "switch", Group: &group, Index: &index, Coords: s.Coords, Level: s.Level})
	}
	if !o.NoHosts {
		for _, h := range t.Hosts {
			g.Nodes = append(g.Nodes, Node{ID: h.Name, Type: "host", Switch: t.Switches[h.Switch].Name, Port: h.Port})
		}
	}
	keys := map[[2]string]int{}
	for _, e := range edges(t, o) {
		k := [2]string{min(e.a, e.b), max(e.a, e.b)}
		g.Links = append(g.Links, Link{Source: e.a, Target: e.b, Key: keys[k], Class: e.class.String(), SourcePort: e.aPort, TargetPort: e.bPort})
		keys[k]++
	}
	return json.MarshalIndent(g, "", "  ")
}

// Formats are the forms Render writes.
var Formats = []string{"dot", "mermaid", "json"}

// Render writes t in format (one of Formats).
func Render(t *topology.Topology, format string, o Options) ([]byte, error) {
	switch format {
	case "dot":
		return []byte(Dot(t, o)), nil
	case "mermaid":
		return []byte(Mermaid(t, o)), nil
	case "json":
		b, err := JSON(t, o)
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	}
	return nil, fmt.Errorf("unknown format %q (want %s or svg)", format, strings.Join(Formats, ", "))
}
