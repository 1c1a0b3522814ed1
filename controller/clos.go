package controller

import (
	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/compaction"
	"github.com/ethfab/ethfab/topology"
)

// closRules compiles up/down routing (seed 000 §III-B, Fig. 3a). Down:
// one entry per destination below the switch (its hosts; the edge switches
// of its pod; the pods below a core). Up: whatever is not below climbs, on
// an uplink chosen statically per source — by the ingress port, which
// identifies the source host at an edge switch and the source's subtree
// higher up — so a Clos table is its port count once the down entries are
// compacted (one per child).
func (c *Controller) closRules(s *topology.Switch, t *Table) error {
	var down []int32 // down ports in order; host ports count as down
	var up []int32
	children := map[int][]int32{} // child switch -> parallel ports
	var order []int
	var es []entry
	for _, p := range s.Ports {
		switch {
		case p.Class == topology.ClassHost:
			down = append(down, int32(p.Num))
			es = append(es, entry{c.plan.HostPrefix(p.Host), int32(p.Num)})
		case p.Up:
			up = append(up, int32(p.Num))
		default:
			down = append(down, int32(p.Num))
			if _, ok := children[p.Peer.Switch]; !ok {
				order = append(order, p.Peer.Switch)
			}
			children[p.Peer.Switch] = append(children[p.Peer.Switch], int32(p.Num))
		}
	}
	m := c.top.Spec.K / 2
	for _, ch := range order {
		ports := children[ch]
		pick := func(i int) int32 { return ports[i%len(ports)] }
		cs := &c.top.Switches[ch]
		var pods []int
		switch cs.Level {
		case 1: // an edge switch below an aggregation switch
			if c.plan.Scheme != addressing.Flat {
				es = append(es, entry{c.plan.SwitchPrefix(ch), ports[0]})
				continue
			}
			for _, p := range cs.Ports {
				if p.Class == topology.ClassHost {
					es = append(es, entry{c.plan.HostPrefix(p.Host), ports[0]})
				}
			}
			continue
		case 2:
			pods = []int{cs.Group}
		default: // a level-3 switch of a 4-level tree: its group's pods
			g := cs.ID - 2*m*c.top.Spec.Pods
			g /= m * m
			for q := g * m; q < min((g+1)*m, c.top.Spec.Pods); q++ {
				pods = append(pods, q)
			}
		}
		for _, q := range pods {
			switch c.plan.Scheme {
			case addressing.PerGroup:
				es = append(es, entry{c.plan.GroupPrefix(q), pick(q)})
			case addressing.PerSwitch:
				for e := 0; e < m; e++ {
					es = append(es, entry{c.plan.SwitchPrefix(q*2*m + e), pick(e)})
				}
			default:
				for e := 0; e < m; e++ {
					for h := 0; h < m; h++ {
						host := c.top.Switches[q*2*m+e].Ports[h].Host
						es = append(es, entry{c.plan.HostPrefix(host), pick(host)})
					}
				}
			}
		}
	}
	def := compaction.Drop
	if len(up) > 0 {
		def = actionUp
	}
	// Conditional mode stacks up to one rule per uplink under each up
	// match, so prefix lengths are spread wide enough to keep them apart.
	scale, top := 2, 0
	if c.opts.Mode.Conditions() && len(up) > 1 {
		scale, top = len(up)+1, len(up)
	}
	upRules := func(pre addressing.Prefix) []Rule {
		var rs []Rule
		v, mk := pre.Match()
		for i, in := range down {
			rs = append(rs, c.closUp(in, i, up, Match{Dst: v, DstMask: mk}, PrioRouting+scale*pre.Len+top)...)
		}
		return rs
	}
	rules, err := c.routingRules(es, def, PrioRouting, scale, c.opts.Compact, false, upRules)
	if err != nil {
		return err
	}
	t.Rules = append(t.Rules, rules...)
	if len(up) > 0 {
		for i, in := range down {
			t.Rules = append(t.Rules, c.closUp(in, i, up, Match{}, PrioUplink+top)...)
		}
	}
	return nil
}
