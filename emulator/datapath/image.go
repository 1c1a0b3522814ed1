// Package datapath is ethfab's own eBPF datapath: every switch of a lab
// forwarded in the kernel by one tc program (bpf/switch.c) attached to the
// ingress of every switch port, which reads the controller's tables from
// BPF maps and redirects each frame to the egress of its output ports, so
// it still waits in the link's tbf queue. No Open vSwitch process handles
// a frame: on this machine a switch hop costs about 1.5 µs of CPU in the
// kernel against 31 µs through OVS's userspace datapath
// (kernel/cmd/hopbench), which is where the fabric's capacity lies.
//
// The tables keep OpenFlow's semantics: priorities, masked destination
// matches, exact source and EtherType, the ingress port, table-0 stages
// that continue in table 1 (goto_table), the condition bitmask that
// conditional routing loads into metadata, set-field rewrites, output
// lists with IN_PORT, and drop; and 802.1Q: vlan_tci matches (untagged,
// tagged, a VLAN ID), push and pop, and a VLAN's untagged members among a
// rule's outputs (seed 002's VLAN routing, with static registration).
// Image is the translation, pure data; it
// carries a Go rendering of the program's lookup so tests can check it
// against the controller's own Table.LookupPaused on every frame.
package datapath

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
)

// Limits the program is compiled with (bpf/switch.c).
const (
	MaxSubtables = 32 // distinct masks per (switch, table)
	MaxTables    = 4  // tables per switch
	MaxOut       = 64 // outputs of one rule
	// DirectSlots is the slots of a (switch, table) for its direct
	// subtables' rules (Subtable.Direct).
	DirectSlots = 256
	KindSlots   = 20 // counter slots per switch: one per rule kind (16), then these:
	// SlotDropped counts frames the program could not forward (a clone
	// not redirected, an unreadable header, an action missing): the
	// datapath's own drops. A failed final redirect happens after the
	// program returns and shows in the kernel's drop counters instead.
	SlotDropped = 17
	// SlotTapLost counts tap records the ring had no room for.
	SlotTapLost = 16
	// SlotHostBroadcast counts broadcast-rule frames that entered on a host
	// port: injected, but not unicast data.
	SlotHostBroadcast = 18
	outInPort         = 0xffffffff
)

// maxIfindex bounds the ports array (64 bytes an entry: 64 MB at most); a
// fabric namespace's ifindexes count up from 1, two per link.
const maxIfindex = 1 << 20

// Port is a switch port as the program sees it: indexed by the ifindex of
// its device in the fabric namespace.
type Port struct {
	Sw, Num uint16
	Host    uint8
	Used    uint8 // 1: the entry is a switch port (the map is an array)
	// CNMPeer: the far end is in another namespace (a CNM skipping the
	// port's queue goes there by bpf_redirect_peer); else CNMFar is it.
	CNMPeer, Pad uint8
	// Probe[b][t] bit i: subtable i of bank b's table t may hold a rule
	// for a frame on this port; an in_port subtable with no rule for it is
	// skipped. Build fills bank 0's.
	Probe [2][MaxTables]uint32
	// Peer: with queue counters, the switch port at the far end of the
	// link (0: none); a frame arriving here has left its queue.
	Peer uint32
	// CNMFar: the switch port at the far end when it is in this
	// namespace, where a CNM skipping the port's queue goes (0: none).
	CNMFar uint32
	Pad2   [4]uint32 // 64 bytes: each port one cache line
}

