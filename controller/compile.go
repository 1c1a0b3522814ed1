package controller

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/compaction"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// Mode is a routing mode.
type Mode string

// Routing modes. Minimal: Dragonfly local-global-local, Flattened Butterfly
// dimension order (last dimension first, matching the address layout), Clos
// up/down with a static per-source uplink. Valiant: every host's traffic to
// another group leaves through a statically assigned non-minimal port of
// its switch (seed 000 §V-D, Fig. 10) and is routed minimally from there.
// Conditional: minimal default rules that the switch disables while their
// output port is paused, over alternatives (seed 000 §V-B..D; see
// conditional.go). QCNSwitch: the conditional tables, whose bitmask the
// switch sets from a per-port probability of routing minimally that QCN
// congestion notifications lower (seed 004, package qcnswitch) instead of
// from PAUSE.
const (
	Minimal     Mode = "minimal"
	Valiant     Mode = "valiant"
	Conditional Mode = "conditional"
	QCNSwitch   Mode = "qcn-switch"
	// VLAN: seed 002's switch-tagged VLAN routing on its testbed
	// topologies, an 802.1Q bridge per switch in OpenFlow (vlan.go).
	VLAN Mode = "vlan"
	// Shortest: seed 003's static oblivious shortest paths (paths.go) on
	// the path-routed kinds (XGFTs, custom fabrics, seed 002's), d-mod-m
	// where there is a choice; there it is what minimal means, named as
	// seed 003 names its baseline.
	Shortest Mode = "shortest"
	// SnoopAR: seed 003's snoop-based adaptive routing: the shortest
	// routing's tables, one rule per destination host, whose output port
	// each switch's own logic moves among the destination's eligible ports
	// (eligible.go) as the congestion notifications it snoops say
	// (package snoopar).
	SnoopAR Mode = "snoop-ar"
)

// ShortestPaths says the mode routes on the path-routed kinds' shortest
// paths (paths.go): minimal, shortest and snoop-ar, which starts there.
func (m Mode) ShortestPaths() bool { return m == Minimal || m == Shortest || m == SnoopAR }

// Modes are the routing modes' names, in the order errors list them.
var Modes = []string{string(Minimal), string(Valiant), string(Conditional), string(QCNSwitch), string(VLAN), string(Shortest), string(SnoopAR)}

// Conditions says the mode's tables carry conditional rules and a
// condition bitmask the switch's own logic sets (conditional, qcn-switch).
func (m Mode) Conditions() bool { return m == Conditional || m == QCNSwitch }

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	if slices.Contains(Modes, s) {
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown routing mode %q (want %s or %s)", s, strings.Join(Modes[:len(Modes)-1], ", "), Modes[len(Modes)-1])
}

// Options select what the controller compiles.
type Options struct {
	Mode Mode
	// VLANAssign is the VLAN mode's assignment method (default renamed,
	// the switch-tagged one); VLANOff the links off its paths avoid (the
	// safe order of seed 002's link regulation).
	VLANAssign vlan.Method
	VLANOff    vlan.Off
	// VLANTorus is the VLAN paths' set on a torus with two links between
	// neighbours (default dateline; vlan.Torus).
	VLANTorus vlan.Torus
	// VLANWas, while paths change (fabric.Lab.Reroute), is the assignment
	// they change from: each switch's transit table keeps its routes
	// below the new ones (vlanTransit).
	VLANWas *vlan.Assignment
	// VLANTagged are the hosts (IDs) whose ports are tagged members of
	// their VLANs (routing.vlan.tagged_hosts; vlan.Assignment.TagHosts).
	VLANTagged []int
	// VLANLearn makes each switch a learning 802.1Q bridge instead of
	// registering the hosts' MACs (routing.vlan.macs learn; fixed
	// assignment only), its entries aging out after VLANAging (0: never).
	VLANLearn bool
	VLANAging time.Duration
	Compact   bool // merge routing rules into an optimal prefix table (ORTC)
	// Originals, when set (one per host), selects assign rewrite
	// (PortLand/MOOSE style, seed 000 §IV): hosts keep these original
	// MACs and their access switch rewrites the source to the pseudo-MAC
	// on ingress and the destination back to the original on egress, so
	// the fabric still routes on pseudo-MACs.
	Originals []addressing.MAC
	// SourceGuard drops, at each access switch, frames from a host port
	// whose source is not that port's host (guard.go).
	SourceGuard bool
}

