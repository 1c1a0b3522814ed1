package topology

import "fmt"

// LinkClass is the class of a link, which decides its shaping: host links
// join a host to its access switch; local links join switches of one group
// (Dragonfly), of one dimension (Flattened Butterfly) or an edge switch to an
// aggregation switch (Clos); global links join groups (Dragonfly) or climb
// above the aggregation level (Clos).
type LinkClass uint8

// Link classes, in port-numbering order.
const (
	ClassHost LinkClass = iota
	ClassLocal
	ClassGlobal
)

func (c LinkClass) String() string {
	switch c {
	case ClassHost:
		return "host"
	case ClassLocal:
		return "local"
	case ClassGlobal:
		return "global"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Endpoint is one end of an inter-switch link: a switch and its OpenFlow
// port number.
type Endpoint struct {
	Switch int `json:"switch"`
	Port   int `json:"port"`
}

// Port is a switch port. Port numbers start at 1 (OpenFlow's first physical
// port) and follow the order hosts, local ports, global ports.
type Port struct {
	Num   int       `json:"num"`
	Class LinkClass `json:"class"`
	// Host is the attached host's ID on host ports, -1 elsewhere.
	Host int `json:"host"`
	// Peer is the far end on inter-switch ports.
	Peer Endpoint `json:"peer"`
	// Dim is the dimension of a local port of a Flattened Butterfly, mesh,
	// torus, ring or M-tree.
	Dim int `json:"dim,omitempty"`
	// Dir is the direction a mesh, torus, ring or M-tree port leads along
	// Dim: +1 towards the next coordinate (across a torus's wrap link from
	// the last), -1 towards the previous.
	Dir int `json:"dir,omitempty"`
	// Lane tells a torus's or ring's parallel links apart (0 or 1).
	Lane int `json:"lane,omitempty"`
	// Up marks a Clos uplink (towards the core).
	Up bool `json:"up,omitempty"`
}

// Switch is one switch of the fabric.
type Switch struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	// Group is the addressing group: the Dragonfly group, the Flattened
	// Butterfly row along the first dimension, or the Clos pod. Switches
	// above the pods (Clos levels 3 and 4) have Group -1.
	Group int `json:"group"`
	// Index is the switch's position in its group (Dragonfly switch index,
	// FB first coordinate, Clos position within its level of the pod).
	Index int `json:"index"`
	// Coords are the Flattened Butterfly coordinates, first dimension first.
	Coords []int `json:"coords,omitempty"`
	// Level is the Clos level (1 edge, 2 aggregation, 3 and 4 above); 0 in
	// direct topologies.
	Level    int    `json:"level,omitempty"`
	NumHosts int    `json:"hosts"`
	Ports    []Port `json:"ports"`
}

// Port returns port number n (1-based).
func (s *Switch) Port(n int) *Port { return &s.Ports[n-1] }

// Host is an end node.
type Host struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Switch int    `json:"switch"`
	Port   int    `json:"port"`
	// Index is the host's position on its switch (0-based), which is its
	// port number minus one.
	Index int `json:"index"`
}

// Link is a cable. For host links A is the switch end and Host the host;
// for inter-switch links Host is -1.
type Link struct {
	Class LinkClass `json:"class"`
	A     Endpoint  `json:"a"`
	B     Endpoint  `json:"b"`
	Host  int       `json:"host"`
}

// Topology is a built fabric. Switch, host and link IDs index the slices.
type Topology struct {
	Spec     Spec     `json:"spec"`
	Switches []Switch `json:"switches"`
	Hosts    []Host   `json:"hosts"`
	Links    []Link   `json:"links"`

	groups int
}

// Build constructs the topology a Spec describes.
func Build(s Spec) (*Topology, error) {
	s = s.Normalize()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch s.Kind {
	case Dragonfly:
		return buildDragonfly(s), nil
	case FlatFly:
		return buildFlatFly(s), nil
	case Mesh, Torus, Ring, MTree:
		return buildGrid(s), nil
	case MyriClos:
		return buildMyriClos(s), nil
	case FatTree:
		return buildFatTree(s), nil
	case XGFT:
		return buildXGFT(s), nil
	case Custom:
		return buildCustom(s), nil
	default:
		return buildClos(s), nil
	}
}

// NumGroups is the number of addressing groups (Dragonfly groups, FB rows,
// Clos pods).
func (t *Topology) NumGroups() int { return t.groups }

// NumLinks counts host links and inter-switch links.
func (t *Topology) NumLinks() int { return len(t.Links) }

// NumPorts counts switch ports in use.
func (t *Topology) NumPorts() int {
	n := 0
	for i := range t.Switches {
		n += len(t.Switches[i].Ports)
	}
	return n
}

// Diameter is the largest number of inter-switch hops on a shortest path
// between two hosts. It follows from the construction (see the builders),
// and the tests check it against a breadth-first search.
func (t *Topology) Diameter() int {
	s := t.Spec
	switch s.Kind {
	case Dragonfly:
		if s.A == 1 {
			return 1
		}
		return 3
	case FlatFly:
		return len(s.Dims)
	case Mesh, Torus, Ring, MTree, MyriClos, FatTree:
		return seed002Diameter(s)
	case XGFT:
		return xgftDiameter(s)
	case Custom:
		return customDiameter(t)
	default:
		if s.Levels == 4 && s.Pods > s.K/2 {
			return 6
		}
		return 4
	}
}