// Subtable is one mask of a (switch, table): which fields its rules match.
// 64 bytes, a cache line, as the program's struct subtable.
type Subtable struct {
	InPort, DlType uint8
	MaxPrio        uint16
	// OnlyDlType, if not 0, is the one EtherType every rule matches: a
	// frame of another skips the subtable.
	OnlyDlType uint16
	// Always: the subtable's one rule matches every frame (no field at
	// all), so its action, AlwaysAction, needs no lookup.
	Always uint8
	// Direct (DirectDst, DirectInPort): the subtable's rules differ in one
	// field only, in its bits [DirectShift, DirectShift+DirectBits), and
	// sit in the table's Slots from DirectBase on, indexed by those bits,
	// not in the rules hash.
	Direct       uint8
	AlwaysAction uint32
	// VLANMask: which bits of the frame's vlan_tci its rules match.
	VLANMask                uint16
	DirectShift, DirectBits uint8
	SrcMask                 uint64
	DstMask                 uint64
	MetaMask                uint64
	// DstReqMask and DstReqVal: the destination bits all its rules share,
	// and their value; a frame whose destination differs there skips the
	// subtable (the multicast bit of the broadcast rules, a group's
	// prefix).
	DstReqMask, DstReqVal uint64
	DirectBase            uint16
	Pad                   [3]uint16
}

// Which field indexes a direct subtable's slots (Subtable.Direct).
const (
	DirectDst    = 1 // the destination MAC's bits the rules differ in
	DirectInPort = 2 // the ingress port's number
)

// Slot is a direct subtable's rule; Action DirectEmpty: none.
type Slot struct {
	Prio, Action uint32
}

// DirectEmpty marks a slot no rule fills.
const DirectEmpty = 0xffffffff

// Table is a (switch, table)'s subtables, highest MaxPrio first, and the
// slots of its direct ones. The header fills a cache line, so each
// subtable is one.
type Table struct {
	N     uint32
	Pad   [15]uint32
	Sub   [MaxSubtables]Subtable
	Slots [DirectSlots]Slot
}

// RuleKey is a rule's masked match within its subtable. Sw is the
// switch's table set: bank*switches + switch in the map, the switch in an
// Image.
type RuleKey struct {
	Sw           uint16
	Table, Sub   uint8
	InPort       uint16
	DlType       uint16
	VLAN         uint16 // vlan_tci under the subtable's VLANMask
	Pad          [3]uint16
	Src, Dst, Md uint64
}

// RuleVal is the rule a key finds.
type RuleVal struct {
	Prio, Action uint32
}

// Action is what a rule does. Out[:NUntagged] are a VLAN's untagged
// members (controller.Rule.Untagged): the frame leaves them without its
// tag, and the others with the tag it has after Pop and Push.
type Action struct {
	SetSrc, SetDst              uint64
	Kind, GoTo, WriteCond, NOut uint8
	Pop, NUntagged              uint8
	Push                        uint16         // vlan_tci: VLANPresent | VID; 0: none
	Out                         [MaxOut]uint32 // ifindex, or IN_PORT
	// 320 bytes, five cache lines: a unicast action's fields and its
	// output are in its first.
	Pad [10]uint32
}

// VLANPresent is the bit of OpenFlow's vlan_tci that says a frame has a
// tag; the low 12 bits are its VLAN ID.
const VLANPresent = 0x1000

// Counter is one counter slot on one CPU.
type Counter struct {
	Packets, Bytes uint64
}

// Image is the content of the program's maps for a set of tables.
type Image struct {
	Ports    map[uint32]Port
	Tables   map[uint32]Table // key: switch*MaxTables + table
	Actions  []Action
	Switches int
	rules    map[RuleKey]RuleVal
	// placed counts the rules in rules and in direct subtables' slots.
	placed int
	// shared: the actions without outputs, each entered once.
	shared map[Action]uint32
	// queues: the ports whose queue the program counts, and its limit.
	queues map[uint32]uint64
	// ruleAction is each controller rule's action (by switch and index in
	// its table), for a switch's logic that moves a rule (snoop-ar);
	// ifindex each switch port's device.
	ruleAction map[[2]int]uint32
	ifindex    map[[2]int]uint32
}

// RuleAction is the index of the action of rule i of switch sw's table:
// where the program reads what the rule does, frame by frame (the flow
// cache keeps the index, not the action).
func (img *Image) RuleAction(sw, i int) (uint32, bool) {
	a, ok := img.ruleAction[[2]int{sw, i}]
	return a, ok
}

