package results

import (
	"fmt"
	"math"

	"github.com/ethfab/ethfab/internal/quantile"
	"github.com/ethfab/ethfab/scenario"
)

// ExpectationResult is one expectation of one phase at one load.
type ExpectationResult struct {
	Phase  string  `json:"phase"`
	Expect string  `json:"expect"` // canonical text, e.g. "p99_latency < 5ms"
	Load   float64 `json:"load"`
	// Value is the measured left-hand side and Bound the right-hand side
	// it was compared with, in the metric's unit: loads and fractions as
	// fractions, latencies in microseconds.
	Value float64 `json:"value"`
	Bound float64 `json:"bound"`
	Pass  bool    `json:"pass"`
	Note  string  `json:"note,omitempty"`
}

// MetricValue is a point's value of a scenario metric, in the unit
// Expectation.Holds takes (latencies in seconds). ok is false when the
// point has no such value, e.g. a latency when nothing was received.
func MetricValue(p *Point, m scenario.Metric) (v float64, ok bool) {
	switch m {
	case scenario.Accepted:
		return p.AcceptedLoad, true
	case scenario.Offered:
		return p.OfferedLoad, true
	case scenario.Loss:
		return p.Loss, true
	case scenario.NonminimalShare:
		return p.NonminimalShare, true
	case scenario.DeliveredSpread, scenario.DeliveredMinRatio:
		ds := groupDelivered(p)
		if len(ds) < 2 {
			return 0, false
		}
		var sum float64
		for _, d := range ds {
			sum += d
		}
		if sum == 0 {
			return 0, false
		}
		mean := sum / float64(len(ds))
		spread, least := 0.0, math.Inf(1)
		for _, d := range ds {
			spread = math.Max(spread, math.Abs(d/mean-1))
			if others := (sum - d) / float64(len(ds)-1); others > 0 {
				least = math.Min(least, d/others)
			}
		}
		if m == scenario.DeliveredSpread {
			return spread, true
		}
		return least, !math.IsInf(least, 1)
	case scenario.ProbesLost, scenario.ProbesLostMax, scenario.ProbePairsLosing, scenario.LongestOutage, scenario.ProbeP50Latency:
		pr := p.Probes
		if pr == nil {
			return 0, false
		}
		switch m {
		case scenario.ProbesLost:
			return float64(pr.Lost), true
		case scenario.ProbesLostMax:
			return float64(pr.MaxLost), true
		case scenario.ProbePairsLosing:
			return float64(pr.PairsLosing), true
		case scenario.LongestOutage:
			return pr.LongestOutageS, true
		}
		return pr.P50US / 1e6, pr.Received > 0
	case scenario.SOutGlobalP, scenario.ToSOutLocalP:
		q := p.QCN
		if q == nil {
			return 0, false
		}
		v := q.SOutGlobalP
		if m == scenario.ToSOutLocalP {
			v = q.ToSOutLocalP
		}
		if v == nil {
			return 0, false
		}
		return *v, true
	case scenario.FlowAcceptedMin, scenario.FlowAcceptedMax:
		if len(p.Flows) == 0 {
			return 0, false
		}
		v := p.Flows[0].AcceptedLoad
		for _, f := range p.Flows[1:] {
			if m == scenario.FlowAcceptedMin {
				v = math.Min(v, f.AcceptedLoad)
			} else {
				v = math.Max(v, f.AcceptedLoad)
			}
		}
		return v, true
	case scenario.BinAcceptedMin:
		return binAcceptedMin(p.Timeline)
	case scenario.FlowAcceptedMean:
		if len(p.Flows) == 0 {
			return 0, false
		}
		var sum float64
		for _, f := range p.Flows {
			sum += f.AcceptedLoad
		}
		return sum / float64(len(p.Flows)), true
	case scenario.HotQueueQeq:
		return hotQueueQeq(p, false)
	case scenario.HotQueueP50Qeq:
		return hotQueueQeq(p, true)
	case scenario.ARResetPeriod, scenario.ARResetSpread, scenario.ARResetLeftMax:
		if p.QCN == nil || p.QCN.Resets == nil || p.QCN.Resets.ExpiryS <= 0 {
			return 0, false
		}
		r := p.QCN.Resets
		switch {
		case m == scenario.ARResetPeriod && r.PeriodS != nil:
			return *r.PeriodS / r.ExpiryS, true
		case m == scenario.ARResetSpread && r.SpreadS != nil:
			return *r.SpreadS / r.ExpiryS, true
		case m == scenario.ARResetLeftMax && r.LeftMax != nil:
			return float64(*r.LeftMax), true
		}
		return 0, false
	case scenario.FlowP50LatencyRatio:
		lo, hi := math.Inf(1), 0.0
		for _, f := range p.Flows {
			if f.Received > 0 {
				lo, hi = math.Min(lo, f.LatencyUS.P50), math.Max(hi, f.LatencyUS.P50)
			}
		}
		if hi == 0 || lo <= 0 {
			return 0, false
		}
		return hi / lo, true
	case scenario.UnknownFloods:
		// Counted by the switches' rule counters (kind vlan-flood); a
		// point without them measured none.
		if p.RulePackets == nil {
			return 0, false
		}
		return float64(p.RulePackets["vlan-flood"]), true
	case scenario.SwitchPower, scenario.PowerSaving:
		if p.Power == nil {
			return 0, false
		}
		if m == scenario.SwitchPower {
			return p.Power.SwitchW, true
		}
		return p.Power.Saving, true
	case scenario.LinkRecovery, scenario.LinkRecoveryErr:
		v, ok := 0.0, false
		for _, e := range p.LinkEvents {
			if e.RecoveryS == nil {
				continue
			}
			x := *e.RecoveryS
			if m == scenario.LinkRecoveryErr {
				x = math.Abs(x - e.HoldS)
			}
			v, ok = max(v, x), true
		}
		return v, ok
	case scenario.MeanLatency, scenario.P50Latency, scenario.P99Latency:
		if p.Received == 0 {
			return 0, false
		}
		us := map[scenario.Metric]float64{
			scenario.MeanLatency: p.LatencyUS.Mean,
			scenario.P50Latency:  p.LatencyUS.P50,
			scenario.P99Latency:  p.LatencyUS.P99,
		}[m]
		return us / 1e6, true
	}
	return 0, false
}

