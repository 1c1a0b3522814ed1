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

	"github.com/ethfab/ethfab/emulator/addressing"
)

// Kind is what a rule is for; counts are reported per kind.
type Kind uint8

// Rule kinds.
const (
	KindRouting   Kind = iota // destination routing (hierarchical or flat)
	KindValiant               // per-injection-port non-minimal detour (§V-D)
	KindUplink                // Clos per-source uplink choice
	KindDMP                   // DMP reply: rewrite source, bounce (§IV)
	KindBroadcast             // loop-free broadcast distribution
	KindMiss                  // lowest priority: drop and count unknown destinations
	numKinds
)

var kindNames = [...]string{"routing", "valiant", "uplink", "dmp", "broadcast", "miss"}

func (k Kind) String() string { return kindNames[k] }

// Kinds lists every kind in report order.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// EtherTypes used by the rules and the host agent.
const (
	EtherTypeDMP = 0x88b5 // IEEE local experimental 1 (seed 000 §IV)
)

// Broadcast is the all-ones destination.
const Broadcast addressing.MAC = 0xffffffffffff

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
)

// Match is an OpenFlow 1.3 match on the fields ethfab uses. Zero fields
// are wildcards.
type Match struct {
	InPort  int            `json:"in_port,omitempty"`
	DlType  uint16         `json:"dl_type,omitempty"`
	Dst     addressing.MAC `json:"dl_dst,omitempty"`
	DstMask addressing.MAC `json:"dl_dst_mask,omitempty"`
}

// Matches reports whether a frame arriving on inPort matches.
func (m *Match) Matches(inPort int, dst addressing.MAC, dlType uint16) bool {
	return (m.InPort == 0 || m.InPort == inPort) &&
		(m.DlType == 0 || m.DlType == dlType) &&
		dst&m.DstMask == m.Dst
}

// PortInPort in an output list means OpenFlow's IN_PORT.
const PortInPort = -1

// Rule is one flow entry.
type Rule struct {
	Kind     Kind           `json:"kind"`
	Priority uint16         `json:"priority"`
	Match    Match          `json:"match"`
	SetSrc   addressing.MAC `json:"set_eth_src,omitempty"`
	// Out lists output ports in order; empty means drop. OpenFlow never
	// sends a frame back out of its ingress port unless told IN_PORT.
	Out []int32 `json:"out,omitempty"`
}

// OpenFlow renders the rule in ovs-ofctl syntax.
func (r *Rule) OpenFlow() string {
	var b strings.Builder
	b.WriteString("priority=")
	b.WriteString(strconv.Itoa(int(r.Priority)))
	if r.Match.InPort != 0 {
		fmt.Fprintf(&b, ",in_port=%d", r.Match.InPort)
	}
	if r.Match.DlType != 0 {
		fmt.Fprintf(&b, ",dl_type=0x%04x", r.Match.DlType)
	}
	switch r.Match.DstMask {
	case 0:
	case Broadcast:
		fmt.Fprintf(&b, ",dl_dst=%s", r.Match.Dst)
	default:
		fmt.Fprintf(&b, ",dl_dst=%s/%s", r.Match.Dst, r.Match.DstMask)
	}
	b.WriteString(",actions=")
	var acts []string
	if r.SetSrc != 0 {
		acts = append(acts, "set_field:"+r.SetSrc.String()+"->eth_src")
	}
	for _, p := range r.Out {
		if p == PortInPort {
			acts = append(acts, "IN_PORT")
		} else {
			acts = append(acts, "output:"+strconv.Itoa(int(p)))
		}
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

// Lookup returns the highest-priority rule matching a frame, or nil.
func (t *Table) Lookup(inPort int, dst addressing.MAC, dlType uint16) *Rule {
	for i := range t.Rules {
		if t.Rules[i].Match.Matches(inPort, dst, dlType) {
			return &t.Rules[i]
		}
	}
	return nil
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