// PortIfindex is the ifindex of switch sw's port.
func (img *Image) PortIfindex(sw, port int) (uint32, bool) {
	v, ok := img.ifindex[[2]int{sw, port}]
	return v, ok
}

// PortRef names a switch port's device for Build.
type PortRef struct {
	Switch, Port int
	Ifindex      uint32
	Host         bool
	// Peer is the ifindex of the switch port at the far end of the link
	// (0: a host's); QueueLimit, if not 0, has the program count the
	// port's queue and hold it to that many bytes (Queue).
	Peer       uint32
	QueueLimit uint64
	// Far is the ifindex of the switch port at the far end (0: a host's,
	// or unknown), and FarElsewhere says the far end is in another
	// namespace (always so for a host's): where a CNM that skips the
	// port's queue goes (LoadOptions.CNMPriority).
	Far          uint32
	FarElsewhere bool
}

// hosts counts the host ports: the fabric's hosts.
func (img *Image) hosts() int {
	n := 0
	for _, p := range img.Ports {
		if p.Host != 0 {
			n++
		}
	}
	return n
}

// Build translates every switch's table. ports lists every switch port
// with the ifindex of its device in the fabric namespace.
func Build(tables []*controller.Table, ports []PortRef) (*Image, error) {
	img := &Image{Ports: map[uint32]Port{}, Tables: map[uint32]Table{}, Switches: len(tables), rules: map[RuleKey]RuleVal{}, queues: map[uint32]uint64{},
		ruleAction: map[[2]int]uint32{}, shared: map[Action]uint32{}}
	if len(tables) > 1<<15 {
		return nil, fmt.Errorf("%d switches: the eBPF datapath numbers two banks of them in 16 bits", len(tables))
	}
	ifindex := map[[2]int]uint32{}
	swPorts := map[int][]uint32{}
	for _, p := range ports {
		if p.Switch < 0 || p.Switch >= len(tables) || p.Port <= 0 || p.Port >= 1<<16 {
			return nil, fmt.Errorf("port %d of switch %d: out of range", p.Port, p.Switch)
		}
		if p.Ifindex >= maxIfindex {
			return nil, fmt.Errorf("ifindex %d: the port array holds ifindexes below %d", p.Ifindex, maxIfindex)
		}
		if _, dup := img.Ports[p.Ifindex]; dup {
			return nil, fmt.Errorf("ifindex %d given twice", p.Ifindex)
		}
		var host uint8
		if p.Host {
			host = 1
		}
		port := Port{Sw: uint16(p.Switch), Num: uint16(p.Port), Host: host, Used: 1}
		if p.FarElsewhere {
			port.CNMPeer = 1
		} else {
			port.CNMFar = p.Far
		}
		img.Ports[p.Ifindex] = port
		if p.QueueLimit > 0 {
			if p.Host || p.Peer == 0 {
				return nil, fmt.Errorf("port %d of switch %d: a counted queue needs a switch port at the far end", p.Port, p.Switch)
			}
			img.queues[p.Ifindex] = p.QueueLimit
		}
		ifindex[[2]int{p.Switch, p.Port}] = p.Ifindex
		swPorts[p.Switch] = append(swPorts[p.Switch], p.Ifindex)
	}
	// A port whose peer's queue is counted counts that queue's departures.
	for _, p := range ports {
		if _, counted := img.queues[p.Peer]; counted && p.Peer != 0 {
			q := img.Ports[p.Ifindex]
			q.Peer = p.Peer
			img.Ports[p.Ifindex] = q
		}
	}
	img.ifindex = ifindex
	for sw, t := range tables {
		if t == nil {
			continue // another machine's switch (a fabric split across machines)
		}
		if err := img.addSwitch(sw, t, ifindex, swPorts[sw]); err != nil {
			return nil, fmt.Errorf("switch %d: %w", sw, err)
		}
	}
	return img, nil
}

type maskOf struct {
	inPort, dlType     bool
	vlan               uint16
	src, dst, metadata uint64
}