// Controller compiles the tables of one fabric.
type Controller struct {
	top  *topology.Topology
	plan *addressing.Plan
	opts Options
	tree [][]int32 // per switch: ports on the broadcast tree
	// levelFirst is a fat tree's first switch ID per level (paths.go).
	levelFirst []int
	// dist is a custom fabric's switch distances (Topology.SwitchDistances).
	dist [][]int
	// vlan is the VLAN mode's assignment.
	vlan *vlan.Assignment
}

// New prepares a controller; tables are compiled on demand per switch.
func New(plan *addressing.Plan, opts Options) (*Controller, error) {
	if opts.Mode == "" {
		opts.Mode = Minimal
	}
	if _, err := ParseMode(string(opts.Mode)); err != nil {
		return nil, err
	}
	if opts.Originals != nil && len(opts.Originals) != len(plan.Topology().Hosts) {
		return nil, fmt.Errorf("%d original MACs for %d hosts", len(opts.Originals), len(plan.Topology().Hosts))
	}
	if opts.Originals != nil && opts.Mode.Conditions() {
		// Both want table 0 for every frame from a host: the rewrite and the
		// condition bitmask would have to be loaded by the same rules.
		return nil, fmt.Errorf("%s routing does not combine with assign rewrite (use assign static or dmp)", opts.Mode)
	}
	c := &Controller{top: plan.Topology(), plan: plan, opts: opts}
	if opts.Mode == VLAN {
		if !c.top.Spec.Kind.Testbed() {
			return nil, fmt.Errorf("vlan routing needs one of seed 002's topologies (mesh, torus, ring, mtree, myriclos, fattree), not a %s", c.top.Spec.Kind)
		}
		if opts.VLANAssign == "" {
			c.opts.VLANAssign = vlan.Renamed
		}
		c.opts.VLANTorus = opts.VLANTorus.OrDefault()
		if opts.VLANLearn && c.opts.VLANAssign != vlan.Fixed {
			// Seed 002's learning procedure has each host send in every
			// VLAN; a renamed VLAN ID means something only inside its
			// switch, so no host can.
			return nil, fmt.Errorf("macs learn needs the fixed assignment (a renamed VLAN exists only inside its switch: no host can send in it)")
		}
		if opts.VLANLearn && len(opts.VLANOff) > 0 {
			return nil, fmt.Errorf("macs learn: paths around links off need static registration (learned entries would keep the old paths)")
		}
		var err error
		if c.vlan, err = vlan.AssignOff(c.top, c.opts.VLANAssign, c.opts.VLANTorus, opts.VLANOff); err != nil {
			return nil, err
		}
		if err := c.vlan.TagHosts(c.top, opts.VLANTagged); err != nil {
			return nil, err
		}
		return c, nil
	}
	if k := c.top.Spec.Kind; k.PathRouted() {
		if !opts.Mode.ShortestPaths() {
			also := ""
			if k.Testbed() {
				also = " or by VLANs (routing.mode vlan)"
			}
			return nil, fmt.Errorf("%s routing needs a Dragonfly, a Flattened Butterfly or a Clos; a %s is routed on shortest paths (minimal or shortest, controller/paths.go)%s", opts.Mode, k, also)
		}
		if plan.Scheme != addressing.Flat && plan.Scheme != addressing.PerSwitch {
			return nil, fmt.Errorf("addressing %s needs groups, which a %s does not have: use flat or per-switch", plan.Scheme, k)
		}
		switch k {
		case topology.FatTree:
			c.levelFirst = c.top.LevelFirsts()
		case topology.Custom:
			c.dist = c.top.SwitchDistances()
		}
	} else if opts.Mode == Shortest || opts.Mode == SnoopAR {
		return nil, fmt.Errorf("%s routing runs on xgft, custom and seed 002's topologies; a %s's shortest paths are routing.mode minimal", opts.Mode, k)
	}
	if opts.Mode == SnoopAR {
		// The switch logic moves one rule per destination host.
		switch {
		case !c.Adaptive():
			return nil, fmt.Errorf("snoop-ar routing needs eligible ports: an xgft or custom topology, not %s", c.top.Spec.Kind)
		case plan.Scheme != addressing.Flat:
			return nil, fmt.Errorf("snoop-ar routing keys its tables by destination host: addressing flat, not %s", plan.Scheme)
		case opts.Compact:
			return nil, fmt.Errorf("snoop-ar routing moves one rule per destination host: compaction would merge them")
		}
	}
	c.tree = spanningTree(c.top)
	return c, nil
}

