package vlan

import (
	"fmt"
	"slices"

	"github.com/ethfab/ethfab/topology"
)

// Method is a VLAN assignment method (seed 002 §3.2).
type Method string

const (
	// Fixed: N×N↦P routing, all paths from a switch's hosts in one tree,
	// the tree's VLAN the PVID of the switch's host ports, inter-switch
	// ports tagged members, host ports untagged members of every VLAN.
	Fixed Method = "fixed"
	// Renamed: C×N↦C routing, frames untagged on every wire; each input
	// port's PVID is a VLAN whose untagged members are the port and every
	// port a frame arriving on it may leave by; VLANs of equal members
	// merged, per switch.
	Renamed Method = "renamed"
)

// ParseMethod reads fixed or renamed.
func ParseMethod(s string) (Method, error) { return parseOne(s, "VLAN assignment", Fixed, Renamed) }

// parseOne is s as the one of vals it names, or an error naming what.
func parseOne[T ~string](s, what string, vals ...T) (T, error) {
	if i := slices.Index(vals, T(s)); i >= 0 {
		return vals[i], nil
	}
	return "", fmt.Errorf("unknown %s %q (want %s or %s)", what, s, vals[0], vals[1])
}

// Torus is the path set on a torus with two links between neighbours
// (seed 002 Table 3's: "two links between switches are used for breaking
// cycles in the torus").
type Torus string

const (
	// Dateline: dimension order, each ring the shorter way; a frame takes
	// lane 0 until it has crossed its ring's wrap link, lane 1 from it on.
	// Minimal; Table 3's 2k^(n-1) fixed VLANs at k = 4 only (pairedTies).
	Dateline Torus = "dateline"
	// Lines: dimension order, each ring two lines, one per lane: lane 0
	// the ring without its wrap link, lane 1 without the link half way
	// round; a source's frames take the line whose distances from it sum
	// least (lane 0 on a tie). Each lane is a line, so no cycle needs
	// breaking, and each ring holds two trees: Table 3's 2k^(n-1) fixed
	// VLANs at every k. Minimal at k = 4 only: 7% more hops on 6×6, 6% on
	// 8×8.
	Lines Torus = "lines"
)

// OrDefault is t, or Dateline when t is unset (a lab recorded, or options
// made, before the path set was a choice).
func (t Torus) OrDefault() Torus {
	if t == "" {
		return Dateline
	}
	return t
}

// ParseTorus reads dateline or lines.
func ParseTorus(s string) (Torus, error) { return parseOne(s, "torus path set", Dateline, Lines) }

// For says why path set t cannot route topology sp, or nil: lines needs a
// torus with two links between neighbours.
func (t Torus) For(sp topology.Spec) error {
	if t == Lines && (sp.Kind != topology.Torus || sp.Links != 2) {
		return fmt.Errorf("lines is for tori with two links between neighbours (torus:...,links=2), not %s", sp)
	}
	return nil
}

// FirstVID is the first VLAN ID handed out (seed 002 Fig. 1 numbers its
// VLANs #10, #11, ...).
const FirstVID = 10

// Assignment is a VLAN assignment of a whole fabric.
type Assignment struct {
	Method Method `json:"method"`
	// VLANs is the count Table 3 gives: the distinct VLANs of the fabric
	// for fixed, the most any switch uses for renamed (a renamed VLAN ID
	// means something only on its switch).
	VLANs    int      `json:"vlans"`
	Switches []Switch `json:"switches"`
	// Off: the links turned off the paths avoid; Torus: the path set on a
	// torus with two links between neighbours.
	Off   Off   `json:"-"`
	Torus Torus `json:"torus,omitempty"`
	// TaggedHosts are the hosts whose ports are tagged members (TagHosts).
	TaggedHosts map[int]bool `json:"-"`
	// path is the path set assigned (Verify walks it).
	path PathFunc
}