func (img *Image) addSwitch(sw int, t *controller.Table, ifindex map[[2]int]uint32, ports []uint32) error {
	type sub struct {
		mask maskOf
		max  uint16
		idx  []int // rules, in table order
	}
	// probe[table][port number]: the subtables to search for a frame on
	// the port (Port.Probe).
	var probe [MaxTables]map[uint16]uint32
	subs := map[uint8]map[maskOf]*sub{}
	var order [MaxTables][]*sub
	for i := range t.Rules {
		r := &t.Rules[i]
		if r.Controller != 0 {
			// A CNM interception rule (QCN-Switch): the program has no
			// controller port; it records every CNM a port receives
			// (TapCNM), and the frame routes on like any other.
			continue
		}
		if int(r.Table) >= MaxTables || int(r.Goto) >= MaxTables {
			return fmt.Errorf("rule %d uses table %d: the eBPF datapath has %d", i, max(r.Table, r.Goto), MaxTables)
		}
		m := ruleMask(r)
		if subs[r.Table] == nil {
			subs[r.Table] = map[maskOf]*sub{}
		}
		s := subs[r.Table][m]
		if s == nil {
			s = &sub{mask: m}
			subs[r.Table][m] = s
			order[r.Table] = append(order[r.Table], s)
		}
		s.max = max(s.max, r.Priority)
		s.idx = append(s.idx, i)
	}
	if err := equalPriorityOverlap(t); err != nil {
		return err
	}
	for tab, list := range order {
		if len(list) == 0 {
			continue
		}
		if len(list) > MaxSubtables {
			return fmt.Errorf("table %d has %d distinct masks: the eBPF datapath holds %d", tab, len(list), MaxSubtables)
		}
		// Highest MaxPrio first, so the lookup stops early; stable, so
		// the order does not depend on map iteration.
		slices.SortStableFunc(list, func(a, b *sub) int { return int(b.max) - int(a.max) })
		var tt Table
		tt.N = uint32(len(list))
		for i := range tt.Slots {
			tt.Slots[i].Action = DirectEmpty
		}
		slots := 0 // taken by direct subtables
		probe[tab] = map[uint16]uint32{}
		all := uint32(0) // the subtables every port searches
		for si, s := range list {
			st := &tt.Sub[si]
			*st = Subtable{InPort: b2u(s.mask.inPort), DlType: b2u(s.mask.dlType), MaxPrio: s.max, VLANMask: s.mask.vlan,
				SrcMask: s.mask.src, DstMask: s.mask.dst, MetaMask: s.mask.metadata}
			if !s.mask.inPort {
				all |= 1 << si
			}
			first := t.Rules[s.idx[0]].Match
			if s.mask.dlType {
				st.OnlyDlType = first.DlType
				for _, i := range s.idx {
					if t.Rules[i].Match.DlType != st.OnlyDlType {
						st.OnlyDlType = 0 // two EtherTypes: search it for every frame
					}
				}
			}
			req := s.mask.dst
			for _, i := range s.idx {
				m := t.Rules[i].Match
				req &^= uint64(m.Dst&m.DstMask) ^ uint64(first.Dst&first.DstMask)
			}
			st.DstReqMask, st.DstReqVal = req, uint64(first.Dst&first.DstMask)&req
			if d, shift, width, ok := direct(s.mask, st.OnlyDlType, req, t.Rules, s.idx); ok && slots+1<<width <= DirectSlots {
				st.Direct, st.DirectShift, st.DirectBits, st.DirectBase = d, shift, width, uint16(slots)
				slots += 1 << width
			}
			for _, i := range s.idx {
				r := &t.Rules[i]
				if s.mask.inPort {
					probe[tab][uint16(r.Match.InPort)] |= 1 << si
				}
				a, err := actionOf(sw, r, ifindex)
				if err != nil {
					return fmt.Errorf("rule %d (%s): %w", i, r.OpenFlow(), err)
				}
				// A rule shadowed by an equal match of higher priority is
				// left out, as in OVS; its action is entered only for a
				// rule placed.
				prio := uint32(r.Priority)
				var act uint32
				if st.Direct != 0 {
					at := st.slot(uint16(r.Match.InPort), uint64(r.Match.Dst))
					if old := tt.Slots[at]; old.Action != DirectEmpty && old.Prio >= prio {
						continue
					}
					act = img.enter(a)
					tt.Slots[at] = Slot{Prio: prio, Action: act}
				} else {
					vid, _ := vlanMatch(r.Match.VLAN)
					k := RuleKey{Sw: uint16(sw), Table: uint8(tab), Sub: uint8(si), InPort: uint16(r.Match.InPort), DlType: r.Match.DlType,
						VLAN: vid, Src: uint64(r.Match.Src), Dst: uint64(r.Match.Dst & r.Match.DstMask)}
					if old, dup := img.rules[k]; dup && old.Prio >= prio {
						continue
					}
					act = img.enter(a)
					img.rules[k] = RuleVal{Prio: prio, Action: act}
				}
				img.ruleAction[[2]int{sw, i}] = act
				img.placed++
			}
		}
		for si, s := range list {
			if s.mask == (maskOf{}) {
				// One key, so one rule (a shadowed equal match was left out).
				if v, ok := img.rules[RuleKey{Sw: uint16(sw), Table: uint8(tab), Sub: uint8(si)}]; ok {
					tt.Sub[si].Always, tt.Sub[si].AlwaysAction = 1, v.Action
				}
			}
		}
		img.Tables[uint32(sw*MaxTables+tab)] = tt
		for _, idx := range ports {
			p := img.Ports[idx]
			p.Probe[0][tab] = all | probe[tab][p.Num]
			img.Ports[idx] = p
		}
	}
	return nil
}

