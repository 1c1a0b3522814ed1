// Package controller compiles the proactive OpenFlow tables of every switch
// from a topology and its address plan: hierarchical routing (seed 000 §III),
// the DMP rule per host port (§IV), loop-free broadcast, and rule
// compaction (§III-B). Tables are plain data; nothing here talks to a
// switch, so a 300,000-host network compiles in memory.
package controller

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ethfab/ethfab/addressing"
)

// Kind is what a rule is for; counts are reported per kind.
type Kind uint8

// Rule kinds.
const (
	KindRouting     Kind = iota // destination routing (hierarchical or flat)
	KindValiant                 // per-injection-port non-minimal detour (§V-D)
	KindUplink                  // Clos per-source uplink choice
	KindDMP                     // DMP reply: rewrite source, bounce (§IV)
	KindBroadcast               // loop-free broadcast distribution
	KindMiss                    // lowest priority: drop and count unknown destinations
	KindRewrite                 // assign rewrite: original <-> pseudo-MAC at the access switch
	KindConditional             // default rule, disabled while its output port is paused (§V-B)
	KindAlternative             // lower-priority rule a disabled default falls back to
	KindCondition               // table 0: loads the paused-port bitmask the conditions test
	KindGuard                   // source guard: drops a host port's frames from a source not its own
	KindAdmit                   // source guard: passes the port's own source, DMP and transit frames on
	KindCNM                     // QCN-Switch: table 0 hands CNMs for the switch's hosts to its own logic (PACKET_IN)
	KindVLAN                    // switch-tagged VLAN routing (seed 002): classification and filtering database
	KindVLANTransit             // VLAN routing: frames on a port no path enters by, while paths change
	KindVLANFlood               // VLAN routing, macs learn: a unicast flooded in its VLAN, its destination not learned
	numKinds
)

var kindNames = [...]string{"routing", "valiant", "uplink", "dmp", "broadcast", "miss", "rewrite", "conditional", "alternative", "condition", "guard", "admit", "cnm", "vlan", "vlan-transit", "vlan-flood"}

func (k Kind) String() string { return kindNames[k] }

// Kinds lists every kind in report order.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// Broadcast is the all-ones destination.
const Broadcast addressing.MAC = 0xffffffffffff

// GroupAddressBit is the I/G bit of a destination MAC: set for broadcast
// and multicast, clear for every pseudo-MAC and original MAC. Broadcast
// rules match this one bit rather than ff:ff:ff:ff:ff:ff: Open vSwitch then
// needs only that bit of a unicast frame's destination to rule them out,
// instead of pinning the whole address in the datapath flow.
const GroupAddressBit addressing.MAC = 0x010000000000

// Rule priorities. Routing priorities grow with prefix length, which makes
// the ternary table behave as longest-prefix match.
const (
	PrioDMP       = 40000
	PrioBroadcast = 35000
	PrioOwnBand   = 30000 // valiant mode: own-group destinations, + prefix length
	PrioValiant   = 25000
	PrioRouting   = 20000 // + 2 * prefix length
	PrioUplink    = 10000
	PrioMiss      = 0
	PrioRewrite   = 100 // table 0 of assign rewrite
)

// TableRouting is the table a table-0 stage (assign rewrite's source
// rewrite, conditional routing's condition loader) continues in: the
// routing rules, or, with the source guard, the guard in front of them
// (guard.go).
const TableRouting = 1

// Match is an OpenFlow 1.3 match on the fields ethfab uses. Zero fields
// are wildcards.
type Match struct {
	InPort int `json:"in_port,omitempty"`
	// VLAN matches a frame's 802.1Q tag: 0 any, VLANUntagged none, else
	// that VLAN ID.
	VLAN    uint16         `json:"vlan,omitempty"`
	Src     addressing.MAC `json:"dl_src,omitempty"` // exact when set
	DlType  uint16         `json:"dl_type,omitempty"`
	Dst     addressing.MAC `json:"dl_dst,omitempty"`
	DstMask addressing.MAC `json:"dl_dst_mask,omitempty"`
	// Reg0, when Reg0Set, matches Open vSwitch's register 0 (the learning
	// VLAN bridge's output port; 0 unknown).
	Reg0    uint16 `json:"reg0,omitempty"`
	Reg0Set bool   `json:"reg0_set,omitempty"`
}