// Plan returns the address plan.
func (c *Controller) Plan() *addressing.Plan { return c.plan }

// Options returns what the controller compiles.
func (c *Controller) Options() Options { return c.opts }

// HopBound is the most inter-switch hops a unicast frame may take.
func (c *Controller) HopBound() int {
	s := c.top.Spec
	if s.Kind.PathRouted() {
		// Shortest paths (paths.go). VLAN paths may be longer: around
		// links off, and on a torus's lines (vlan.Lines); only the
		// walk of the other modes and the CoS report read this bound.
		return c.top.Diameter()
	}
	switch s.Kind {
	case topology.Dragonfly:
		if c.opts.Mode != Minimal {
			return 4
		}
		return 3
	case topology.FlatFly:
		if c.opts.Mode != Minimal {
			return len(s.Dims) + 1
		}
		return len(s.Dims)
	default:
		return 2 * (s.Levels - 1)
	}
}

// spanningTree is a breadth-first tree over the switches from switch 0; a
// frame flooded along it and the hosts reaches every host once.
func spanningTree(t *topology.Topology) [][]int32 {
	tree := make([][]int32, len(t.Switches))
	seen := make([]bool, len(t.Switches))
	seen[0] = true
	q := []int{0}
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		for _, p := range t.Switches[u].Ports {
			if p.Class == topology.ClassHost || seen[p.Peer.Switch] {
				continue
			}
			seen[p.Peer.Switch] = true
			tree[u] = append(tree[u], int32(p.Num))
			tree[p.Peer.Switch] = append(tree[p.Peer.Switch], int32(p.Peer.Port))
			q = append(q, p.Peer.Switch)
		}
	}
	for _, ports := range tree {
		sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	}
	return tree
}

// actionUp is the compaction action of "not below this switch: climb" in
// Clos switches, realised by the per-source uplink rules.
const actionUp int32 = -2

type entry struct {
	pre addressing.Prefix
	out int32
}

// Table compiles the flow table of one switch.
func (c *Controller) Table(sw int) (*Table, error) {
	s := &c.top.Switches[sw]
	t := &Table{Switch: sw}
	if c.opts.Mode == VLAN {
		c.vlanRules(sw, t)
		return t, nil
	}
	// DMP: one rule per host port (seed 000 §IV, Fig. 7).
	for _, p := range s.Ports {
		if p.Class != topology.ClassHost {
			break
		}
		t.Rules = append(t.Rules, Rule{Kind: KindDMP, Priority: PrioDMP,
			Match:  Match{InPort: p.Num, DlType: ethertype.DMP},
			SetSrc: c.plan.HostMAC(p.Host), Out: []int32{PortInPort}})
	}
	t.Rules = append(t.Rules, c.broadcastRules(s)...)

	var err error
	if c.top.Spec.Kind == topology.Clos {
		err = c.closRules(s, t)
	} else {
		err = c.directRules(s, t)
	}
	if err != nil {
		return nil, fmt.Errorf("switch %s: %w", s.Name, err)
	}
	t.Rules = append(t.Rules, Rule{Kind: KindMiss, Priority: PrioMiss})
	sort.SliceStable(t.Rules, func(i, j int) bool { return t.Rules[i].Priority > t.Rules[j].Priority })
	if c.opts.Originals != nil {
		t.Rules = c.rewriteRules(s, t.Rules)
	}
	if c.opts.Mode.Conditions() {
		if err := c.conditionTable(s, t); err != nil {
			return nil, fmt.Errorf("switch %s: %w", s.Name, err)
		}
	}
	if c.opts.Mode == QCNSwitch {
		c.cnmRules(s, t)
	}
	if c.opts.SourceGuard {
		c.guardTable(s, t)
	}
	return t, nil
}

