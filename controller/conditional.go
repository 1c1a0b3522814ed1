package controller

import (
	"fmt"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/compaction"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
)

// Conditional routing (seed 000 §V-B..D). OpenFlow has no "valid while
// port P is not paused", so the condition lives in the metadata register:
// table 0 loads the bitmask of paused ports (one rule, whose value the
// switch's own condition logic rewrites with one FlowMod per change), and
// every default rule in table 1 matches metadata=0/<bit of its port>, so it
// stops matching while its port is paused and the lower-priority
// alternatives take over.
//
// Which frames see the conditions. On Dragonflies and Flattened
// Butterflies the adaptive decision is taken once, at injection (Fig. 10:
// the alternatives match the injection port); a frame in transit — on its
// Valiant detour or past its first hop — follows minimal routing whatever
// is paused, since re-deciding there could exceed the hop bound and no
// alternative matches it anyway. Table 0 therefore lets frames from
// inter-switch ports through without loading the bitmask (metadata stays
// 0). On a Clos every frame that climbs may take any uplink, so every
// frame loads it.

// Rule priorities of conditional mode, below the own-group band and the
// remote (conditional) routing band.
const (
	PrioIndex       = 17000 // Flattened Butterfly switch-index rules, group bits wildcarded
	PrioAlternative = 15000 // per-injection-port non-minimal detours
	prioPassThrough = 1     // table 0: transit frames skip the condition bitmask
	PrioCNM         = 2     // table 0: CNMs for the switch's own hosts, above the pass-through
)

// CNMMaxLen is how much of a CNM the intercept rule hands the switch's
// logic: the whole CNM up to the victim's EFTR header (qcn.MaxLen is 102).
const CNMMaxLen = 128

// cnmRules puts QCN-Switch's interception in table 0 (spec §0.5): a CNM
// addressed to one of the switch's hosts goes to the switch's own logic,
// which lowers the probability of the port it came in on (the PACKET_IN's
// in_port), and on to the host through the routing table with metadata 0.
// The eBPF datapath has no controller port: its program records CNMs
// itself (emulator/datapath), so it leaves these rules out.
func (c *Controller) cnmRules(s *topology.Switch, t *Table) {
	var t0 []Rule
	cnm := func(dst, mask addressing.MAC) {
		t0 = append(t0, Rule{Kind: KindCNM, Table: TableCondition, Priority: PrioCNM,
			Match: Match{DlType: ethertype.CNM, Dst: dst, DstMask: mask}, Controller: CNMMaxLen, Goto: TableRouting})
	}
	if c.plan.HasSwitchPrefix(s.ID) {
		v, m := c.plan.SwitchPrefix(s.ID).Match()
		cnm(v, m)
	} else {
		for _, p := range s.Ports {
			if p.Class == topology.ClassHost {
				cnm(c.plan.HostMAC(p.Host), Broadcast)
			}
		}
	}
	t.Rules = append(t0, t.Rules...)
}

// MaxCondPorts is how many ports a switch's conditions can name: the
// metadata register's 64 bits.
const MaxCondPorts = 64

// TableCondition is where the condition bitmask is loaded; the rest of a
// conditional table is in TableRouting.
const TableCondition = 0

// CondPorts lists the ports whose pause may disable a rule of switch s, in
// bit order: the uplinks of a Clos switch, every inter-switch port of a
// direct topology's switch. It depends on the topology alone, so the
// switch-side condition logic can rebuild it from a running lab.
func CondPorts(s *topology.Switch) []int32 {
	var ps []int32
	for _, p := range s.Ports {
		if p.Class == topology.ClassHost {
			continue
		}
		if p.Up || s.Level == 0 {
			ps = append(ps, int32(p.Num))
		}
	}
	return ps
}

