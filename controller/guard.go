package controller

import (
	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
)

// The source guard. Hierarchical addressing trusts the source MAC: a host
// that sends as another host poisons Open-MX peer tables and answers for
// it, and nothing in the routing tables looks at sources. So every access
// switch checks, before routing, that a frame entering on a host port
// comes from that port's host — the pseudo-MAC the controller gave it —
// and drops and counts anything else (rules of kind guard, so
// `ovs-ofctl dump-flows BRIDGE cookie=0xb/-1` shows what each port sent
// under a false name).
//
// The switch needs no state for this in any assign mode. static: the
// host's source is its pseudo-MAC from the start. dmp: before DMP the
// host's source is a random original MAC the switch never learns, but the
// only frame it needs then is the DMP request, which passes whatever its
// source (the DMP rule overwrites that source and bounces the frame back
// out of the same port, so it cannot reach anyone else); after DMP its
// source is the pseudo-MAC. rewrite: the guard stands behind table 0, which
// has already turned the host's original source into its pseudo-MAC on
// that port alone, so the same check holds; a frame with any other source
// passes table 0 unchanged and is dropped. The guard matches sources only:
// broadcasts from a host (announcements) pass like any frame.
//
// Where it sits: in front of the routing table, behind table 0 when table
// 0 is a stage of its own (assign rewrite, conditional routing). The
// stage's goto keeps naming table 1, which the guard then occupies, so the
// condition loader that the switch rewrites at run time (TableRouting) is
// unchanged; the routing table moves one further.

// Guard priorities, within the guard's table.
const (
	prioAdmitDMP   = 3 // DMP requests: any source
	prioAdmitOwn   = 2 // in_port=P, dl_src=the port's host address
	prioGuardDrop  = 1 // in_port=P: anything else from a host port
	prioAdmitOther = 0 // frames from inter-switch ports
)

// guardTable puts the source guard in front of a compiled table's routing
// stage. Switches without host ports get none.
func (c *Controller) guardTable(s *topology.Switch, t *Table) {
	if s.NumHosts == 0 {
		return
	}
	var g uint8 // the guard's table: where routing is now
	if c.opts.Originals != nil || c.opts.Mode.Conditions() {
		g = TableRouting
	}
	var stage, rest []Rule
	for _, r := range t.Rules {
		if r.Table < g {
			stage = append(stage, r)
			continue
		}
		r.Table++
		rest = append(rest, r)
	}
	next := g + 1
	guard := []Rule{{Kind: KindAdmit, Table: g, Priority: prioAdmitDMP,
		Match: Match{DlType: ethertype.DMP}, Goto: next}}
	for _, p := range s.Ports {
		if p.Class == topology.ClassHost {
			guard = append(guard, Rule{Kind: KindAdmit, Table: g, Priority: prioAdmitOwn,
				Match: Match{InPort: p.Num, Src: c.plan.HostMAC(p.Host)}, Goto: next})
		}
	}
	for _, p := range s.Ports {
		if p.Class == topology.ClassHost {
			guard = append(guard, Rule{Kind: KindGuard, Table: g, Priority: prioGuardDrop,
				Match: Match{InPort: p.Num}})
		}
	}
	guard = append(guard, Rule{Kind: KindAdmit, Table: g, Priority: prioAdmitOther, Goto: next})
	t.Rules = append(append(stage, guard...), rest...)
}

// Admits reports whether a frame entering on inPort from src with dlType
// gets past the source guard (true where there is none): table 0's source
// rewrite applies first, then the guard's highest-priority matching rule.
func (t *Table) Admits(inPort int, src addressing.MAC, dlType uint16) bool {
	for i := range t.Rules {
		r := &t.Rules[i]
		if r.Kind == KindRewrite && r.matchesSource(inPort, src, dlType) {
			if r.SetSrc != 0 {
				src = r.SetSrc
			}
			break
		}
	}
	for i := range t.Rules {
		r := &t.Rules[i]
		if (r.Kind == KindGuard || r.Kind == KindAdmit) && r.matchesSource(inPort, src, dlType) {
			return r.Kind == KindAdmit
		}
	}
	return true
}

// matchesSource is Match.Matches for the rules that look at sources, not
// destinations.
func (r *Rule) matchesSource(inPort int, src addressing.MAC, dlType uint16) bool {
	m := &r.Match
	return (m.InPort == 0 || m.InPort == inPort) && (m.Src == 0 || m.Src == src) &&
		(m.DlType == 0 || m.DlType == dlType)
}