// Switch is one switch's VLAN configuration.
type Switch struct {
	Name string `json:"name"`
	// PVID per port (index port-1); 0 where no frame enters.
	PVID []int `json:"pvid"`
	// Members of each VLAN the switch holds: its ports, tagged or not.
	Members []Membership `json:"members"`
	// MACEntries is the size of FDB.
	MACEntries int `json:"mac_entries"`
	// FDB is the static registration's filtering database: per (VLAN,
	// destination host) whose frames cross the switch, the port they
	// leave by.
	FDB map[FDBKey]int `json:"-"`
}

// VIDs lists the VLAN IDs the switches hold, each once, in the order
// the switches first hold them (for the fixed assignment: the fabric's
// VLANs, which the learning procedure's hosts send in).
func (a *Assignment) VIDs() []int {
	seen := map[int]bool{}
	var out []int
	for _, sw := range a.Switches {
		for _, m := range sw.Members {
			if !seen[m.VID] {
				seen[m.VID] = true
				out = append(out, m.VID)
			}
		}
	}
	return out
}

// TagHosts makes the hosts' switch ports tagged members of every VLAN
// they are members of: seed 002's T ports (its Tables 4 and 5's U-T, T-U
// and T-T), where the host sends and receives 802.1Q frames, in its
// port's VLAN (the PVID, which stays for untagged frames). Paths,
// filtering databases and PVIDs stay as they are.
func (a *Assignment) TagHosts(top *topology.Topology, hosts []int) error {
	a.TaggedHosts = map[int]bool{}
	for _, h := range hosts {
		if h < 0 || h >= len(top.Hosts) {
			return fmt.Errorf("vlan: no host %d to tag", h)
		}
		a.TaggedHosts[h] = true
		hs := &top.Hosts[h]
		sw := &a.Switches[hs.Switch]
		for i := range sw.Members {
			m := &sw.Members[i]
			if !slices.Contains(m.Untagged, hs.Port) {
				continue
			}
			// Fresh slices: the fixed method's memberships share one.
			m.Untagged = slices.DeleteFunc(slices.Clone(m.Untagged), func(p int) bool { return p == hs.Port })
			m.Tagged = append(slices.Clone(m.Tagged), hs.Port)
			slices.Sort(m.Tagged)
		}
	}
	return nil
}

// FDBKey is a filtering-database key: a VLAN and a destination host.
type FDBKey struct{ VID, Host int }

// Membership is one VLAN on one switch.
type Membership struct {
	VID      int   `json:"vid"`
	Untagged []int `json:"untagged"`
	Tagged   []int `json:"tagged,omitempty"`
}

// Assign computes an assignment of method m over the topology's path set
// (Path). The fixed method fails where the paths from a switch do not form
// a tree, its precondition.
func Assign(top *topology.Topology, m Method) (*Assignment, error) {
	return AssignOff(top, m, Dateline, nil)
}

// AssignOff is Assign over the paths around links turned off (OffPaths),
// with torus path set tp.
func AssignOff(top *topology.Topology, m Method, tp Torus, off Off) (*Assignment, error) {
	if err := tp.For(top.Spec); err != nil {
		return nil, fmt.Errorf("vlan: %w", err)
	}
	a, err := AssignPaths(top, m, OffPaths(top, m, tp, off))
	if a != nil {
		a.Off, a.Torus = off, tp
	}
	return a, err
}

// PathFunc is a path set: the switch path from switch s, entered by host
// port port, to switch d (Hop's conventions).
type PathFunc func(s, port, d int) ([]Hop, error)

