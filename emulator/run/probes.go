package run

import (
	"fmt"
	"math/rand/v2"

	"github.com/ethfab/ethfab/hostagent/traffic"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
	pat "github.com/ethfab/ethfab/traffic"
)

// probes are the phase's probes for the engine: host names resolved to
// its indices, a sample drawn with the phase's traffic seed.
func (r *runner) probes(ph scenario.Phase) (*traffic.Probes, error) {
	sp := ph.Probes
	if sp == nil {
		return nil, nil
	}
	p := &traffic.Probes{Interval: sp.Interval, Size: sp.Size}
	n := len(r.lab.Hosts)
	switch {
	case len(sp.Pairs) > 0:
		index := make(map[string]int, n)
		for i, h := range r.lab.Hosts {
			index[h.Name] = i
		}
		for _, pr := range sp.Pairs {
			a, ok := index[pr[0]]
			b, ok2 := index[pr[1]]
			if !ok || !ok2 {
				return nil, fmt.Errorf("%s: probes between %s and %s: the lab has no such host", ph.Name, pr[0], pr[1])
			}
			p.Pairs = append(p.Pairs, [2]int{a, b})
		}
	case sp.Sample > 0 && sp.Sample < n*(n-1):
		rng := rand.New(rand.NewPCG(uint64(ph.Traffic.Seed), 0x70726f6265))
		seen := map[[2]int]bool{}
		for len(p.Pairs) < sp.Sample {
			pr := [2]int{rng.IntN(n), rng.IntN(n)}
			if pr[0] != pr[1] && !seen[pr] {
				seen[pr] = true
				p.Pairs = append(p.Pairs, pr)
			}
		}
	default:
		for a := range n {
			for b := range n {
				if a != b {
					p.Pairs = append(p.Pairs, [2]int{a, b})
				}
			}
		}
	}
	return p, nil
}

// recoveries sets each on event's recovery: the longest time from the
// event to the next probe answered between a pair that was losing probes
// when it came (seed 002 Table 6: "the communication (ping frame)
// interrupted"). An on with no pair interrupted recovers in 0.
func recoveries(evs []results.LinkEvent, p *pat.ProbeResult) {
	if p == nil {
		return
	}
	for i := range evs {
		e := &evs[i]
		if e.Op != "on" && e.Op != "rate" {
			continue
		}
		rec := 0.0
		for _, pp := range p.Pairs {
			for _, o := range pp.Outages {
				// The outage under way at the event, or one that began
				// before the event was done (the link held down).
				if o.FromS <= e.DoneS && o.ToS > e.AtS {
					rec = max(rec, o.ToS-e.AtS)
				}
			}
		}
		e.RecoveryS = &rec
	}
}