// enter puts action a in the image and returns its index: a new entry
// at the end, or, for an action without outputs (a goto, a drop), the
// entry of an equal one already there. Every switch's admit rules then
// share one action, whose cache line the first table's lookup of every
// frame finds warm. An action with outputs stays the rule's own: a
// switch's logic may rewrite it in place (Handle.SetAction, snoop-ar).
func (img *Image) enter(a Action) uint32 {
	if i, ok := img.shared[a]; ok {
		return i
	}
	i := uint32(len(img.Actions))
	img.Actions = append(img.Actions, a)
	if a.NOut == 0 {
		img.shared[a] = i
	}
	return i
}

// direct says whether a subtable's rules can sit in slots, indexed by
// the one field they differ in, and how: its rules differ in the ingress
// port alone, or in the destination alone, in a run of at most 8 bits
// (256 slots; the run may include bits they share). Every other field
// it matches the rules share, and the subtable's own checks test: the
// destination's shared bits (DstReq), one EtherType (OnlyDlType), and
// the condition bit of a conditional rule, which is 0 in every rule
// (ruleMask). In DF(4,8,4), uniform load 0.4, the rules hash's lookups
// were 8% of the machine's time (perf, lookup_nulls_elem_raw): a bucket
// and an entry, each a cache miss once the tables outgrow the caches,
// where a slot is one read from a few kilobytes per switch.
func direct(m maskOf, onlyDlType uint16, req uint64, rules []controller.Rule, idx []int) (kind, shift, width uint8, ok bool) {
	if m == (maskOf{}) || m.src != 0 || m.vlan != 0 || (m.dlType && onlyDlType == 0) {
		return 0, 0, 0, false // no field (Always: no read at all), or two that differ
	}
	v := m.dst &^ req // the destination bits the rules differ in
	if m.inPort {
		if v != 0 {
			return 0, 0, 0, false
		}
		hi := 0
		for _, i := range idx {
			hi = max(hi, int(rules[i].Match.InPort))
		}
		b := bits.Len64(uint64(hi))
		return DirectInPort, 0, uint8(b), b <= 8
	}
	if v == 0 {
		return DirectDst, 0, 0, true
	}
	sh := bits.TrailingZeros64(v)
	b := bits.Len64(v >> sh)
	return DirectDst, uint8(sh), uint8(b), b <= 8
}

