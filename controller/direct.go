package controller

import (
	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/compaction"
	"github.com/ethfab/ethfab/topology"
)

// directRules compiles Dragonfly and Flattened Butterfly routing: one entry
// per destination host, switch or group (seed 000 Eq. 1), compacted on
// request, plus the Valiant detours; and minimal routing on seed 002's
// topologies (paths.go), per host or switch.
func (c *Controller) directRules(s *topology.Switch, t *Table) error {
	var own, remote []entry
	add := func(d int, e entry) {
		if c.top.Switches[d].Group == s.Group {
			own = append(own, e)
		} else {
			remote = append(remote, e)
		}
	}
	for _, p := range s.Ports {
		if p.Class == topology.ClassHost {
			own = append(own, entry{c.plan.HostPrefix(p.Host), int32(p.Num)})
		}
	}
	switch {
	case c.plan.HasCoords():
		own, remote = c.coordEntries(s, own, remote)
	case c.plan.Scheme == addressing.Flat:
		for h := range c.top.Hosts {
			if d := c.top.Hosts[h].Switch; d != s.ID {
				add(d, entry{c.plan.HostPrefix(h), c.hostHop(s, h)})
			}
		}
	case c.plan.Scheme == addressing.PerSwitch:
		for d := range c.top.Switches {
			if d != s.ID && c.plan.HasSwitchPrefix(d) {
				add(d, entry{c.plan.SwitchPrefix(d), c.hop(s, d)})
			}
		}
	default:
		first, n := c.groupSwitches(s.Group)
		for d := first; d < first+n; d++ {
			if d != s.ID {
				own = append(own, entry{c.plan.SwitchPrefix(d), c.hop(s, d)})
			}
		}
		for g := 0; g < c.top.NumGroups(); g++ {
			if g != s.Group {
				rep, _ := c.groupSwitches(g)
				remote = append(remote, entry{c.plan.GroupPrefix(g), c.groupHop(s, rep)})
			}
		}
	}
	if c.opts.Mode.Conditions() {
		return c.conditionalDirect(s, t, own, remote)
	}
	if c.opts.Mode.ShortestPaths() {
		rules, err := c.routingRules(append(own, remote...), compaction.Drop, PrioRouting, 2, c.opts.Compact, true, nil)
		t.Rules = append(t.Rules, rules...)
		return err
	}
	// Valiant: own-group destinations keep minimal routes above the
	// per-injection-port detours; the remote routes below them carry transit
	// traffic. The own band stays uncompacted: a merged prefix there could
	// reach beyond the group and capture traffic the detour should take.
	rules, err := c.routingRules(own, compaction.Drop, PrioOwnBand, 1, false, false, nil)
	if err != nil {
		return err
	}
	t.Rules = append(t.Rules, rules...)
	t.Rules = append(t.Rules, c.valiantRules(s)...)
	rules, err = c.routingRules(remote, compaction.Drop, PrioRouting, 2, c.opts.Compact, true, nil)
	t.Rules = append(t.Rules, rules...)
	return err
}

// coordEntries routes the compact Flattened Butterfly layout (seed 000
// §III-B, Fig. 5) in dimension order with one entry per neighbour: the
// coordinate sub-fields of dimensions above d equal the switch's own, the
// sub-field of d holds the neighbour's coordinate, and every sub-field below
// is wildcarded. That is the port count before compaction. An entry per
// destination group or switch instead matches the lower sub-fields exactly,
// so the codes no switch has (3 to 255 in the octet of a 3-switch
// dimension) fall to "drop" inside every merged prefix and cost a drop
// entry each: 11 rules instead of 9 on a 3x3x3 FB. No exact encoding
// avoids that: a prefix covers a power-of-two block of codes, and the
// valid codes of the sub-fields below number a product of the sizes.
//
// An address whose sub-field holds such a code is forwarded by the
// wildcard towards the coordinate above it and dropped at the first switch
// where that sub-field is the highest one differing from the switch's
// own, since no entry matches it there. It cannot loop: every minimal hop
// makes the switch's coordinates agree with the address in one more
// leading sub-field and never disagree in one that agreed, and the
// non-minimal detours (Valiant, conditional alternatives) are taken once,
// at injection, so a frame is delivered or dropped within the hop bound
// (TestCompactFlatFlyWildcardsCannotLoop walks such addresses).
func (c *Controller) coordEntries(s *topology.Switch, own, remote []entry) ([]entry, []entry) {
	for d := len(s.Coords) - 1; d >= 0; d-- {
		for v := 0; v < c.top.Spec.Dims[d]; v++ {
			if v == s.Coords[d] {
				continue
			}
			e := entry{c.plan.CoordPrefix(s.ID, d, v), int32(topology.FlatFlyPort(c.top.Spec, d, s.Coords[d], v))}
			// Dimension 0 is the own row: the own group.
			if d == 0 {
				own = append(own, e)
			} else {
				remote = append(remote, e)
			}
		}
	}
	return own, remote
}