// addSwitch appends a switch and returns its ID. Names are stable across
// runs so that lab state, rule files and results can refer to them.
func (t *Topology) addSwitch(sw Switch) int {
	sw.ID = len(t.Switches)
	t.Switches = append(t.Switches, sw)
	return sw.ID
}

func (t *Topology) addHosts(swID, n int) {
	sw := &t.Switches[swID]
	for i := 0; i < n; i++ {
		h := Host{ID: len(t.Hosts), Name: fmt.Sprintf("%sh%d", sw.Name, i), Switch: swID, Port: i + 1, Index: i}
		t.Hosts = append(t.Hosts, h)
		sw.Ports = append(sw.Ports, Port{Num: i + 1, Class: ClassHost, Host: h.ID})
		t.Links = append(t.Links, Link{Class: ClassHost, A: Endpoint{swID, i + 1}, Host: h.ID})
	}
	sw.NumHosts = n
}

// connect adds a port on each switch and the link between them.
// The port on a is an uplink in Clos terms.
func (t *Topology) connect(a, b int, c LinkClass) {
	sa, sb := &t.Switches[a], &t.Switches[b]
	pa, pb := len(sa.Ports)+1, len(sb.Ports)+1
	sa.Ports = append(sa.Ports, Port{Num: pa, Class: c, Host: -1, Peer: Endpoint{b, pb}, Up: true})
	sb.Ports = append(sb.Ports, Port{Num: pb, Class: c, Host: -1, Peer: Endpoint{a, pa}})
	t.Links = append(t.Links, Link{Class: c, A: Endpoint{a, pa}, B: Endpoint{b, pb}, Host: -1})
}

// wire joins two ports that the builder has already numbered, so that ports
// can be wired out of order (Dragonfly global ports).
func (t *Topology) wire(a, pa, b, pb int, c LinkClass) {
	t.Switches[a].Ports[pa-1] = Port{Num: pa, Class: c, Host: -1, Peer: Endpoint{b, pb}}
	t.Switches[b].Ports[pb-1] = Port{Num: pb, Class: c, Host: -1, Peer: Endpoint{a, pa}}
	t.Links = append(t.Links, Link{Class: c, A: Endpoint{a, pa}, B: Endpoint{b, pb}, Host: -1})
}

// maxAvgPathSwitches bounds the fabrics AvgPathSwitches measures: it
// searches from every switch.
const maxAvgPathSwitches = 4096

// AvgPathSwitches is seed 002's Avg.H ("the average number of switches
// that compose a path"): the mean, over all ordered pairs of hosts, a
// host with itself included, of the switches on a shortest path between
// them. That definition reproduces all seven rows of its Table 11 (4x4
// mesh 3.50, M-tree 4.81, ...). ok is false above 4,096 switches, where
// the breadth-first search from every switch would cost too much.
func (t *Topology) AvgPathSwitches() (avg float64, ok bool) {
	if len(t.Switches) > maxAvgPathSwitches || len(t.Hosts) == 0 {
		return 0, false
	}
	dist := make([]int, len(t.Switches))
	q := make([]int, 0, len(t.Switches))
	var sum float64
	for src := range t.Switches {
		na := t.Switches[src].NumHosts
		if na == 0 {
			continue
		}
		q = t.hopsFrom(src, dist, q)
		for dst := range t.Switches {
			if nb := t.Switches[dst].NumHosts; nb > 0 {
				if dist[dst] < 0 {
					return 0, false // disconnected
				}
				sum += float64(na*nb) * float64(dist[dst]+1)
			}
		}
	}
	h := float64(len(t.Hosts))
	return sum / (h * h), true
}

// hopsFrom fills dist with every switch's hop count from switch src (-1:
// unreachable), by a breadth-first search over the inter-switch links;
// q is the queue's storage, returned for reuse.
func (t *Topology) hopsFrom(src int, dist, q []int) []int {
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	q = append(q[:0], src)
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		for _, p := range t.Switches[u].Ports {
			if p.Class != ClassHost && dist[p.Peer.Switch] < 0 {
				dist[p.Peer.Switch] = dist[u] + 1
				q = append(q, p.Peer.Switch)
			}
		}
	}
	return q
}

// PortTo is switch s's first port to switch d (0: none).
func (t *Topology) PortTo(s, d int) int {
	for _, p := range t.Switches[s].Ports {
		if p.Class != ClassHost && p.Peer.Switch == d {
			return p.Num
		}
	}
	return 0
}

// LevelFirsts is the first switch ID of each level of a fat tree, leaves
// first (buildFatTree numbers level by level); nil for other kinds.
func (t *Topology) LevelFirsts() []int {
	if t.Spec.Kind != FatTree {
		return nil
	}
	var first []int
	for i := range t.Switches {
		if l := t.Switches[i].Level - 1; l >= len(first) {
			first = append(first, i)
		}
	}
	return first
}
