package controller

import (
	"runtime"
	"sync"
)

// Spread is the min / mean / max of a per-switch count.
type Spread struct {
	Min  int     `json:"min"`
	Mean float64 `json:"mean"`
	Max  int     `json:"max"`
}

type spreadAcc struct {
	min, max, n int
	sum         float64
}

func (a *spreadAcc) add(v int) {
	if a.n == 0 || v < a.min {
		a.min = v
	}
	if v > a.max {
		a.max = v
	}
	a.n++
	a.sum += float64(v)
}

func (a *spreadAcc) spread() Spread {
	if a.n == 0 {
		return Spread{}
	}
	return Spread{Min: a.min, Mean: a.sum / float64(a.n), Max: a.max}
}

// RuleStats are per-switch rule counts by kind over a set of switches.
type RuleStats struct {
	Switches int               `json:"switches_compiled"`
	ByKind   map[string]Spread `json:"by_kind"`
	Total    Spread            `json:"total"`
	// Ports is the port count spread of the same switches, the floor that
	// compaction can reach (seed 000 §III-B).
	Ports Spread `json:"ports"`
}

// Stats compiles the given switches (all when nil) in parallel and counts
// their rules without keeping the tables, so it scales to the paper's
// 300,000-host networks.
func (c *Controller) Stats(switches []int) (*RuleStats, error) {
	return c.stats(switches, c.Table)
}

// Stats counts the rules of the given switches (all when nil) of a table
// set, compiling only those it does not hold: a lab's tables, compiled
// once, are described without compiling them again.
func (ts *Tables) Stats(switches []int) (*RuleStats, error) {
	return ts.c.stats(switches, ts.Get)
}

// Controller is the controller the tables are compiled by.
func (ts *Tables) Controller() *Controller { return ts.c }

func (c *Controller) stats(switches []int, table func(sw int) (*Table, error)) (*RuleStats, error) {
	switches = c.orAll(switches)
	type part struct {
		kinds [numKinds]spreadAcc
		total spreadAcc
		ports spreadAcc
	}
	parts := make([]part, runtime.GOMAXPROCS(0))
	err := c.eachTable(switches, len(parts), table, func(w, i int, t *Table) {
		p := &parts[w]
		var counts [numKinds]int
		for j := range t.Rules {
			counts[t.Rules[j].Kind]++
		}
		for k := range counts {
			p.kinds[k].add(counts[k])
		}
		p.total.add(len(t.Rules))
		p.ports.add(len(c.top.Switches[switches[i]].Ports))
	})
	if err != nil {
		return nil, err
	}
	var all part
	for _, p := range parts {
		for k := range p.kinds {
			merge(&all.kinds[k], &p.kinds[k])
		}
		merge(&all.total, &p.total)
		merge(&all.ports, &p.ports)
	}
	rs := &RuleStats{Switches: len(switches), ByKind: map[string]Spread{}, Total: all.total.spread(), Ports: all.ports.spread()}
	for k := range all.kinds {
		rs.ByKind[Kind(k).String()] = all.kinds[k].spread()
	}
	return rs, nil
}

// RoutingEntries is, per given switch (all when nil), the forwarding
// entries seed 000 Eq. 1 counts: destination routing rules plus a Clos's
// per-source uplink rules, the entries whose number sizes the TCAM (the
// DMP, broadcast and miss rules are the same handful in every
// organization). It is what the power model charges the table for.
func (c *Controller) RoutingEntries(switches []int) ([]int, error) {
	switches = c.orAll(switches)
	out := make([]int, len(switches))
	err := c.eachTable(switches, runtime.GOMAXPROCS(0), c.Table, func(_, i int, t *Table) {
		out[i] = t.Count(KindRouting) + t.Count(KindUplink)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Controller) orAll(switches []int) []int {
	if switches != nil {
		return switches
	}
	switches = make([]int, len(c.top.Switches))
	for i := range switches {
		switches[i] = i
	}
	return switches
}

// eachTable gets switches[i]'s table from table (c.Table compiles it) on
// one of workers goroutines and hands it to fn(worker, i, table), then
// drops it: the tables of a 300,000-host network do not fit in memory
// together.
func (c *Controller) eachTable(switches []int, workers int, table func(sw int) (*Table, error), fn func(w, i int, t *Table)) error {
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(switches); i += workers {
				t, err := table(switches[i])
				if err != nil {
					errs[w] = err
					return
				}
				fn(w, i, t)
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func merge(dst, src *spreadAcc) {
	if src.n == 0 {
		return
	}
	if dst.n == 0 {
		*dst = *src
		return
	}
	dst.min = min(dst.min, src.min)
	dst.max = max(dst.max, src.max)
	dst.n += src.n
	dst.sum += src.sum
}

// SpreadOf is the min, mean and max of vs.
func SpreadOf(vs []int) Spread {
	var a spreadAcc
	for _, v := range vs {
		a.add(v)
	}
	return a.spread()
}