// AssignPaths computes an assignment of method m over any path set, as
// seed 002 assigns VLANs to "an arbitrary topology" routed by any
// deadlock-free routing (its Theorem 2 bounds the counts: fixed at most
// the number of switches, renamed at most the switch degree).
func AssignPaths(top *topology.Topology, m Method, path PathFunc) (*Assignment, error) {
	paths, err := allPaths(top, m, path)
	if err != nil {
		return nil, err
	}
	var a *Assignment
	switch m {
	case Fixed:
		a, err = fixed(top, paths)
	case Renamed:
		a, err = renamed(top, paths)
	default:
		return nil, fmt.Errorf("vlan: unknown assignment %q", m)
	}
	if a != nil {
		a.path = path
	}
	return a, err
}

// allPaths is Path for every ordered pair of switches with hosts, the
// source's own included (s == d: one hop): from every host port for the
// renamed method, each of which is an input port, from the first for fixed.
// paths[s][d] lists them.
func allPaths(top *topology.Topology, m Method, path PathFunc) ([][][][]Hop, error) {
	paths := make([][][][]Hop, len(top.Switches))
	for s := range top.Switches {
		ports := hostPorts(&top.Switches[s])
		if len(ports) == 0 {
			continue
		}
		if m == Fixed {
			ports = ports[:1]
		}
		paths[s] = make([][][]Hop, len(top.Switches))
		for d := range top.Switches {
			if top.Switches[d].NumHosts == 0 {
				continue
			}
			for _, port := range ports {
				p, err := path(s, port, d)
				if err != nil {
					return nil, err
				}
				paths[s][d] = append(paths[s][d], p)
			}
		}
	}
	return paths, nil
}

// link is one direction of an inter-switch link: a switch and the port it
// sends on.
type link struct{ sw, port int }

// fixed is seed 002's fixed assignment: "Step 1: Let t_i be the tree
// topology that contains all paths from switch i … Step 2: If an existing
// VLAN v includes t_i, let v_i := v; otherwise, create a new VLAN …
// Step 3: Set the PVID of the ports of switch i, that connect to hosts,
// to v_i. Step 4: Add each port for connecting a switch in t_i to v_i,
// and make this port 'tagged' members of v_i … Step 6: Register each port
// connected to a host in all VLANs as an 'untagged' member."
func fixed(top *topology.Topology, paths [][][][]Hop) (*Assignment, error) {
	var trees []map[link]bool // per VLAN: its links, both directions
	vOf := make([]int, len(top.Switches))
	for i := range top.Switches {
		vOf[i] = -1
		if paths[i] == nil {
			continue
		}
		t := map[link]bool{}
		entered := map[int]link{i: {-1, 0}} // switch -> the link it was entered by
		for _, ps := range paths[i] {
			if len(ps) == 0 {
				continue
			}
			p := ps[0]
			for k, h := range p {
				if h.Out == 0 {
					continue
				}
				next := p[k+1].Switch
				if from, ok := entered[next]; ok && from != (link{h.Switch, h.Out}) {
					return nil, fmt.Errorf("vlan: the fixed assignment needs the paths from %s to form a tree, but they enter %s by two links (from %s port %d and %s port %d)",
						top.Switches[i].Name, top.Switches[next].Name, name(top, from.sw), from.port, top.Switches[h.Switch].Name, h.Out)
				}
				entered[next] = link{h.Switch, h.Out}
				t[link{h.Switch, h.Out}] = true
				t[link{next, p[k+1].In}] = true
			}
		}
		for v, tv := range trees {
			if includes(tv, t) {
				vOf[i] = v
				break
			}
		}
		if vOf[i] < 0 {
			vOf[i] = len(trees)
			trees = append(trees, t)
		}
	}
	a := &Assignment{Method: Fixed, VLANs: len(trees)}
	for x := range top.Switches {
		sw := &top.Switches[x]
		out := Switch{Name: sw.Name, PVID: make([]int, len(sw.Ports))}
		var hostPorts []int
		for _, p := range sw.Ports {
			if p.Class == topology.ClassHost {
				hostPorts = append(hostPorts, p.Num)
				out.PVID[p.Num-1] = FirstVID + vOf[x]
			}
		}
		for v, t := range trees {
			m := Membership{VID: FirstVID + v, Untagged: hostPorts}
			for _, p := range sw.Ports {
				if p.Class != topology.ClassHost && t[link{x, p.Num}] {
					m.Tagged = append(m.Tagged, p.Num)
				}
			}
			if len(m.Tagged) > 0 || vOf[x] == v || len(hostPorts) > 0 {
				out.Members = append(out.Members, m)
			}
		}
		a.Switches = append(a.Switches, out)
	}
	if err := fdb(top, paths, a, func(s int) int { return FirstVID + vOf[s] }); err != nil {
		return nil, err
	}
	return a, nil
}