// groupSwitches returns the first switch ID of a group and how many it has
// (switch IDs are consecutive within a Dragonfly group and an FB row).
func (c *Controller) groupSwitches(g int) (first, n int) {
	if c.top.Spec.Kind == topology.Dragonfly {
		return g * c.top.Spec.A, c.top.Spec.A
	}
	k := c.top.Spec.Dims[0]
	return g * k, k
}

// hop is the minimal first hop from switch s towards switch d.
func (c *Controller) hop(s *topology.Switch, d int) int32 {
	ds := &c.top.Switches[d]
	switch {
	case c.top.Spec.Kind == topology.Dragonfly:
		return c.dfHop(s, ds.Group, ds.Index)
	case c.top.Spec.Kind.PathRouted():
		return c.pathHop(s, d)
	}
	return c.fbHop(s, ds.Coords, 0)
}

// hostHop is the first hop from switch s towards host h on another
// switch: an XGFT's d-mod-m choice depends on the host, every other
// routing only on its switch.
func (c *Controller) hostHop(s *topology.Switch, h int) int32 {
	if c.top.Spec.Kind == topology.XGFT {
		return c.xgftHop(s, h)
	}
	return c.hop(s, c.top.Hosts[h].Switch)
}

// groupHop is the minimal first hop from s towards a remote group; rep is
// one of its switches.
func (c *Controller) groupHop(s *topology.Switch, rep int) int32 {
	ds := &c.top.Switches[rep]
	if c.top.Spec.Kind == topology.Dragonfly {
		return c.dfHop(s, ds.Group, -1)
	}
	return c.fbHop(s, ds.Coords, 1)
}

// dfHop routes local-global-local: within the group straight to the switch;
// to another group over the global link at that group's offset, first
// crossing to the switch that owns it.
func (c *Controller) dfHop(s *topology.Switch, g, j int) int32 {
	sp := c.top.Spec
	local := func(peer int) int32 {
		if peer < s.Index {
			return int32(sp.P + 1 + peer)
		}
		return int32(sp.P + peer)
	}
	if s.Group == g {
		return local(j)
	}
	owner, l := topology.DragonflyGlobalOwner(sp, (g-s.Group+sp.G)%sp.G)
	if owner == s.Index {
		return int32(sp.P + sp.A - 1 + l + 1)
	}
	return local(owner)
}

// fbHop corrects the highest differing dimension at or above from.
func (c *Controller) fbHop(s *topology.Switch, dc []int, from int) int32 {
	for d := len(dc) - 1; d >= from; d-- {
		if s.Coords[d] != dc[d] {
			return int32(topology.FlatFlyPort(c.top.Spec, d, s.Coords[d], dc[d]))
		}
	}
	return compaction.Drop
}

// valiantRules give each injection port one statically assigned
// non-minimal output: a global port on a Dragonfly (Fig. 10a: T extra
// rules), a port towards another row on a Flattened Butterfly (Fig. 10b).
// On a Flattened Butterfly the detour is along dimension 1: dimension-order
// routing from there corrects the higher dimensions first and then
// dimension 1 towards the destination's row, never back to the source's,
// while a detour along a higher dimension would bounce straight back for
// destinations that share it. A switch without such ports routes its hosts
// minimally.
func (c *Controller) valiantRules(s *topology.Switch) []Rule {
	var nonmin []int32
	for _, p := range s.Ports {
		if p.Class == topology.ClassGlobal || (c.top.Spec.Kind == topology.FlatFly && p.Class == topology.ClassLocal && p.Dim == 1) {
			nonmin = append(nonmin, int32(p.Num))
		}
	}
	if len(nonmin) == 0 {
		return nil
	}
	var rules []Rule
	for _, p := range s.Ports {
		if p.Class != topology.ClassHost {
			break
		}
		rules = append(rules, Rule{Kind: KindValiant, Priority: PrioValiant,
			Match: Match{InPort: p.Num}, Out: []int32{nonmin[(p.Num-1)%len(nonmin)]}})
	}
	return rules
}
