package controller

import (
	"slices"
	"time"

	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// vlanRules compile one switch of seed 002's switch-tagged VLAN routing as
// an 802.1Q bridge in OpenFlow, with the static registration of every
// host's MAC (the paper's Dell switches' static filtering database; spec
// §C.3's pipeline with its learning and lookup tables folded away, as
// static entries need neither):
//
//   - table 0, ingress classification and filtering: an untagged frame on
//     a port with a PVID is tagged with it; a tagged frame on a port that
//     is a tagged member of its VLAN passes (fixed assignment's trunks);
//     anything else is dropped and counted (miss);
//
//   - table 1, filtering database and egress: (VLAN, destination host) ->
//     the port the frame leaves by, its tag popped if that port is an
//     untagged member; a broadcast floods the VLAN's members, tagged ones
//     first, then untagged ones with the tag popped (OpenFlow never
//     outputs to the ingress port: the bridge's split horizon); a unicast
//     the VLAN does not know here goes to table 2.
//
//   - table 2, transit: a frame that enters by an inter-switch port no
//     path enters by (untagged), or tagged with a VLAN the port is no
//     member of, or a unicast its VLAN does not know, is forwarded along one of the switch's own paths to its
//     destination: out of the port a VLAN whose filtering database knows
//     the destination sends it by; a broadcast is dropped. No frame
//     arrives so while the paths stand still. While they change
//     (fabric.Lab.Reroute), a neighbour still on its old tables may send
//     frames over a link the new paths leave unused: a switch that stops
//     taking frames from a neighbour and that neighbour, each waiting for
//     the other, cannot both change first. Without this table a ping
//     across such a link lost 1 of 600 probes at each path change (10 ms
//     apart, 2x2 mesh, `ethfab link ... avoid|use`).
//
// The renamed assignment's VLAN IDs mean something only inside a switch:
// pushed at ingress and popped at egress, the frames are untagged on every
// wire (the paper's U-(T)-U). The fixed assignment's stay tagged between
// switches (T-T) and are untagged on host links.
func (c *Controller) vlanRules(sw int, t *Table) {
	if c.opts.VLANLearn {
		c.vlanLearnRules(sw, t)
		return
	}
	a := &c.vlan.Switches[sw]
	c.vlanIngress(sw, t, false)
	untagged := map[[2]int]bool{} // (VLAN, port)
	for _, m := range a.Members {
		for _, p := range m.Untagged {
			untagged[[2]int{m.VID, p}] = true
		}
		r := Rule{Kind: KindVLAN, Table: 1, Priority: PrioRouting,
			Match: Match{VLAN: uint16(m.VID), Dst: Broadcast, DstMask: Broadcast}}
		for _, p := range m.Tagged {
			r.Out = append(r.Out, int32(p))
		}
		for _, p := range m.Untagged {
			r.Untagged = append(r.Untagged, int32(p))
		}
		t.Rules = append(t.Rules, r)
	}
	for _, k := range sortedFDB(a, len(c.top.Hosts)) {
		out := a.FDB[k]
		r := Rule{Kind: KindVLAN, Table: 1, Priority: PrioRouting,
			Match: Match{VLAN: uint16(k.VID), Dst: c.plan.HostMAC(k.Host), DstMask: Broadcast}}
		if untagged[[2]int{k.VID, out}] {
			r.Untagged = []int32{int32(out)}
		} else {
			r.Out = []int32{int32(out)}
		}
		t.Rules = append(t.Rules, r)
	}
	// A unicast the frame's VLAN does not know here goes on in transit
	// (table 2) instead of being dropped: while paths change, a
	// neighbour's old tables may send it in by a port the new ones still
	// take frames on, but in a VLAN (the port's new PVID, or a trunk's)
	// that no longer carries that destination this way. Measured on a
	// 4x4 torus (renamed VLANs, up*/down* around the link then): without this
	// rule a link off and on again in the safe order lost 695 of 18,000
	// probes (every 100 ms, all 240 pairs), up to 14 for one pair.
	t.Rules = append(t.Rules, Rule{Kind: KindVLANTransit, Table: 1, Priority: PrioMiss + 1,
		Match: Match{VLAN: VLANTagged, Dst: 0, DstMask: GroupAddressBit}, PopVLAN: true, Goto: 2})
	t.Rules = append(t.Rules, Rule{Kind: KindMiss, Table: 1, Priority: PrioMiss})
	c.vlanTransit(sw, t)
}

// vlanIngress is table 0's classification and ingress filtering: an
// untagged frame takes its port's PVID, a tagged one passes on a port
// that is a tagged member of its VLAN, and, with hostsTagged, on a host
// port that is a member at all (the learning broadcasts); anything else
// is dropped and counted.
func (c *Controller) vlanIngress(sw int, t *Table, hostsTagged bool) {
	s := &c.top.Switches[sw]
	a := &c.vlan.Switches[sw]
	for _, p := range s.Ports {
		if v := a.PVID[p.Num-1]; v != 0 {
			t.Rules = append(t.Rules, Rule{Kind: KindVLAN, Priority: PrioRouting,
				Match: Match{InPort: p.Num, VLAN: VLANUntagged}, PushVLAN: uint16(v), Goto: 1})
		}
	}
	pass := func(vid, p int) {
		t.Rules = append(t.Rules, Rule{Kind: KindVLAN, Priority: PrioRouting, Match: Match{InPort: p, VLAN: uint16(vid)}, Goto: 1})
	}
	for _, m := range a.Members {
		for _, p := range m.Tagged {
			pass(m.VID, p)
		}
		for _, p := range m.Untagged {
			if hostsTagged && s.Port(p).Class == topology.ClassHost {
				pass(m.VID, p)
			}
		}
	}
	t.Rules = append(t.Rules, Rule{Kind: KindMiss, Priority: PrioMiss})
}

// vlanTransit is table 2 and the table-0 rules that lead there
// (vlanRules). OpenFlow goes to later tables only, so table 2 sends each
// destination out of the port table 1 would, as the first VLAN (by ID)
// whose filtering database knows it: tagged where that port is a tagged
// member, untagged where it is an untagged one.
func (c *Controller) vlanTransit(sw int, t *Table) {
	s := &c.top.Switches[sw]
	a := &c.vlan.Switches[sw]
	for _, p := range s.Ports {
		if p.Class == topology.ClassHost && !c.vlan.TaggedHosts[p.Host] {
			continue
		}
		// A tagged host's frames in a VLAN its port no longer has (the
		// paths changed before the host's tag did) go on in transit too.
		if a.PVID[p.Num-1] == 0 {
			t.Rules = append(t.Rules, Rule{Kind: KindVLANTransit, Priority: PrioRouting - 1,
				Match: Match{InPort: p.Num, VLAN: VLANUntagged}, Goto: 2})
		}
		// Below the member VLANs' pass rules.
		t.Rules = append(t.Rules, Rule{Kind: KindVLANTransit, Priority: PrioRouting - 1,
			Match: Match{InPort: p.Num, VLAN: VLANTagged}, PopVLAN: true, Goto: 2})
	}
	done := map[int]bool{}
	c.transitRoutes(t, a, PrioRouting, done)
	t.Rules = append(t.Rules, Rule{Kind: KindMiss, Table: 2, Priority: PrioMiss})
	// Make before break: a destination the new paths no longer lead
	// through this switch keeps its old way out, until the next change.
	// Its neighbours still on their old tables send it frames along their
	// old paths while the tables go in, switch by switch; the link the
	// old paths cross is still on (the safe order turns it off after).
	// Measured on a (2,4,2) fat tree, fixed assignment, a leaf's up link
	// off and on again: without these rules the pairs whose paths turned
	// lost 8-9 probes each (every 100 ms) while the tables went in.
	if c.opts.VLANWas != nil {
		c.transitRoutes(t, &c.opts.VLANWas.Switches[sw], PrioRouting-1, done)
	}
}

// transitRoutes are table 2's routes from one switch's assignment, a
// destination's first VLAN (by ID) deciding, destinations in done skipped
// (and added).
func (c *Controller) transitRoutes(t *Table, a *vlan.Switch, prio uint16, done map[int]bool) {
	untagged := map[[2]int]bool{} // (VLAN, port)
	for _, m := range a.Members {
		for _, p := range m.Untagged {
			untagged[[2]int{m.VID, p}] = true
		}
	}
	for _, k := range sortedFDB(a, len(c.top.Hosts)) {
		if done[k.Host] {
			continue
		}
		done[k.Host] = true
		out := a.FDB[k]
		r := Rule{Kind: KindVLANTransit, Table: 2, Priority: prio,
			Match: Match{Dst: c.plan.HostMAC(k.Host), DstMask: Broadcast}, Out: []int32{int32(out)}}
		if !untagged[[2]int{k.VID, out}] {
			r.PushVLAN = uint16(k.VID)
		}
		t.Rules = append(t.Rules, r)
	}
}

// sortedFDB is a switch's filtering-database keys by VLAN, then host.
func sortedFDB(a *vlan.Switch, hosts int) []vlan.FDBKey {
	keys := make([]vlan.FDBKey, 0, len(a.FDB))
	for k := range a.FDB {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y vlan.FDBKey) int { return (x.VID-y.VID)*hosts + x.Host - y.Host })
	return keys
}