// Matches reports whether a frame arriving on inPort matches.
func (m *Match) Matches(inPort int, dst addressing.MAC, dlType uint16) bool {
	return (m.InPort == 0 || m.InPort == inPort) &&
		(m.DlType == 0 || m.DlType == dlType) &&
		dst&m.DstMask == m.Dst
}

// PortInPort in an output list means OpenFlow's IN_PORT.
const PortInPort = -1

// VLANUntagged in Match.VLAN matches frames without an 802.1Q tag,
// VLANTagged frames with one (any VLAN ID).
const (
	VLANUntagged = 0xffff
	VLANTagged   = 0xfffe
)

// Rule is one flow entry.
type Rule struct {
	Kind     Kind           `json:"kind"`
	Table    uint8          `json:"table,omitempty"`
	Priority uint16         `json:"priority"`
	Match    Match          `json:"match"`
	SetSrc   addressing.MAC `json:"set_eth_src,omitempty"`
	SetDst   addressing.MAC `json:"set_eth_dst,omitempty"`
	// Goto continues in that table (assign rewrite's table 0); 0: none.
	Goto uint8 `json:"goto_table,omitempty"`
	// Out lists output ports in order; empty means drop. OpenFlow never
	// sends a frame back out of its ingress port unless told IN_PORT.
	Out []int32 `json:"out,omitempty"`
	// Cond is the port whose pause disables the rule (0: unconditional);
	// CondBit is that port's bit in the switch's condition bitmask, which
	// the rule tests as metadata=0/(1<<CondBit).
	Cond    int32 `json:"cond,omitempty"`
	CondBit uint8 `json:"cond_bit,omitempty"`
	// WriteCond marks the table-0 rule that loads the bitmask of paused
	// ports into the metadata register; the switch's own condition logic
	// rewrites its value (one FlowMod per change), never the controller.
	WriteCond bool `json:"write_condition,omitempty"`
	// Controller, when not 0, first sends the frame's first Controller
	// bytes to the switch's own logic (OpenFlow's output:CONTROLLER with
	// max_len): a PACKET_IN on its management connection.
	Controller uint16 `json:"controller_max_len,omitempty"`
	// PopVLAN removes the frame's 802.1Q tag first.
	PopVLAN bool `json:"pop_vlan,omitempty"`
	// PushVLAN, when not 0, tags the frame with this VLAN ID first (an
	// untagged frame's PVID).
	PushVLAN uint16 `json:"push_vlan,omitempty"`
	// Untagged lists output ports the frame leaves untagged: after Out, its
	// tag popped (a VLAN's untagged members).
	Untagged []int32 `json:"out_untagged,omitempty"`
	// The Open vSwitch extensions only the learning VLAN bridge uses
	// (controller/vlan.go), which no other datapath runs, applied in this
	// order before any other action: LoadReg0 clears register 0, Learn
	// writes a flow, Resubmit looks the frame up in each table in turn.
	LoadReg0 bool    `json:"load_reg0,omitempty"`
	Learn    *Learn  `json:"learn,omitempty"`
	Resubmit []uint8 `json:"resubmit,omitempty"`
}

// Learn is Open vSwitch's learn action as the learning VLAN bridge uses it:
// a flow in Table, matching the frame's VLAN ID and, as destination, its
// source address, that loads the frame's ingress port into register 0.
type Learn struct {
	Table       uint8  `json:"table"`
	HardTimeout uint16 `json:"hard_timeout"`
	Priority    uint16 `json:"priority"`
}

// OVSOnly reports whether the rule uses an Open vSwitch extension.
func (r *Rule) OVSOnly() bool {
	return r.LoadReg0 || r.Learn != nil || len(r.Resubmit) > 0 || r.Match.Reg0Set
}

