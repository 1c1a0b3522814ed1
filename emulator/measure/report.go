package measure

import (
	"time"

	"github.com/ethfab/ethfab/results"
)

// Report is what a Sampler measured between Start and Stop.
type Report struct {
	// Start is when the point's measurement began: the timeline's zero.
	Start    time.Time
	Duration time.Duration
	// CPUBusy is the busy fraction of all cores (from /proc/stat).
	CPUBusy float64
	// CPU is where the CPU went, per ovs-vswitchd thread; nil when it
	// could not be read.
	CPU *results.CPUSplit
	// SwitchHopFPS is the frames per second all switches forwarded.
	SwitchHopFPS float64
	// RulePackets and RuleBytes are summed over every switch, by rule
	// kind (controller.Kind names: routing, valiant, uplink, dmp,
	// broadcast, miss, rewrite).
	RulePackets map[string]uint64
	RuleBytes   map[string]uint64
	// InjectedFrames counts unicast frames entering the fabric, once, at
	// their injection switch: frames received on host ports, less those
	// matched by DMP rules, by broadcast rules for host in_ports, and by
	// the miss rule (frames no rule routes — stray IPv6 multicast and the
	// like). NonminimalFrames are the frames valiant (and, off a Clos, conditional alternative) rules matched; those
	// rules match only host in_ports, so each counts one frame at its
	// injection. NonminimalShare = NonminimalFrames / InjectedFrames.
	InjectedFrames   uint64
	NonminimalFrames uint64
	NonminimalShare  float64
	// Drops fills every field but Socket (the traffic engine's).
	Drops     results.Drops
	Ports     []PortDelta
	PerSwitch []SwitchInjected
	Links     []LinkStats
	// Unshaped lists link ends that should be rate-shaped (their link
	// has a rate) but have no tbf queue: what they carry is not modelled.
	Unshaped []string
	// Missing lists links with an end whose interface was gone at the end
	// of the point (deleted while the run went on).
	Missing []string
	// Leaked lists the eBPF datapath's counted queues that held more
	// than their qdisc at the point's end.
	Leaked []results.QueueLeak
	// Underlay is each machine's underlay over the point (a lab across
	// machines: its workers fill it).
	Underlay []results.UnderlayLoad
	// Backlog holds the series of the hottest link ends.
	Backlog []results.BacklogSeries
	// Timeline is the point bin by bin (nil when no bin closed).
	Timeline *results.Timeline

	// The sampler's own cost: backlog samples taken, the interval in the
	// end (it doubles whenever a sample overran its budget), total and
	// mean time spent polling, and how many samples overran.
	Samples        int
	Interval       time.Duration
	SampleCost     time.Duration
	MeanSampleTime time.Duration
	SlowSamples    int
}

// PortDelta is one OVS port's counters over the phase.
type PortDelta struct {
	Switch                      string
	Port                        int
	Host                        bool // faces a host
	RxPackets, RxBytes, RxDrops uint64
	TxPackets, TxBytes, TxDrops uint64
}

// SwitchInjected is what a switch's hosts injected.
type SwitchInjected struct {
	Switch       string
	Group, Index int
	Frames       uint64
	Bytes        uint64
	Bps          float64
	Fraction     float64 // of the capacity of the switch's host links
}

// LinkStats is one switch-side link end's shaping queue over the phase.
type LinkStats struct {
	Port        string // "g0s1:5"
	Link        string // "g0s1:5 -> g0s2:3"
	RateBps     float64
	Qdisc       string // kind of the root qdisc; "tbf" when shaped
	Bytes       uint64 // sent by the queue
	Packets     uint64
	AchievedBps float64 // over the whole sampled window
	// BusyBps is the rate while the queue provably never emptied (BusySecs
	// of it: intervals between samples whose starting backlog covered the
	// interval at the link's rate): a link must carry its configured rate
	// then.
	BusyBps     float64
	BusySecs    float64
	QueueDrops  uint64
	Busy        float64 // fraction of samples with a non-empty queue
	MeanBacklog float64 // bytes
	MaxBacklog  uint64  // bytes
	// Varied: the point changed the link's rate (RateBps is the one it
	// was built with).
	Varied bool
}

// minBusySecs is how long a queue must have provably stayed non-empty
// (summed over the point) for its link's rate to be judged: long enough
// that tbf's burst does not dominate the measurement.
const minBusySecs = 0.25

// Fill copies the fabric-side measurements into a result point: rule
// counters, non-minimal share, drops (keeping the traffic engine's socket
// drops), CPU,
// per-switch injected throughput and backlog series.
func (r *Report) Fill(p *results.Point) {
	p.NonminimalShare = r.NonminimalShare
	p.RulePackets = r.RulePackets
	socket, again, other, ring := p.Drops.Socket, p.Drops.SendAgain, p.Drops.SendOther, p.Drops.RxRing
	p.Drops = r.Drops
	p.Drops.Socket, p.Drops.SendAgain, p.Drops.SendOther, p.Drops.RxRing = socket, again, other, ring
	if r.CPUBusy >= 0 {
		p.CPUBusy = r.CPUBusy
	}
	p.CPU = r.CPU
	p.Underlay = r.Underlay
	p.SwitchHopFPS = r.SwitchHopFPS
	p.SampleIntervalMS = float64(r.Interval) / float64(time.Millisecond)
	p.PerSwitchInjected = p.PerSwitchInjected[:0]
	for _, s := range r.PerSwitch {
		p.PerSwitchInjected = append(p.PerSwitchInjected, results.SwitchInjected{
			Switch: s.Switch, Group: s.Group, Index: s.Index, Bps: s.Bps, Fraction: s.Fraction})
	}
	p.Backlog = r.Backlog
	p.Timeline = r.Timeline
}

// FidelityInput is the point's input to results.EvaluateFidelity: the
// traffic engine's side (sent, offered, unsent, socket drops) from the
// point it filled, the fabric's from this report.
func (r *Report) FidelityInput(p results.Point) results.FidelityInput {
	in := results.FidelityInput{Phase: p.Name, Load: p.Load, CPUBusy: r.CPUBusy, Sent: p.Sent, Offered: p.Offered, Unsent: p.Unsent, RefusedLate: p.RefusedLate, Lateness: p.SendLateness, Duplicates: p.Duplicates, Drops: r.Drops}
	if r.CPU != nil {
		in.Busiest = r.CPU.Busiest
	}
	in.Drops.Socket = p.Drops.Socket
	in.Unshaped = r.Unshaped
	in.Missing = r.Missing
	in.Leaked = r.Leaked
	in.Underlay = r.Underlay
	if c := p.Conditions; c != nil && c.PauseRelay != nil {
		in.PauseRelay, in.OnsetResolutionMS = c.PauseRelay, c.OnsetResolutionMS
	}
	for _, l := range r.Links {
		// A link counts as saturated for the rate check by the time its
		// queue never emptied, and is judged by what it sent then.
		if l.BusySecs < minBusySecs || l.Varied {
			continue
		}
		in.Links = append(in.Links, results.LinkRate{Port: l.Port, Busy: l.Busy, AchievedBps: l.BusyBps, RateBps: l.RateBps})
	}
	return in
}