// VLANAssignment is the VLAN mode's assignment (nil in other modes).
func (c *Controller) VLANAssignment() *vlan.Assignment { return c.vlan }

// LearnTable is the learning bridge's filtering database: the flows its
// learn action writes (vlanLearnRules), which the controller never
// compiles.
const LearnTable = 10

// vlanLearnRules compile one switch as spec §C.3's learning 802.1Q bridge
// (routing.vlan.macs learn), Open vSwitch's own VLAN-aware learning-switch
// idiom:
//
//   - table 0, ingress: as vlanRules, and a host port also takes frames
//     tagged with a VLAN it is a member of (the hosts' per-VLAN learning
//     broadcasts, seed 002's "virtual interface" per VLAN);
//   - table 1, learning: every frame teaches table 10 that its source is
//     behind its ingress port in its VLAN (hard timeout: the aging time);
//   - table 2, lookup: a unicast looks its destination up in table 10
//     (into register 0; 0 unknown), a broadcast or multicast does not;
//   - table 3, egress: register 0 names a member port, which the frame
//     leaves by (untagged members pop the tag); 0 floods the VLAN, and a
//     unicast flooded so is counted apart (kind vlan-flood: the paper's
//     "the intermediate switches ... cannot learn the destination MAC
//     address" when a pair's two directions use different VLANs).
func (c *Controller) vlanLearnRules(sw int, t *Table) {
	a := &c.vlan.Switches[sw]
	c.vlanIngress(sw, t, true)
	aging := int(c.opts.VLANAging / time.Second)
	t.Rules = append(t.Rules,
		Rule{Kind: KindVLAN, Table: 1, Priority: PrioRouting, Goto: 2,
			Learn: &Learn{Table: LearnTable, HardTimeout: uint16(aging), Priority: PrioRouting}},
		Rule{Kind: KindVLAN, Table: 2, Priority: PrioBroadcast, Match: Match{Dst: GroupAddressBit, DstMask: GroupAddressBit},
			LoadReg0: true, Goto: 3},
		Rule{Kind: KindVLAN, Table: 2, Priority: PrioRouting, LoadReg0: true, Resubmit: []uint8{LearnTable, 3}})
	for _, m := range a.Members {
		flood := Rule{Table: 3, Match: Match{VLAN: uint16(m.VID), Reg0Set: true}}
		for _, p := range m.Tagged {
			flood.Out = append(flood.Out, int32(p))
			t.Rules = append(t.Rules, Rule{Kind: KindVLAN, Table: 3, Priority: PrioRouting,
				Match: Match{VLAN: uint16(m.VID), Reg0Set: true, Reg0: uint16(p)}, Out: []int32{int32(p)}})
		}
		for _, p := range m.Untagged {
			flood.Untagged = append(flood.Untagged, int32(p))
			t.Rules = append(t.Rules, Rule{Kind: KindVLAN, Table: 3, Priority: PrioRouting,
				Match: Match{VLAN: uint16(m.VID), Reg0Set: true, Reg0: uint16(p)}, Untagged: []int32{int32(p)}})
		}
		bcast := flood
		bcast.Kind, bcast.Priority = KindVLAN, PrioBroadcast
		bcast.Match.Dst, bcast.Match.DstMask = GroupAddressBit, GroupAddressBit
		flood.Kind, flood.Priority = KindVLANFlood, PrioRouting-1
		t.Rules = append(t.Rules, bcast, flood)
	}
	t.Rules = append(t.Rules, Rule{Kind: KindMiss, Table: 3, Priority: PrioMiss})
}