func name(top *topology.Topology, sw int) string {
	if sw < 0 {
		return "its hosts"
	}
	return top.Switches[sw].Name
}

func includes(big, small map[link]bool) bool {
	for l := range small {
		if !big[l] {
			return false
		}
	}
	return true
}

// renamed is seed 002's renamed assignment: "Step 1: Let the PVID of port
// i be VLAN v_i, and register the port in v_i as an 'untagged' member …
// Step 2: Register each output port to which frames from the input port i
// can be routed in v_i as an 'untagged' member … Step 4: Combine two or
// more VLANs whose member ports are the same into a single VLAN." A host
// port's frames may leave by any other host port of its switch.
func renamed(top *topology.Topology, paths [][][][]Hop) (*Assignment, error) {
	outs := make([]map[int]map[int]bool, len(top.Switches)) // switch -> in port -> out ports
	add := func(sw, in, out int) {
		if outs[sw] == nil {
			outs[sw] = map[int]map[int]bool{}
		}
		if outs[sw][in] == nil {
			outs[sw][in] = map[int]bool{in: true}
		}
		outs[sw][in][out] = true
	}
	for s := range paths {
		for _, ps := range paths[s] {
			for _, p := range ps {
				for _, h := range p {
					dsts := []int{h.Out}
					if h.Out == 0 {
						dsts = hostPorts(&top.Switches[h.Switch])
					}
					for _, out := range dsts {
						if out != h.In {
							add(h.Switch, h.In, out)
						}
					}
				}
			}
		}
	}
	a := &Assignment{Method: Renamed}
	vOf := make([]map[int]int, len(top.Switches)) // switch -> in port -> VLAN index
	for x := range top.Switches {
		sw := &top.Switches[x]
		out := Switch{Name: sw.Name, PVID: make([]int, len(sw.Ports))}
		vOf[x] = map[int]int{}
		byKey := map[string]int{}
		for in := 1; in <= len(sw.Ports); in++ {
			set := outs[x][in]
			if set == nil {
				continue
			}
			ports := make([]int, 0, len(set))
			for p := range set {
				ports = append(ports, p)
			}
			slices.Sort(ports)
			key := fmt.Sprint(ports)
			v, ok := byKey[key]
			if !ok {
				v = len(out.Members)
				byKey[key] = v
				out.Members = append(out.Members, Membership{VID: FirstVID + v, Untagged: ports})
			}
			out.PVID[in-1] = FirstVID + v
			vOf[x][in] = v
		}
		a.VLANs = max(a.VLANs, len(out.Members))
		a.Switches = append(a.Switches, out)
	}
	return a, fdb(top, paths, a, nil)
}

func hostPorts(sw *topology.Switch) []int {
	var out []int
	for _, p := range sw.Ports {
		if p.Class == topology.ClassHost {
			out = append(out, p.Num)
		}
	}
	return out
}

