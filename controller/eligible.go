package controller

import (
	"fmt"
	"slices"

	"github.com/ethfab/ethfab/topology"
)

// Eligible ports: seed 003's routing table for snoop-based adaptive
// routing maps a destination to "one or more switch port numbers, listed
// in order of preference, e.g., shortest path first", the ports of a
// directed acyclic graph towards the destination (spec §B.2.1). Here they
// are the minimal-hop ports, the static oblivious choice (the shortest
// routing's port, paths.go) first, then by port number:
//   - on an XGFT the up ports while the destination is not below the
//     switch, d-mod-m's first, and the one down port after;
//   - on a custom fabric every port on a shortest path, lowest first.
//
// Every hop along any of them brings the frame one hop closer, so every
// sequence of choices is loop-free and as short as the static path;
// VerifyEligible walks them all to show it.

// Adaptive reports whether the fabric has eligible-port lists (XGFTs and
// custom fabrics).
func (c *Controller) Adaptive() bool {
	k := c.top.Spec.Kind
	return k == topology.XGFT || k == topology.Custom
}

// Eligible is switch s's ports towards host h in order of preference;
// nil for the switch's own hosts.
func (c *Controller) Eligible(s, h int) []int {
	d := c.top.Hosts[h].Switch
	if d == s {
		return nil
	}
	sw := &c.top.Switches[s]
	first := int(c.hostHop(sw, h))
	out := []int{first}
	switch c.top.Spec.Kind {
	case topology.XGFT:
		if sw.Port(first).Up {
			for _, p := range sw.Ports {
				if p.Up && p.Num != first {
					out = append(out, p.Num)
				}
			}
		}
	case topology.Custom:
		for _, p := range c.ShortestPorts(s, d) {
			if p != first {
				out = append(out, p)
			}
		}
	}
	return out
}

// EligibleReport is what VerifyEligible found.
type EligibleReport struct {
	// Lists counts the (switch, destination host) lists; Choices the
	// longest; Sequences how many choice sequences the walk followed.
	Lists     int    `json:"lists"`
	Choices   int    `json:"max_choices"`
	Sequences int64  `json:"sequences"`
	MaxHops   int    `json:"max_hops"`
	Failures  int    `json:"failures"`
	Example   string `json:"example,omitempty"`
}

// VerifyEligible walks every sequence of eligible choices from every
// switch with hosts to every host (memoized per switch and destination: a switch's
// sequences are its choices times its successors'), checking each
// reaches the destination's switch within the hop bound without
// revisiting a switch.
func (c *Controller) VerifyEligible() *EligibleReport {
	r := &EligibleReport{}
	n := len(c.top.Switches)
	bound := c.HopBound()
	for h := range c.top.Hosts {
		d := c.top.Hosts[h].Switch
		// depth[s]: the longest sequence from s (-1 unknown, -2 on the
		// current walk: a revisit is a loop).
		depth := make([]int, n)
		count := make([]int64, n)
		for i := range depth {
			depth[i] = -1
		}
		depth[d], count[d] = 0, 1
		var walk func(s int) bool
		walk = func(s int) bool {
			switch depth[s] {
			case -2:
				return false
			case -1:
			default:
				return true
			}
			depth[s] = -2
			l := c.Eligible(s, h)
			r.Lists++
			r.Choices = max(r.Choices, len(l))
			longest, seqs := 0, int64(0)
			for _, p := range l {
				peer := c.top.Switches[s].Port(p).Peer.Switch
				if c.top.Switches[s].Port(p).Class == topology.ClassHost || !walk(peer) {
					if r.Failures == 0 {
						r.Example = fmt.Sprintf("%s towards %s: port %d loops or leads nowhere", c.top.Switches[s].Name, c.top.Hosts[h].Name, p)
					}
					r.Failures++
					depth[s], count[s] = 0, 0 // counted; its callers go on
					return true
				}
				longest = max(longest, depth[peer]+1)
				seqs += count[peer]
			}
			depth[s], count[s] = longest, seqs
			return true
		}
		for s := range c.top.Switches {
			if c.top.Switches[s].NumHosts == 0 {
				continue // only frames from hosts walk, through what they reach
			}
			walk(s)
			if depth[s] > bound {
				if r.Failures == 0 {
					r.Example = fmt.Sprintf("%s towards %s: %d hops, bound %d", c.top.Switches[s].Name, c.top.Hosts[h].Name, depth[s], bound)
				}
				r.Failures++
			}
			if s != d {
				r.Sequences += count[s]
				r.MaxHops = max(r.MaxHops, depth[s])
			}
		}
	}
	return r
}

// EligibleTables is every switch's eligible lists by destination host.
func (c *Controller) EligibleTables() []map[int][]int {
	out := make([]map[int][]int, len(c.top.Switches))
	for s := range out {
		out[s] = map[int][]int{}
		for h := range c.top.Hosts {
			if l := c.Eligible(s, h); l != nil {
				out[s][h] = slices.Clip(l)
			}
		}
	}
	return out
}

// AdaptiveRule is the index in switch s's table t of the rule that routes
// host h (snoop-ar: the rule its logic moves), -1 if there is none (its
// own hosts' rules do not move).
func (c *Controller) AdaptiveRule(t *Table, h int) int {
	if c.top.Hosts[h].Switch == t.Switch {
		return -1
	}
	v, m := c.plan.HostPrefix(h).Match()
	for i := range t.Rules {
		r := &t.Rules[i]
		if r.Kind == KindRouting && r.Match.Dst == v && r.Match.DstMask == m && len(r.Out) == 1 {
			return i
		}
	}
	return -1
}