// Cookie is the OpenFlow cookie a rule of this kind carries: the switches'
// own flow statistics, aggregated by cookie, then say how much traffic each
// kind of rule carried (e.g. the share routed non-minimally).
func (k Kind) Cookie() uint64 { return uint64(k) + 1 }

// KindOfCookie is the inverse of Kind.Cookie; ok is false for a cookie
// ethfab did not set.
func KindOfCookie(c uint64) (Kind, bool) {
	if c == 0 || c > uint64(numKinds) {
		return 0, false
	}
	return Kind(c - 1), true
}

// OpenFlow renders the rule in ovs-ofctl syntax.
func (r *Rule) OpenFlow() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cookie=%#x,", r.Kind.Cookie())
	if r.Table != 0 {
		fmt.Fprintf(&b, "table=%d,", r.Table)
	}
	b.WriteString("priority=")
	b.WriteString(strconv.Itoa(int(r.Priority)))
	if r.Match.InPort != 0 {
		fmt.Fprintf(&b, ",in_port=%d", r.Match.InPort)
	}
	if r.Match.Src != 0 {
		fmt.Fprintf(&b, ",dl_src=%s", r.Match.Src)
	}
	if r.Match.DlType != 0 {
		fmt.Fprintf(&b, ",dl_type=0x%04x", r.Match.DlType)
	}
	switch r.Match.VLAN {
	case 0:
	case VLANUntagged:
		b.WriteString(",vlan_tci=0x0000/0x1fff")
	case VLANTagged:
		b.WriteString(",vlan_tci=0x1000/0x1000")
	default:
		fmt.Fprintf(&b, ",dl_vlan=%d", r.Match.VLAN)
	}
	if r.Cond != 0 {
		fmt.Fprintf(&b, ",metadata=0/%#x", uint64(1)<<r.CondBit)
	}
	switch r.Match.DstMask {
	case 0:
	case Broadcast:
		fmt.Fprintf(&b, ",dl_dst=%s", r.Match.Dst)
	default:
		fmt.Fprintf(&b, ",dl_dst=%s/%s", r.Match.Dst, r.Match.DstMask)
	}
	if r.Match.Reg0Set {
		fmt.Fprintf(&b, ",reg0=%d", r.Match.Reg0)
	}
	b.WriteString(",actions=")
	var acts []string
	if r.LoadReg0 {
		acts = append(acts, "load:0->NXM_NX_REG0[]")
	}
	if l := r.Learn; l != nil {
		acts = append(acts, fmt.Sprintf("learn(table=%d,hard_timeout=%d,priority=%d,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15])",
			l.Table, l.HardTimeout, l.Priority))
	}
	for _, t := range r.Resubmit {
		acts = append(acts, fmt.Sprintf("resubmit(,%d)", t))
	}
	if r.PopVLAN {
		acts = append(acts, "pop_vlan")
	}
	if r.PushVLAN != 0 {
		// OpenFlow 1.3 wants OFPVID_PRESENT (0x1000) in the VLAN ID set.
		acts = append(acts, "push_vlan:0x8100", fmt.Sprintf("set_field:%d->vlan_vid", 0x1000|int(r.PushVLAN)))
	}
	if r.SetSrc != 0 {
		acts = append(acts, "set_field:"+r.SetSrc.String()+"->eth_src")
	}
	if r.SetDst != 0 {
		acts = append(acts, "set_field:"+r.SetDst.String()+"->eth_dst")
	}
	if r.Controller != 0 {
		acts = append(acts, fmt.Sprintf("controller(max_len=%d)", r.Controller))
	}
	for _, p := range r.Out {
		if p == PortInPort {
			acts = append(acts, "IN_PORT")
		} else {
			acts = append(acts, "output:"+strconv.Itoa(int(p)))
		}
	}
	if len(r.Untagged) > 0 {
		acts = append(acts, "pop_vlan")
		for _, p := range r.Untagged {
			acts = append(acts, "output:"+strconv.Itoa(int(p)))
		}
	}
	if r.WriteCond {
		acts = append(acts, "write_metadata:0")
	}
	if r.Goto != 0 {
		acts = append(acts, fmt.Sprintf("goto_table:%d", r.Goto))
	}
	if len(acts) == 0 {
		acts = append(acts, "drop")
	}
	b.WriteString(strings.Join(acts, ","))
	return b.String()
}