// conditionTable moves a compiled table behind table 0, which loads the
// condition bitmask, and numbers each conditional rule's port.
func (c *Controller) conditionTable(s *topology.Switch, t *Table) error {
	t.CondPorts = CondPorts(s)
	if len(t.CondPorts) > MaxCondPorts {
		return fmt.Errorf("%d ports can be paused, the condition bitmask holds %d", len(t.CondPorts), MaxCondPorts)
	}
	bit := make(map[int32]uint8, len(t.CondPorts))
	for i, p := range t.CondPorts {
		bit[p] = uint8(i)
	}
	var t0 []Rule
	if c.top.Spec.Kind != topology.Clos {
		for _, p := range s.Ports {
			if p.Class != topology.ClassHost {
				t0 = append(t0, Rule{Kind: KindCondition, Table: TableCondition, Priority: prioPassThrough,
					Match: Match{InPort: p.Num}, Goto: TableRouting})
			}
		}
	}
	t0 = append(t0, Rule{Kind: KindCondition, Table: TableCondition, Priority: PrioMiss, WriteCond: true, Goto: TableRouting})
	for i := range t.Rules {
		r := &t.Rules[i]
		r.Table = TableRouting
		if r.Cond != 0 {
			b, ok := bit[r.Cond]
			if !ok {
				return fmt.Errorf("internal: rule conditional on port %d, which cannot be paused", r.Cond)
			}
			r.CondBit = b
		}
	}
	t.Rules = append(t0, t.Rules...)
	return nil
}

// conditionalDirect compiles Dragonfly and Flattened Butterfly tables:
// own-group routes stay unconditional on top; routes to other groups are
// the conditional defaults; each injection port gets one low-priority
// non-minimal alternative (Fig. 10: T extra rules). On a per-group
// Flattened Butterfly the own-group switch routes wildcard the group bits
// instead (§V-C), so they double as the minimal alternative first hop
// along dimension 0 for every other group — no extra rules.
func (c *Controller) conditionalDirect(s *topology.Switch, t *Table, own, remote []entry) error {
	if c.top.Spec.Kind == topology.FlatFly && c.plan.Scheme == addressing.PerGroup && c.plan.HasGroups() {
		var hosts []entry
		for _, p := range s.Ports {
			if p.Class == topology.ClassHost {
				hosts = append(hosts, entry{c.plan.HostPrefix(p.Host), int32(p.Num)})
			}
		}
		own = hosts
		t.Rules = append(t.Rules, c.indexRules(s)...)
	}
	// Bands, top down: the remote-group conditional defaults, the own
	// group, then (FB) the index rules and the alternatives. Own-group and
	// remote-group addresses are disjoint, so their order is free; putting
	// the short group prefixes on top is what keeps the datapath coarse:
	// OVS un-wildcards the bits of every subtable it has to search, and a
	// frame matched in the top band never searches the own hosts' exact
	// rules below, so its megaflow holds the group bits rather than the
	// whole MAC (8x fewer datapath flows on dragonfly:p=2,a=4,h=2, each
	// revalidated on every condition flip).
	rules, err := c.routingRules(own, compaction.Drop, PrioRouting, 2, false, true, nil)
	if err != nil {
		return err
	}
	t.Rules = append(t.Rules, rules...)
	// The conditional band stays uncompacted: compaction is only correct
	// under longest-prefix match, and disabling a longer rule would expose
	// a merged shorter one that routes its addresses elsewhere.
	rules, err = c.routingRules(remote, compaction.Drop, PrioOwnBand, 1, false, false, nil)
	if err != nil {
		return err
	}
	alts := c.valiantRules(s)
	// A switch without a non-minimal port (a Dragonfly with fewer groups
	// than global ports leaves some unconnected) has no alternative for
	// its hosts: its routes stay unconditional.
	for i := range rules {
		if len(rules[i].Out) == 1 && len(alts) > 0 {
			rules[i].Kind, rules[i].Cond = KindConditional, rules[i].Out[0]
		}
	}
	t.Rules = append(t.Rules, rules...)
	for _, r := range alts {
		r.Kind, r.Priority = KindAlternative, PrioAlternative
		t.Rules = append(t.Rules, r)
	}
	return nil
}

// indexRules route to every other switch index of the own row, matching
// only the switch-index bits: the same rule reaches switch j of the own
// group and is a minimal first hop (along dimension 0) towards switch j of
// any other group.
func (c *Controller) indexRules(s *topology.Switch) []Rule {
	first, n := c.groupSwitches(s.Group)
	_, gm := c.plan.GroupPrefix(s.Group).Match()
	var rules []Rule
	for d := first; d < first+n; d++ {
		if d == s.ID {
			continue
		}
		v, m := c.plan.SwitchPrefix(d).Match()
		m &^= gm
		// Kind routing: whichever group it serves, the hop is minimal, so
		// its packets must not count as non-minimal.
		rules = append(rules, Rule{Kind: KindRouting, Priority: PrioIndex,
			Match: Match{Dst: v & m, DstMask: m}, Out: []int32{c.hop(s, d)}})
	}
	return rules
}