// groupDelivered is the delivered load of each switch of the point's
// lowest-numbered group (the one an ADV pattern loads hardest, as in the
// per-switch figures).
func groupDelivered(p *Point) []float64 {
	group := math.MaxInt
	for _, s := range p.PerSwitchInjected {
		if _, ok := p.DeliveredBySourceSwitch[s.Switch]; ok && s.Group >= 0 {
			group = min(group, s.Group)
		}
	}
	var out []float64
	for _, s := range p.PerSwitchInjected {
		if d, ok := p.DeliveredBySourceSwitch[s.Switch]; ok && s.Group == group {
			out = append(out, d)
		}
	}
	return out
}

// Evaluate checks a phase's expectations against every point of that
// phase: one result per expectation per load, in load order as run; an
// expectation naming another phase takes its right-hand metric from that
// phase's point at the same load. A metric that could not be measured
// fails the expectation, so a phase that received nothing cannot pass a
// latency bound.
func Evaluate(phase string, exps []scenario.Expectation, points []Point) []ExpectationResult {
	var out []ExpectationResult
	for _, e := range exps {
		for i := range points {
			p := &points[i]
			if p.Name != phase {
				continue
			}
			r := ExpectationResult{Phase: phase, Expect: e.String(), Load: p.Load}
			rhs := p
			if e.OfPhase != "" {
				rhs = nil
				for j := range points {
					if points[j].Name == e.OfPhase && points[j].Load == p.Load {
						rhs = &points[j]
					}
				}
			}
			if rhs == nil {
				r.Note = fmt.Sprintf("phase %s has no point at load %g", e.OfPhase, p.Load)
			} else {
				check(&r, e, p, rhs)
			}
			out = append(out, r)
		}
	}
	return out
}

// check evaluates e with its left-hand metric from lhs and the right-hand
// `<number> * <metric>` from rhs into r: values in the metric's unit
// (latencies in µs, times in s), pass, or a note why it could not be told.
func check(r *ExpectationResult, e scenario.Expectation, lhs, rhs *Point) {
	l, ok := MetricValue(lhs, e.Metric)
	of := 1.0
	if e.Of != "" {
		var ok2 bool
		of, ok2 = MetricValue(rhs, e.Of)
		ok = ok && ok2
	}
	scale := 1.0
	if e.Metric.IsLatency() {
		scale = 1e6
	}
	r.Value, r.Bound = l*scale, e.Value*of*scale
	switch {
	case !ok:
		r.Note = fmt.Sprintf("%s not measured (no frames received, no group of switches, no probes, no link on, no switch_profile, no S_out, no congestion points or, under snoop-ar, fewer than two resets)", e.Metric)
	case math.IsNaN(l) || math.IsNaN(of):
		r.Note = "not a number"
	default:
		r.Pass = e.Holds(l, of)
	}
}