// rewriteRules moves a table behind a table 0 that rewrites each host's
// original source MAC to its pseudo-MAC, and makes every unicast rule that
// leaves on a host port restore that host's original destination MAC.
func (c *Controller) rewriteRules(s *topology.Switch, rules []Rule) []Rule {
	host := map[int32]int{}
	var t0 []Rule
	for _, p := range s.Ports {
		if p.Class == topology.ClassHost {
			host[int32(p.Num)] = p.Host
			t0 = append(t0, Rule{Kind: KindRewrite, Priority: PrioRewrite,
				Match:  Match{InPort: p.Num, Src: c.opts.Originals[p.Host]},
				SetSrc: c.plan.HostMAC(p.Host), Goto: TableRouting})
		}
	}
	t0 = append(t0, Rule{Kind: KindRewrite, Priority: PrioMiss, Goto: TableRouting})
	for i := range rules {
		r := &rules[i]
		r.Table = TableRouting
		if len(r.Out) == 1 && r.Kind != KindBroadcast {
			if h, ok := host[r.Out[0]]; ok {
				r.SetDst = c.opts.Originals[h]
			}
		}
	}
	return append(t0, rules...)
}

// broadcastRules floods along the spanning tree: a frame entering on a host
// port or a tree port leaves on every other host and tree port; entering
// anywhere else it is dropped by the miss rule.
func (c *Controller) broadcastRules(s *topology.Switch) []Rule {
	var ports []int32
	for _, p := range s.Ports {
		if p.Class == topology.ClassHost {
			ports = append(ports, int32(p.Num))
		}
	}
	ports = append(ports, c.tree[s.ID]...)
	rules := make([]Rule, 0, len(ports))
	for _, in := range ports {
		out := make([]int32, 0, len(ports)-1)
		for _, p := range ports {
			if p != in {
				out = append(out, p)
			}
		}
		rules = append(rules, Rule{Kind: KindBroadcast, Priority: PrioBroadcast,
			Match: Match{InPort: int(in), Dst: GroupAddressBit, DstMask: GroupAddressBit}, Out: out})
	}
	return rules
}

// routingRules turns destination entries into rules, compacting them when
// asked. def is the action for every address the entries do not cover.
//
// shortFirst gives shorter prefixes the higher priority, which only
// uncompacted tables allow (their prefixes are disjoint, so the order does
// not change what matches). It matters to Open vSwitch: a lookup stops at
// the first matching priority, and the datapath flow it installs keeps
// only the destination bits the rules it examined looked at. Longest
// first, every frame is tried against the exact host rules and every
// datapath flow pins a whole destination MAC: one flow per destination
// host per ingress port, an upcall for each, and at a thousand hosts more
// flows than the datapath holds. Shortest first, a frame for another group
// stops at its group prefix and shares one datapath flow with its group.
func (c *Controller) routingRules(es []entry, def int32, base, scale int, compact, shortFirst bool, upRule func(pre addressing.Prefix) []Rule) ([]Rule, error) {
	if compact {
		// Compaction works on dense action IDs; Drop stays Drop.
		ids := map[int32]int32{}
		var acts []int32
		id := func(a int32) int32 {
			if a == compaction.Drop {
				return a
			}
			v, ok := ids[a]
			if !ok {
				v = int32(len(acts))
				ids[a] = v
				acts = append(acts, a)
			}
			return v
		}
		in := make([]compaction.Entry, 0, len(es)+1)
		if def != compaction.Drop {
			in = append(in, compaction.Entry{Action: id(def)})
		}
		for _, e := range es {
			in = append(in, compaction.Entry{Prefix: compaction.Prefix{Value: e.pre.Value, Len: e.pre.Len}, Action: id(e.out)})
		}
		out, err := compaction.Compact(addressing.AddressBits, in)
		if err != nil {
			return nil, fmt.Errorf("compaction: %w", err)
		}
		es = es[:0]
		for _, o := range out {
			a := o.Action
			if a != compaction.Drop {
				a = acts[a]
			}
			es = append(es, entry{addressing.Prefix{Value: o.Prefix.Value, Len: o.Prefix.Len}, a})
		}
	}
	rules := make([]Rule, 0, len(es))
	for _, e := range es {
		if e.out == actionUp {
			if e.pre.Len > 0 {
				rules = append(rules, upRule(e.pre)...)
			}
			continue
		}
		v, m := e.pre.Match()
		prio := base + scale*e.pre.Len
		if shortFirst && !compact {
			prio = base + scale*(addressing.AddressBits-e.pre.Len)
		}
		r := Rule{Kind: KindRouting, Priority: uint16(prio), Match: Match{Dst: v, DstMask: m}}
		if e.out != compaction.Drop {
			r.Out = []int32{e.out}
		}
		rules = append(rules, r)
	}
	return rules, nil
}