// Table is one switch's flow table, highest priority first.
type Table struct {
	Switch int    `json:"switch"`
	Rules  []Rule `json:"rules"`
	// CondPorts are the ports conditions can name, in bit order: port
	// CondPorts[i] is bit i of the condition bitmask (conditional mode).
	CondPorts []int32 `json:"cond_ports,omitempty"`
}

// Count returns the number of rules of a kind.
func (t *Table) Count(k Kind) int {
	n := 0
	for i := range t.Rules {
		if t.Rules[i].Kind == k {
			n++
		}
	}
	return n
}

// Lookup returns the highest-priority forwarding rule matching a frame, or
// nil, with no port paused. Table-0 rules (assign rewrite, condition
// loading) do not decide where a frame goes and are skipped.
func (t *Table) Lookup(inPort int, dst addressing.MAC, dlType uint16) *Rule {
	return t.LookupPaused(inPort, dst, dlType, nil)
}

// LookupPaused is Lookup while the ports paused reports are paused: a
// conditional rule is skipped when its port is paused and the frame's
// ingress port is one whose frames load the condition bitmask.
func (t *Table) LookupPaused(inPort int, dst addressing.MAC, dlType uint16, paused func(port int32) bool) *Rule {
	loads := paused != nil && t.loadsConditions(inPort, dst, dlType)
	for i := range t.Rules {
		r := &t.Rules[i]
		if pipelineOnly(r.Kind) || (loads && r.Cond != 0 && paused(r.Cond)) {
			continue
		}
		if r.Match.Matches(inPort, dst, dlType) {
			return r
		}
	}
	return nil
}

func pipelineOnly(k Kind) bool {
	return k == KindRewrite || k == KindCondition || k == KindGuard || k == KindAdmit || k == KindCNM
}

// loadsConditions reports whether a frame meets the table-0 rule that
// loads the condition bitmask (frames on other ports see every condition
// enabled).
func (t *Table) loadsConditions(inPort int, dst addressing.MAC, dlType uint16) bool {
	for i := range t.Rules {
		r := &t.Rules[i]
		if r.Kind == KindCondition && r.Match.Matches(inPort, dst, dlType) {
			return r.WriteCond
		}
	}
	return false
}

// Choices returns every rule that some set of paused ports selects for a
// frame, highest priority first: the rule with nothing paused, then each
// lower matching rule that pausing the ports of all rules above it reaches.
// Pausing cannot reach below an unconditional rule, nor a rule whose port
// is already that of a rule above (pausing it disables both).
func (t *Table) Choices(inPort int, dst addressing.MAC, dlType uint16) []*Rule {
	if !t.loadsConditions(inPort, dst, dlType) {
		if r := t.Lookup(inPort, dst, dlType); r != nil {
			return []*Rule{r}
		}
		return nil
	}
	var out []*Rule
	above := map[int32]bool{}
	for i := range t.Rules {
		r := &t.Rules[i]
		if pipelineOnly(r.Kind) || !r.Match.Matches(inPort, dst, dlType) {
			continue
		}
		if r.Cond == 0 || !above[r.Cond] {
			out = append(out, r)
		}
		if r.Cond == 0 {
			break
		}
		above[r.Cond] = true
	}
	return out
}

// OpenFlow renders the whole table, one flow per line, as
// `ovs-ofctl add-flows` reads it.
func (t *Table) OpenFlow() string {
	var b strings.Builder
	for i := range t.Rules {
		b.WriteString(t.Rules[i].OpenFlow())
		b.WriteByte('\n')
	}
	return b.String()
}