// EvaluateScenario evaluates the expectations of every traffic phase.
func EvaluateScenario(sc *scenario.Scenario, points []Point) []ExpectationResult {
	var out []ExpectationResult
	for _, ph := range sc.Phases {
		if ph.Kind == scenario.PhaseTraffic && len(ph.Expect) > 0 {
			out = append(out, Evaluate(ph.Name, ph.Expect, points)...)
		}
	}
	return out
}

// Failed lists the expectation results that did not pass; `ethfab run`
// exits non-zero when it is not empty.
func (m *Metrics) Failed() []ExpectationResult {
	var out []ExpectationResult
	for _, r := range m.Expectations {
		if !r.Pass {
			out = append(out, r)
		}
	}
	return out
}

// VersusResult is one expectation of one case against another at one
// load.
type VersusResult struct {
	Case  string `json:"case"`
	Other string `json:"versus"`
	ExpectationResult
}

// EvaluateVersus checks v, a versus of case self, at every load of its
// phase that both runs measured (or v.Loads): the left-hand metric is
// self's point, the right-hand one other's at the same load. A load one
// of them lacks fails, noted.
func EvaluateVersus(self string, v scenario.Versus, mine, theirs []Point) []VersusResult {
	find := func(ps []Point, load float64) *Point {
		for i := range ps {
			if ps[i].Name == v.Phase && ps[i].Load == load {
				return &ps[i]
			}
		}
		return nil
	}
	loads := v.Loads
	if len(loads) == 0 {
		for _, p := range mine {
			if p.Name == v.Phase {
				loads = append(loads, p.Load)
			}
		}
	}
	var out []VersusResult
	for _, e := range v.Expect {
		for _, l := range loads {
			r := VersusResult{Case: self, Other: v.Case, ExpectationResult: ExpectationResult{Phase: v.Phase, Expect: e.String(), Load: l}}
			a, b := find(mine, l), find(theirs, l)
			if a == nil || b == nil {
				r.Note = fmt.Sprintf("load %g of phase %s not measured in both cases", l, v.Phase)
				out = append(out, r)
				continue
			}
			check(&r.ExpectationResult, e, a, b)
			out = append(out, r)
		}
	}
	return out
}

// binAcceptedMin is scenario.BinAcceptedMin: over each host that was
// delivered traffic (at least 1% of its link's rate on average; probes
// alone come to a hundredth of that at 100 Mbit/s), its bins strictly
// between the first and the last that delivered something; false when
// no host has such a bin.
func binAcceptedMin(tl *Timeline) (float64, bool) {
	if tl == nil {
		return 0, false
	}
	least, ok := math.Inf(1), false
	for _, bins := range tl.DeliveredByHost {
		first, last := -1, -1
		for i, v := range bins {
			if v > 0 {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if first < 0 || last <= first+1 {
			continue // no bin between its first and last
		}
		inner := bins[first+1 : last]
		var sum float64
		for _, v := range inner {
			sum += v
		}
		if len(inner) == 0 || sum < 0.01*float64(len(inner)) {
			continue
		}
		for _, v := range inner {
			least, ok = math.Min(least, v), true
		}
	}
	return least, ok
}

// hotQueueQeq is the mean (or, median, the median) backlog of the
// hottest link between switches the sampler kept a series of (by mean),
// over the samples in the measured window, over the congestion points'
// Qeq.
func hotQueueQeq(p *Point, median bool) (float64, bool) {
	if p.QCN == nil || p.QCN.QeqBytes == 0 || len(p.Backlog) == 0 {
		return 0, false
	}
	from, to := p.WarmupS, p.WarmupS+p.DurationS
	var best float64
	var hot []float64
	for _, b := range p.Backlog {
		if b.Host != "" {
			continue // a host's link: a flow at its rate keeps a standing queue there
		}
		var in []float64
		var sum float64
		for i, t := range b.T {
			if t >= from && t <= to && i < len(b.Bytes) {
				in = append(in, float64(b.Bytes[i]))
				sum += float64(b.Bytes[i])
			}
		}
		if len(in) == 0 {
			continue
		}
		if mean := sum / float64(len(in)); hot == nil || mean >= best {
			best, hot = mean, in
		}
	}
	if hot == nil {
		return 0, false
	}
	if median {
		return quantile.NearestRank(quantile.Sorted(hot), 0.5) / float64(p.QCN.QeqBytes), true
	}
	return best / float64(p.QCN.QeqBytes), true
}
