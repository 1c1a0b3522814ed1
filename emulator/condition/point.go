package condition

import (
	"time"

	"github.com/ethfab/ethfab/results"
)

// PointStart marks where a traffic point began in a monitor's counters and
// logs (StartPoint).
type PointStart struct {
	before Counters
	seen   int
	rseen  uint64
	relay  RelayMark
	rc     RelayCounters
}

// StartPoint marks the start of a traffic point.
func (m *Monitor) StartPoint() PointStart {
	s := PointStart{before: m.Counters(), seen: len(m.Events())}
	_, s.rseen = m.Reactions(^uint64(0))
	s.rc, _, s.relay = m.RelayLog(1 << 62)
	return s
}

// Point is what one monitor did over a traffic point: the counts and the
// samples behind the distributions, so the points of every machine's
// monitor merge (MergePoints) into the one a single monitor would have
// reported.
type Point struct {
	Counts results.Conditions `json:"counts"` // the counts; no distributions
	// The samples, in ms: reaction and recovery times of reacted flips,
	// their FlowMod share, and onset to applied of every flip.
	Reaction []float64 `json:"reaction_ms"`
	Recovery []float64 `json:"recovery_ms"`
	Flip     []float64 `json:"flip_ms"`
	Applied  []float64 `json:"applied_ms"`
	// Reactions are the point's measurements, for its CSV.
	Reactions []Reaction `json:"reactions"`
	// Relay, across machines: the relay's counts and samples.
	Relay *RelayPoint `json:"relay,omitempty"`
}

// RelayPoint is what one monitor's relay did over a point.
type RelayPoint struct {
	Counters RelayCounters `json:"counters"`
	Samples  []RelaySample `json:"samples"`
	Clocked  bool          `json:"clocked"`
}

// EndPoint is what the monitor did since s.
func (m *Monitor) EndPoint(s PointStart) *Point {
	after := m.Counters()
	evs := m.Events()
	p := &Point{Counts: results.Conditions{
		PauseEvents:    after.PauseEvents - s.before.PauseEvents,
		UpstreamPauses: after.Upstream - s.before.Upstream,
		ResumeEvents:   after.ResumeEvents - s.before.ResumeEvents,
		FlowMods:       after.FlowMods - s.before.FlowMods,
		Undiverted:     after.Undiverted - s.before.Undiverted,
		Unrecovered:    after.Unrecovered - s.before.Unrecovered,
		Unmeasured:     after.Unmeasured - s.before.Unmeasured,
		// The counters since the monitor started, not this point's: the
		// resolution is a property of the machine's poll loop.
		OnsetResolutionMS: float64(m.ProbeResolution()) / float64(time.Millisecond),
		ReactLimitMS:      float64(m.ReactLimit()) / float64(time.Millisecond),
	}}
	if s.seen <= len(evs) {
		for _, e := range evs[s.seen:] {
			if e.Flip && !e.Manual {
				p.Counts.Flips++
			}
		}
	}
	p.Reactions, _ = m.Reactions(s.rseen)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, r := range p.Reactions {
		if !r.Applied.IsZero() {
			p.Applied = append(p.Applied, ms(r.Applied.Sub(r.Onset)))
		}
		if r.Outcome != Reacted {
			continue
		}
		if r.Resume {
			p.Recovery = append(p.Recovery, ms(r.Delay()))
		} else {
			p.Reaction = append(p.Reaction, ms(r.Delay()))
			p.Flip = append(p.Flip, ms(r.Sent.Sub(r.Onset)))
		}
	}
	if m.relay != nil {
		c, samples, _ := m.RelayLog(s.relay)
		c.Add(s.rc, -1)
		p.Relay = &RelayPoint{Samples: samples, Clocked: m.relay.o.Clocked, Counters: c}
	}
	return p
}

// MergePoints is the point of several monitors (every machine's of a lab
// across machines): counts and samples together, the coarsest onset
// resolution.
func MergePoints(ps []*Point) *Point {
	out := &Point{}
	for _, p := range ps {
		out.Counts.AddCounts(&p.Counts)
		out.Counts.OnsetResolutionMS = max(out.Counts.OnsetResolutionMS, p.Counts.OnsetResolutionMS)
		out.Counts.ReactLimitMS = max(out.Counts.ReactLimitMS, p.Counts.ReactLimitMS)
		out.Reaction = append(out.Reaction, p.Reaction...)
		out.Recovery = append(out.Recovery, p.Recovery...)
		out.Flip = append(out.Flip, p.Flip...)
		out.Applied = append(out.Applied, p.Applied...)
		out.Reactions = append(out.Reactions, p.Reactions...)
		if r := p.Relay; r != nil {
			if out.Relay == nil {
				out.Relay = &RelayPoint{Clocked: true}
			}
			o := out.Relay
			o.Clocked = o.Clocked && r.Clocked
			o.Samples = append(o.Samples, r.Samples...)
			o.Counters.Add(r.Counters, 1)
		}
	}
	return out
}

// Results is the point as metrics.json records it.
func (p *Point) Results() *results.Conditions {
	out := p.Counts
	out.ReactionMS = results.NewDistribution(p.Reaction)
	out.RecoveryMS = results.NewDistribution(p.Recovery)
	out.FlipMS = results.NewDistribution(p.Flip)
	out.AppliedMS = results.NewDistribution(p.Applied)
	if r := p.Relay; r != nil {
		var oneWay, acked []float64
		for _, s := range r.Samples {
			if s.Ack {
				acked = append(acked, s.MS)
			} else {
				oneWay = append(oneWay, s.MS)
			}
		}
		out.PauseRelay = &results.PauseRelay{RelayCounts: r.Counters, Clocked: r.Clocked,
			OneWayMS: results.NewDistribution(oneWay), AckedMS: results.NewDistribution(acked)}
	}
	return &out
}