// slot is where a direct subtable keeps the rule for this port number or
// destination (Subtable.Direct), as the program indexes it.
func (s *Subtable) slot(inPort uint16, dst uint64) int {
	m := uint64(1)<<s.DirectBits - 1
	if s.Direct == DirectInPort {
		return int(s.DirectBase) + int(uint64(inPort)&m)
	}
	return int(s.DirectBase) + int(dst>>s.DirectShift&m)
}

// equalPriorityOverlap refuses two rules of one table with the same
// priority that a frame can match both of, in different subtables, and
// that act differently: OpenFlow leaves the choice undefined, the
// controller's Lookup takes the first in table order and the program the
// first subtable it searches, so the datapaths could disagree. The
// controller compiles no such pair today; this keeps it so.
func equalPriorityOverlap(t *controller.Table) error {
	type key struct {
		table uint8
		prio  uint16
	}
	groups := map[key][]int{}
	for i := range t.Rules {
		r := &t.Rules[i]
		groups[key{r.Table, r.Priority}] = append(groups[key{r.Table, r.Priority}], i)
	}
	for _, idx := range groups {
		for x := 0; x < len(idx); x++ {
			for y := x + 1; y < len(idx); y++ {
				a, b := &t.Rules[idx[x]], &t.Rules[idx[y]]
				if ruleMask(a) == ruleMask(b) || !overlap(a, b) || sameAction(a, b) {
					continue // one subtable holds one of them (Build keeps the first)
				}
				return fmt.Errorf("rules %d and %d have priority %d and can match the same frame: %s / %s", idx[x], idx[y], a.Priority, a.OpenFlow(), b.OpenFlow())
			}
		}
	}
	return nil
}

// overlap says whether some frame matches both rules (conditions aside:
// both match while their bits are clear).
func overlap(a, b *controller.Rule) bool {
	if a.Match.InPort != 0 && b.Match.InPort != 0 && a.Match.InPort != b.Match.InPort {
		return false
	}
	if a.Match.DlType != 0 && b.Match.DlType != 0 && a.Match.DlType != b.Match.DlType {
		return false
	}
	if a.Match.Src != 0 && b.Match.Src != 0 && a.Match.Src != b.Match.Src {
		return false
	}
	va, ma := vlanMatch(a.Match.VLAN)
	vb, mb := vlanMatch(b.Match.VLAN)
	if (va^vb)&ma&mb != 0 {
		return false
	}
	both := a.Match.DstMask & b.Match.DstMask
	return (a.Match.Dst^b.Match.Dst)&both == 0
}

