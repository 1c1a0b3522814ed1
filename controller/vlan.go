package controller

import (
	"slices"

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
//   - table 1, filtering database and egress: (VLAN, destination host) ->
//     the port the frame leaves by, its tag popped if that port is an
//     untagged member; a broadcast floods the VLAN's members, tagged ones
//     first, then untagged ones with the tag popped (OpenFlow never
//     outputs to the ingress port: the bridge's split horizon); an unknown
//     destination is dropped and counted.
//
// The renamed assignment's VLAN IDs mean something only inside a switch:
// pushed at ingress and popped at egress, the frames are untagged on every
// wire (the paper's U-(T)-U). The fixed assignment's stay tagged between
// switches (T-T) and are untagged on host links.
func (c *Controller) vlanRules(sw int, t *Table) {
	s := &c.top.Switches[sw]
	a := &c.vlan.Switches[sw]
	for _, p := range s.Ports {
		if v := a.PVID[p.Num-1]; v != 0 {
			t.Rules = append(t.Rules, Rule{Kind: KindVLAN, Priority: PrioRouting,
				Match: Match{InPort: p.Num, VLAN: VLANUntagged}, PushVLAN: uint16(v), Goto: 1})
		}
	}
	for _, m := range a.Members {
		for _, p := range m.Tagged {
			t.Rules = append(t.Rules, Rule{Kind: KindVLAN, Priority: PrioRouting,
				Match: Match{InPort: p, VLAN: uint16(m.VID)}, Goto: 1})
		}
	}
	t.Rules = append(t.Rules, Rule{Kind: KindMiss, Priority: PrioMiss})
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
	keys := make([]vlan.FDBKey, 0, len(a.FDB))
	for k := range a.FDB {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y vlan.FDBKey) int { return (x.VID-y.VID)*len(c.top.Hosts) + x.Host - y.Host })
	for _, k := range keys {
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
	t.Rules = append(t.Rules, Rule{Kind: KindMiss, Table: 1, Priority: PrioMiss})
}

// VLANAssignment is the VLAN mode's assignment (nil in other modes).
func (c *Controller) VLANAssignment() *vlan.Assignment { return c.vlan }