// closUp returns the uplink rules of one ingress port (the i-th down port)
// for a match: in conditional mode the per-source default on uplink i
// (conditional) and the k-1 other uplinks as alternatives at falling
// priority, each conditional but the last, so a frame always climbs.
// prio is the default's priority; the alternatives take the ones below.
func (c *Controller) closUp(in int32, i int, up []int32, m Match, prio int) []Rule {
	m.InPort = int(in)
	first := up[i%len(up)]
	if !c.opts.Mode.Conditions() || len(up) == 1 {
		return []Rule{{Kind: KindUplink, Priority: uint16(prio), Match: m, Out: []int32{first}}}
	}
	rs := make([]Rule, 0, len(up))
	for j := range up {
		p := up[(i+j)%len(up)]
		r := Rule{Kind: KindAlternative, Priority: uint16(prio - j), Match: m, Out: []int32{p}, Cond: p}
		if j == 0 {
			r.Kind = KindConditional
		}
		if j == len(up)-1 {
			r.Cond = 0
		}
		rs = append(rs, r)
	}
	return rs
}

// CoSClass is the 802.1p level a class of hop travels on.
type CoSClass struct {
	Hop   string `json:"hop"`
	Level int    `json:"level"`
}

// CoSPlan is how conditional routing stays deadlock-free under lossless
// (PAUSE) flow control (seed 000 §V-E): frames change Class of Service in
// the order below, so channel dependencies only ever ascend.
type CoSPlan struct {
	Levels  int        `json:"levels"`
	Classes []CoSClass `json:"classes"`
	Note    string     `json:"note"`
}

// CoS returns the Class-of-Service plan of the compiled routing.
func (c *Controller) CoS() CoSPlan {
	switch c.top.Spec.Kind {
	case topology.Dragonfly:
		if c.opts.Mode == Minimal {
			return CoSPlan{Levels: 2, Classes: []CoSClass{{"local before the global hop", 0}, {"global", 1}, {"local after the global hop", 1}},
				Note: "local-global-local; the global hop moves the frame to level 1"}
		}
		return CoSPlan{Levels: 2, Classes: []CoSClass{
			{"non-minimal global (detour at injection)", 0},
			{"local before the minimal global hop", 0},
			{"minimal global (towards the destination group)", 1},
			{"local after the minimal global hop", 1},
		}, Note: "channel order global0 < local0 < global1 < local1: at most 2 local and 2 global hops, so 2 levels instead of 3 (seed 000 §V-E); the walk checks every path ascends"}
	case topology.FlatFly:
		return CoSPlan{Levels: c.HopBound(), Classes: []CoSClass{{"hop i (0-based) of the path", -1}},
			Note: "level = inter-switch hops taken so far; seed 000 §V-E cites N levels for fully adaptive routing in N dimensions, this hop-count scheme needs one more for the non-minimal detour"}
	case topology.Mesh, topology.Torus, topology.Ring, topology.MTree, topology.MyriClos, topology.FatTree, topology.Custom:
		return CoSPlan{Levels: max(1, c.HopBound()), Classes: []CoSClass{{"hop i (0-based) of the path", -1}},
			Note: "level = inter-switch hops taken so far (a hop-count scheme; seed 002's tori break their rings' cycles with a second link instead, links: 2)"}
	default:
		return CoSPlan{Levels: 1, Classes: []CoSClass{{"up", 0}, {"down", 0}}, Note: "up/down routing is deadlock-free on one level"}
	}
}

// dfChannelRank orders Dragonfly channels for the deadlock check:
// global0 < local0 < global1 < local1. level is the frame's level before
// the hop; a minimal global hop (not an alternative) moves it to 1.
func dfChannelRank(class topology.LinkClass, r *Rule, level int) (rank, next int) {
	if class == topology.ClassGlobal {
		if r.Kind != KindAlternative && r.Kind != KindValiant {
			level = 1
		}
		return 2 * level, level
	}
	return 2*level + 1, level
}