// fdb fills each switch's static filtering database from the paths: an
// entry per (VLAN, destination host) whose frames cross it in that VLAN,
// with the port they leave by. vlanOf gives a fixed assignment's VLAN by
// source switch; renamed VLANs are the PVIDs of the ports the frames come
// in by. A switch sending one VLAN's frames for one host out of two ports
// cannot be configured (the method's merge of equal member sets does not
// promise it cannot happen): an error.
func fdb(top *topology.Topology, paths [][][][]Hop, a *Assignment, vlanOf func(s int) int) error {
	for i := range a.Switches {
		a.Switches[i].FDB = map[FDBKey]int{}
	}
	for s := range paths {
		for d, ps := range paths[s] {
			for _, p := range ps {
				for _, h := range p {
					sw := &a.Switches[h.Switch]
					v := sw.PVID[h.In-1]
					if vlanOf != nil {
						v = vlanOf(s)
					}
					for _, port := range hostPorts(&top.Switches[d]) {
						out := h.Out
						if out == 0 {
							out = port
						}
						k := FDBKey{v, top.Switches[d].Port(port).Host}
						if was, ok := sw.FDB[k]; ok && was != out {
							return fmt.Errorf("vlan: %s would send VLAN %d's frames for %s out of ports %d and %d",
								sw.Name, v, top.Hosts[k.Host].Name, was, out)
						}
						sw.FDB[k] = out
					}
				}
			}
		}
	}
	for i := range a.Switches {
		a.Switches[i].MACEntries = len(a.Switches[i].FDB)
	}
	return nil
}

// HostLimit is seed 002's Eq. 1, H = T/V: the hosts a fabric can hold
// when every switch's MAC table has T entries and V VLANs are in use.
func HostLimit(t, v int) int {
	if v <= 0 {
		return 0
	}
	return t / v
}

// String summarises an assignment for people.
func (a *Assignment) String() string {
	return fmt.Sprintf("%s VLAN assignment: %d VLANs", a.Method, a.VLANs)
}

// Table3 is seed 002 Table 3's VLAN count for the topology and method,
// where it gives one (DOR; tori with two links between switches): the
// formula, its value, and false where the table has no row.
func Table3(sp topology.Spec, m Method) (formula string, value int, ok bool) {
	return table3(sp, m, false)
}

// Table3OneLinkOff is Table 3's "1-link deactivation" row: a mesh or a
// torus with "a single horizontal (x-directional) link" off. The paper
// gives no row for the other topologies, nor for a link along another
// dimension (on a mesh, OffPaths goes round one by up*/down* for renamed
// VLANs and repaired trees for fixed ones).
func Table3OneLinkOff(sp topology.Spec, m Method) (formula string, value int, ok bool) {
	return table3(sp, m, true)
}

func table3(sp topology.Spec, m Method, linkOff bool) (formula string, value int, ok bool) {
	cube := func() (k, n int, ok bool) {
		if len(sp.Dims) == 0 {
			return 0, 0, false
		}
		for _, d := range sp.Dims {
			if d != sp.Dims[0] {
				return 0, 0, false
			}
		}
		return sp.Dims[0], len(sp.Dims), true
	}
	pow := func(b, e int) int {
		v := 1
		for range e {
			v *= b
		}
		return v
	}
	switch {
	case sp.Kind == topology.Mesh:
		if k, n, ok := cube(); ok {
			switch {
			case m == Renamed:
				return "n", n, true
			case linkOff:
				return "(k+1)k^(n-2)", (k + 1) * pow(k, n-2), n >= 2
			}
			return "k^(n-1)", pow(k, n-1), true
		}
	case sp.Kind == topology.Torus && sp.Links == 2:
		if k, n, ok := cube(); ok {
			switch {
			case m == Renamed:
				return "3n", 3 * n, true
			case linkOff:
				return "2(k+1)k^(n-2)", 2 * (k + 1) * pow(k, n-2), n >= 2
			}
			return "2k^(n-1)", 2 * pow(k, n-1), true
		}
	case linkOff:
	case sp.Kind == topology.FatTree:
		if m == Fixed {
			return "u^r", pow(sp.U, sp.R), true
		}
		return "u", sp.U, true
	}
	return "", 0, false
}
