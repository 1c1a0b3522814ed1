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
	if switches == nil {
		switches = make([]int, len(c.top.Switches))
		for i := range switches {
			switches[i] = i
		}
	}
	workers := runtime.GOMAXPROCS(0)
	type part struct {
		kinds [numKinds]spreadAcc
		total spreadAcc
		ports spreadAcc
		err   error
	}
	parts := make([]part, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(p *part, w int) {
			defer wg.Done()
			for i := w; i < len(switches); i += workers {
				t, err := c.Table(switches[i])
				if err != nil {
					p.err = err
					return
				}
				var counts [numKinds]int
				for j := range t.Rules {
					counts[t.Rules[j].Kind]++
				}
				for k := range counts {
					p.kinds[k].add(counts[k])
				}
				p.total.add(len(t.Rules))
				p.ports.add(len(c.top.Switches[switches[i]].Ports))
			}
		}(&parts[w], w)
	}
	wg.Wait()
	var all part
	for _, p := range parts {
		if p.err != nil {
			return nil, p.err
		}
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