func sameAction(a, b *controller.Rule) bool {
	return a.SetSrc == b.SetSrc && a.SetDst == b.SetDst && a.Goto == b.Goto && a.WriteCond == b.WriteCond &&
		a.Kind == b.Kind && slices.Equal(a.Out, b.Out) && a.PopVLAN == b.PopVLAN && a.PushVLAN == b.PushVLAN &&
		slices.Equal(a.Untagged, b.Untagged)
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// ruleMask is which fields a rule matches. A conditional rule matches
// metadata=0/(1<<CondBit): its bit of the condition bitmask, clear.
func ruleMask(r *controller.Rule) maskOf {
	m := maskOf{inPort: r.Match.InPort != 0, dlType: r.Match.DlType != 0, dst: uint64(r.Match.DstMask)}
	_, m.vlan = vlanMatch(r.Match.VLAN)
	if r.Match.Src != 0 {
		m.src = uint64(addressing.MAC(0xffffffffffff))
	}
	if r.Cond != 0 {
		m.metadata = 1 << r.CondBit
	}
	return m
}

// vlanMatch is a rule's VLAN match as a value and mask of vlan_tci, as
// Open vSwitch writes them: untagged 0/0x1fff, tagged 0x1000/0x1000, a
// VLAN ID 0x1000|VID/0x1fff; none 0/0.
func vlanMatch(v uint16) (val, mask uint16) {
	switch v {
	case 0:
		return 0, 0
	case controller.VLANUntagged:
		return 0, VLANPresent | 0xfff
	case controller.VLANTagged:
		return VLANPresent, VLANPresent
	}
	return VLANPresent | v&0xfff, VLANPresent | 0xfff
}

func actionOf(sw int, r *controller.Rule, ifindex map[[2]int]uint32) (Action, error) {
	a := Action{SetSrc: uint64(r.SetSrc), SetDst: uint64(r.SetDst), Kind: uint8(r.Kind), GoTo: r.Goto, WriteCond: b2u(r.WriteCond), Pop: b2u(r.PopVLAN)}
	if r.OVSOnly() {
		return a, fmt.Errorf("Open vSwitch's learn, resubmit and registers (routing.vlan.macs: learn): the eBPF datapath has none")
	}
	if r.PushVLAN != 0 {
		if r.PushVLAN > 0xfff {
			return a, fmt.Errorf("VLAN ID %d: 802.1Q has 12 bits", r.PushVLAN)
		}
		a.Push = VLANPresent | r.PushVLAN
	}
	if int(r.Kind) >= SlotTapLost {
		return a, fmt.Errorf("kind %d has no counter slot", r.Kind)
	}
	if r.Goto != 0 && len(r.Out)+len(r.Untagged) > 0 {
		return a, fmt.Errorf("outputs and goto_table in one rule: the eBPF datapath outputs only at the end of the pipeline")
	}
	if len(r.Out)+len(r.Untagged) > MaxOut {
		return a, fmt.Errorf("%d outputs: the eBPF datapath holds %d", len(r.Out)+len(r.Untagged), MaxOut)
	}
	// The untagged members first: the program sends them the frame
	// before it writes the tag into the bytes for the others.
	for i, p := range append(slices.Clone(r.Untagged), r.Out...) {
		if p == controller.PortInPort {
			a.Out[i] = outInPort
			continue
		}
		idx, ok := ifindex[[2]int{sw, int(p)}]
		if !ok {
			return a, fmt.Errorf("output port %d has no device", p)
		}
		a.Out[i] = idx
	}
	a.NOut, a.NUntagged = uint8(len(r.Out)+len(r.Untagged)), uint8(len(r.Untagged))
	return a, nil
}

// ruleEntries returns the rules map's content in a fixed order.
func (img *Image) ruleEntries() ([]RuleKey, []RuleVal) {
	keys := make([]RuleKey, 0, len(img.rules))
	for k := range img.rules {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b RuleKey) int {
		if a.Sw != b.Sw {
			return int(a.Sw) - int(b.Sw)
		}
		if a.Table != b.Table {
			return int(a.Table) - int(b.Table)
		}
		return int(img.rules[a].Action) - int(img.rules[b].Action)
	})
	vals := make([]RuleVal, len(keys))
	for i, k := range keys {
		vals[i] = img.rules[k]
	}
	return keys, vals
}

// Decision is what the program does with a frame: the last action's
// rewritten addresses and output devices (nil: dropped), the tag each
// output gets (OutTCI, vlan_tci: 0 none), and the kind of every rule it
// met.
type Decision struct {
	Src, Dst addressing.MAC
	Out      []uint32
	OutTCI   []uint16
	Kinds    []controller.Kind
	Rule     *Action // the last rule's action; nil on a table miss
}

