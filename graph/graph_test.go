package graph

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/internal/topotest"
	"github.com/ethfab/ethfab/topology"
)

// build is the one topology fixture (internal/topotest).
var build = topotest.Build

func count(t *topology.Topology, c topology.LinkClass) int {
	n := 0
	for _, l := range t.Links {
		if l.Class == c {
			n++
		}
	}
	return n
}

// Every form draws every switch, host and cable once, with its class, and
// dot and Mermaid put each Dragonfly group in its own cluster.
func TestEveryNodeAndCable(t *testing.T) {
	top := build(t, "dragonfly:p=2,a=4,h=2")
	dot := Dot(top, Options{})
	if n := strings.Count(dot, "subgraph \"cluster_group"); n != 9 {
		t.Errorf("dot: %d group clusters, want 9", n)
	}
	for _, s := range top.Switches {
		if strings.Count(dot, "\t\t\""+s.Name+"\";") != 1 {
			t.Errorf("dot: switch %s not declared once in a cluster", s.Name)
		}
	}
	for _, h := range top.Hosts {
		if !strings.Contains(dot, "\""+h.Name+"\" [shape=ellipse") {
			t.Errorf("dot: no host %s", h.Name)
		}
	}
	for class, want := range map[string]int{"host": count(top, topology.ClassHost), "local": count(top, topology.ClassLocal), "global": count(top, topology.ClassGlobal)} {
		if n := strings.Count(dot, "[class="+class+","); n != want {
			t.Errorf("dot: %d %s edges, want %d", n, class, want)
		}
	}
	mm := Mermaid(top, Options{})
	if n := strings.Count(mm, "  subgraph group"); n != 9 {
		t.Errorf("mermaid: %d group subgraphs, want 9", n)
	}
	edges := regexp.MustCompile(`(?m)^  \S+ (---|===|-\.-) \S+$`).FindAllString(mm, -1)
	if len(edges) != len(top.Links) {
		t.Errorf("mermaid: %d edges, want %d", len(edges), len(top.Links))
	}
	if n := strings.Count(mm, " === "); n != count(top, topology.ClassGlobal) {
		t.Errorf("mermaid: %d thick edges, want the %d global links", n, count(top, topology.ClassGlobal))
	}

	// Without hosts: switches and inter-switch cables only.
	dot = Dot(top, Options{NoHosts: true})
	if strings.Contains(dot, "ellipse") || strings.Contains(dot, "class=host") {
		t.Error("dot without hosts still draws hosts")
	}
}

// The JSON is networkx's node-link form: every link's ends are nodes, a
// switch carries its group and index, a host its switch and port, and
// parallel links (a torus of two lanes) get keys 0 and 1.
func TestNodeLink(t *testing.T) {
	for _, spec := range []string{"dragonfly:p=2,a=4,h=2", "clos:k=4", "torus:dims=3x3,links=2", "custom:switches=A+B+C,links=A-B+B-C+A-C,hosts=A:1+C:2"} {
		top := build(t, spec)
		b, err := JSON(top, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var g NodeLink
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		if g.Directed || !g.Multigraph || g.Graph["name"] != top.Spec.String() {
			t.Errorf("%s: graph %+v", spec, g.Graph)
		}
		if len(g.Nodes) != len(top.Switches)+len(top.Hosts) || len(g.Links) != len(top.Links) {
			t.Fatalf("%s: %d nodes, %d links; want %d, %d", spec, len(g.Nodes), len(g.Links), len(top.Switches)+len(top.Hosts), len(top.Links))
		}
		ids := map[string]Node{}
		for _, n := range g.Nodes {
			ids[n.ID] = n
		}
		keys := map[[3]any]bool{}
		for _, l := range g.Links {
			a, b := ids[l.Source], ids[l.Target]
			if a.ID == "" || b.ID == "" {
				t.Fatalf("%s: link %+v to a node that is not there", spec, l)
			}
			if (b.Type == "host") != (l.Class == "host") || (b.Type == "host" && b.Switch != a.ID) {
				t.Errorf("%s: link %+v between %+v and %+v", spec, l, a, b)
			}
			k := [3]any{min(l.Source, l.Target), max(l.Source, l.Target), l.Key}
			if keys[k] {
				t.Errorf("%s: key %d used twice between %s and %s", spec, l.Key, l.Source, l.Target)
			}
			keys[k] = true
		}
		if spec == "torus:dims=3x3,links=2" {
			if n := 0; !func() bool {
				for k := range keys {
					if k[2] == 1 {
						n++
					}
				}
				return n > 0
			}() {
				t.Errorf("%s: no parallel link got key 1", spec)
			}
		}
	}
}

// A Clos's switches above the pods share one cluster; kinds without
// groups have none; a switch named like a Mermaid keyword is renamed.
func TestClusters(t *testing.T) {
	dot := Dot(build(t, "clos:k=4,levels=3"), Options{})
	if !strings.Contains(dot, `subgraph "cluster_core"`) || strings.Count(dot, `subgraph "cluster_pod`) != 4 {
		t.Errorf("clos: want 4 pod clusters and a core one:\n%s", dot)
	}
	if dot := Dot(build(t, "mesh:dims=3x3"), Options{}); strings.Contains(dot, "subgraph") {
		t.Error("a mesh has no clusters")
	}
	mm := Mermaid(build(t, "custom:switches=end+B,links=end-B,hosts=B:1"), Options{})
	if !strings.Contains(mm, "n_end[end]") || !strings.Contains(mm, "n_end --- B") {
		t.Errorf("mermaid keyword:\n%s", mm)
	}
	mm = Mermaid(build(t, "clos:k=4,levels=3"), Options{})
	if !strings.Contains(mm, "c0_0[c0-0]") || regexp.MustCompile(`(?m)^  \S*-\d\S* (---|===|-\.-)`).MatchString(mm) {
		t.Errorf("mermaid: a Clos's names with a dash should be IDs without:\n%s", mm)
	}
}