// Forward runs the program's lookup in Go on a frame entering on the
// device ifindex, tagged tci (vlan_tci; 0: untagged), with the switch's
// condition bitmask cond: the same algorithm as bpf/switch.c, on the
// same maps.
func (img *Image) Forward(ifindex uint32, src, dst addressing.MAC, dlType, tci uint16, cond uint64) (Decision, bool) {
	p, ok := img.Ports[ifindex]
	if !ok {
		return Decision{}, false
	}
	d := Decision{Src: src, Dst: dst}
	var meta uint64
	t := uint8(0)
	for range MaxTables {
		tab, ok := img.Tables[uint32(int(p.Sw)*MaxTables+int(t))]
		if !ok {
			return d, true
		}
		best, bestPrio := -1, uint32(0)
		probe := p.Probe[0][t]
		for i := 0; probe>>i != 0; i++ {
			if probe&(1<<i) == 0 {
				continue
			}
			s := &tab.Sub[i]
			if best >= 0 && uint32(s.MaxPrio) <= bestPrio {
				break
			}
			if (s.OnlyDlType != 0 && s.OnlyDlType != dlType) || uint64(d.Dst)&s.DstReqMask != s.DstReqVal {
				continue
			}
			if s.Always != 0 {
				if best < 0 || uint32(s.MaxPrio) > bestPrio {
					best, bestPrio = int(s.AlwaysAction), uint32(s.MaxPrio)
				}
				continue
			}
			if s.Direct != 0 {
				if meta&s.MetaMask != 0 || (s.Direct == DirectInPort && p.Num>>s.DirectBits != 0) {
					continue // the rules' condition bit is set; no rule has this port
				}
				if v := tab.Slots[s.slot(p.Num, uint64(d.Dst))]; v.Action != DirectEmpty && (best < 0 || v.Prio > bestPrio) {
					best, bestPrio = int(v.Action), v.Prio
				}
				continue
			}
			k := RuleKey{Sw: p.Sw, Table: t, Sub: uint8(i), VLAN: tci & s.VLANMask, Src: uint64(d.Src) & s.SrcMask, Dst: uint64(d.Dst) & s.DstMask, Md: meta & s.MetaMask}
			if s.InPort != 0 {
				k.InPort = p.Num
			}
			if s.DlType != 0 {
				k.DlType = dlType
			}
			if v, hit := img.rules[k]; hit && (best < 0 || v.Prio > bestPrio) {
				best, bestPrio = int(v.Action), v.Prio
			}
		}
		if best < 0 {
			return d, true
		}
		a := &img.Actions[best]
		d.Rule = a
		d.Kinds = append(d.Kinds, controller.Kind(a.Kind))
		if a.SetSrc != 0 {
			d.Src = addressing.MAC(a.SetSrc)
		}
		if a.SetDst != 0 {
			d.Dst = addressing.MAC(a.SetDst)
		}
		if a.WriteCond != 0 {
			meta = cond
		}
		if a.Pop != 0 {
			tci = 0
		}
		if a.Push != 0 {
			tci = a.Push
		}
		if a.GoTo == 0 {
			for i, o := range a.Out[:a.NOut] {
				switch o {
				case outInPort:
					o = ifindex
				case ifindex:
					continue
				}
				d.Out = append(d.Out, o)
				if i < int(a.NUntagged) {
					d.OutTCI = append(d.OutTCI, 0)
				} else {
					d.OutTCI = append(d.OutTCI, tci)
				}
			}
			return d, true
		}
		t = a.GoTo
		d.Rule = nil
	}
	return d, true
}

// TransitHashed says whether a frame from another switch may search a
// subtable kept in the rules hash (not direct, not Always): only then can
// the flow cache spare a transit hop work. Where every such search is a
// slot, a cache lookup costs more than the pipeline it spares: DF(2,3,2)
// at 20 Mbit/s, adv+1 at load 0.5, ran the program in 550-685 ns a frame
// without the cache and 828-878 with it under VAL, 605-905 against
// 813-1,025 under conditional routing (three alternating runs each).
func (img *Image) TransitHashed() bool {
	for _, p := range img.Ports {
		if p.Host != 0 {
			continue
		}
		for t, probe := range p.Probe[0] {
			tab := img.Tables[uint32(int(p.Sw)*MaxTables+t)]
			for i := 0; probe>>i != 0; i++ {
				if s := &tab.Sub[i]; probe&(1<<i) != 0 && s.Direct == 0 && s.Always == 0 {
					return true
				}
			}
		}
	}
	return false
}

// Subtables counts the subtables of every (switch, table).
func (img *Image) Subtables() int {
	n := 0
	for _, t := range img.Tables {
		n += int(t.N)
	}
	return n
}
