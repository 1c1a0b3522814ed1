package results

import (
	"fmt"
	"sort"
	"time"

	"github.com/ethfab/ethfab/traffic"
)

// Fidelity thresholds. A run is untrustworthy when the machine, not the
// emulated fabric, shaped the results (Mininet-HiFi's argument): the CPU
// had no headroom left, frames were lost outside the modelled queues, or a
// link that had a queue most of the time did not carry its configured rate
// (so something upstream of the shaper was the bottleneck).
const (
	// MaxCPUBusy is the busiest the machine may be, as a fraction of all
	// cores, averaged over a point. Above it, packet processing (OVS
	// userspace datapath, traffic engine) waits for a CPU and latency and
	// throughput measure the machine.
	MaxCPUBusy = 0.90
	// MaxThreadBusy is the busiest one ovs-vswitchd thread may be, as a
	// fraction of one core: the same headroom as MaxCPUBusy, for the
	// thread that forwards an instance's frames (the userspace datapath
	// polls every port of an instance on one thread, so it saturates
	// while the all-core average still looks fine).
	MaxThreadBusy = MaxCPUBusy
	// MaxOutsideDrops is the largest fraction of frames sent that may be
	// lost outside the modelled queues. Not zero: stray frames (a host's
	// IPv6 router solicitation refused by a veth still coming up) happen.
	MaxOutsideDrops = 0.001
	// SaturatedBusy is the fraction of backlog samples in which a link
	// end's queue must be non-empty for the link to count as saturated.
	// Its achieved rate is measured over the intervals between samples in
	// which the queue provably never emptied (the backlog at the start
	// covered the interval at the link's rate), so even a link saturated
	// in bursts must show its configured rate, and a link that merely
	// idled between bursts is not taken for one that fell behind.
	SaturatedBusy = 0.2
	// MinAchievedRate is the least fraction of its configured rate a
	// saturated link must carry.
	MinAchievedRate = 0.90
	// MaxQueueLeak is the largest share of its limit by which a counted
	// queue (the eBPF datapath's) may stay above its qdisc once the point
	// has drained: the queue the program models is that much shorter
	// than the scenario's. Not zero: a frame the kernel drops between tbf
	// and the far end's program is never counted out (it is judged as a
	// drop outside the modelled queues).
	MaxQueueLeak = 0.02
	// MaxMeanLateness is how late, in slots (frame times at the host
	// link's rate), the traffic engine may send its frames on average.
	// The arrival process is slotted: a frame sent within its slot
	// entered the fabric when the model says it did. Past a slot on
	// average, the engine's pace, not the arrival process, set when
	// frames went in: a schedule that slipped by 300 ms and caught up
	// before the window ended sent everything (no unsent frame), but as
	// a trickle and then a burst. Faithful runs here send 0.05 slot late
	// (quickstart, 2 Mbit/s) to 0.5 (DF(2,3,2) at 20 Mbit/s, whose slot
	// is 0.4 ms); at 100 Mbit/s (80 µs slots) 30-58 µs, 0.4-0.7 slot.
	MaxMeanLateness = 1.0
	// LatenessFloorUS is the least the lateness limit is, in µs, whatever
	// the slot: the sender's own timer (traffic.LatenessFloor).
	LatenessFloorUS = float64(traffic.LatenessFloor) / float64(time.Microsecond)
)

// Fidelity is the verdict on whether the machine kept up.
type Fidelity struct {
	OK      bool            `json:"ok"`
	Reasons []string        `json:"reasons"` // plain words, one per failed check
	Checks  []FidelityCheck `json:"checks"`
}

// FidelityCheck is one measurement compared with its threshold.
type FidelityCheck struct {
	Check string  `json:"check"` // cpu, thread_cpu, unsent, lateness, drops, duplicates, links, shaping, queue_counts, link_rate, underlay, pause_relay
	Phase string  `json:"phase"`
	Load  float64 `json:"load"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	OK    bool    `json:"ok"`
	What  string  `json:"what"`
}

// FidelityInput is what one point measured about the machine.
type FidelityInput struct {
	Phase string
	Load  float64
	// CPUBusy is the busy fraction of all cores over the point; negative
	// when not measured.
	CPUBusy float64
	// CPUApart is the busy fraction of all cores that idle-priority work
	// took (an mpi phase's ranks, which poll): counted in CPUBusy, and
	// taken off it for the check, since it runs only on CPU nothing else
	// wanted.
	CPUApart float64
	// Busiest is the busiest ovs-vswitchd thread over the point; a zero
	// Cores (and an empty Process) when not measured.
	Busiest ThreadCPU
	Sent    uint64 // frames the traffic engine sent
	// Offered and Unsent: frames the hosts' arrival processes made, and
	// those the traffic engine fell too far behind to send at all;
	// RefusedLate: those it sent late into a host queue that refused
	// them (the backlog of a stalled engine).
	Offered, Unsent, RefusedLate uint64
	// Lateness: how late the engine sent what it sent.
	Lateness Lateness
	// Duplicates: frames a sink received twice. Traffic frames are
	// unicast and no rule of a fabric copies them, so every duplicate is
	// the machine's (or the traffic engine's) doing.
	Duplicates uint64
	Drops      Drops
	Links      []LinkRate
	// Unshaped lists link ends configured with a rate that carry no
	// shaping queue: the fabric there is not the one the scenario models.
	Unshaped []string
	// Missing lists links deleted while the point ran.
	Missing []string
	// Leaked lists the eBPF datapath's counted queues that held more than
	// their qdisc at the point's end: the program took them for fuller
	// than they were and dropped frames a real queue would have kept.
	Leaked []QueueLeak
	// Underlay is each machine's underlay over the point, in a lab across
	// machines.
	Underlay []UnderlayLoad
	// PauseRelay: in a lab across machines under conditional routing,
	// the PAUSE relayed between machines, judged against
	// OnsetResolutionMS, the condition monitors' poll cycle.
	PauseRelay        *PauseRelay
	OnsetResolutionMS float64
}

// UnderlayLoad is what a machine's underlay interface sent over a point
// (the cut links' frames, VXLAN-encapsulated, and anything else on it)
// against its speed.
type UnderlayLoad struct {
	Machine  string  `json:"machine"`
	Dev      string  `json:"dev"`
	Bps      float64 `json:"bps"`
	SpeedBps float64 `json:"speed_bps"`
}

// MaxUnderlayShare bounds an underlay interface's load: past it the
// machines' own network queues the cut links' frames, which the scenario
// does not model.
const MaxUnderlayShare = 0.9

// QueueLeak is a counted queue that never came back down: Bytes more than
// its qdisc held, of its Limit.
type QueueLeak struct {
	Port         string
	Bytes, Limit uint64
}

// LinkRate is one shaped link end during a point.
type LinkRate struct {
	Port        string  `json:"port"`
	Busy        float64 `json:"busy"` // fraction of backlog samples with a non-empty queue
	AchievedBps float64 `json:"achieved_bps"`
	RateBps     float64 `json:"rate_bps"`
}

// EvaluateFidelity checks every point against the thresholds above.
func EvaluateFidelity(in []FidelityInput) Fidelity {
	f := Fidelity{OK: true, Reasons: []string{}, Checks: []FidelityCheck{}}
	add := func(c FidelityCheck, reason string) {
		f.Checks = append(f.Checks, c)
		if !c.OK {
			f.OK = false
			f.Reasons = append(f.Reasons, fmt.Sprintf("%s at load %g: %s", c.Phase, c.Load, reason))
		}
	}
	for _, p := range in {
		if p.CPUBusy >= 0 {
			busy, what := p.CPUBusy, "busy fraction of all cores"
			if p.CPUApart > 0 {
				busy = max(0, p.CPUBusy-p.CPUApart)
				what = fmt.Sprintf("busy fraction of all cores (%.0f%%) less the MPI ranks' idle-priority share (%.0f%%)", 100*p.CPUBusy, 100*p.CPUApart)
			}
			add(FidelityCheck{Check: "cpu", Phase: p.Phase, Load: p.Load, Value: busy, Limit: MaxCPUBusy,
				OK: busy <= MaxCPUBusy, What: what},
				fmt.Sprintf("the CPUs were %.0f%% busy%s (limit %.0f%%): the machine, not the fabric, may have limited throughput and latency",
					100*busy, apartNote(p), 100*MaxCPUBusy))
		}
		if b := p.Busiest; b.Process != "" {
			add(FidelityCheck{Check: "thread_cpu", Phase: p.Phase, Load: p.Load, Value: b.Cores, Limit: MaxThreadBusy,
				OK: b.Cores <= MaxThreadBusy, What: fmt.Sprintf("busiest ovs-vswitchd thread (%s, %s), fraction of one core", b.Process, b.Thread)},
				fmt.Sprintf("ovs-vswitchd thread %s of %s was %.0f%% busy (limit %.0f%%): it forwards that instance's frames, so they queued behind it ahead of the modelled queues",
					b.Thread, b.Process, 100*b.Cores, 100*MaxThreadBusy))
		}
		if p.Offered > 0 {
			frac := float64(p.Unsent+p.RefusedLate) / float64(p.Offered)
			reason := fmt.Sprintf("the traffic engine sent only %d of %d offered frames (%.2g%% never sent): the hosts could not offer the load asked for, the machine could not keep up",
				p.Offered-p.Unsent, p.Offered, 100*float64(p.Unsent)/float64(p.Offered))
			if p.RefusedLate > 0 {
				reason = fmt.Sprintf("the traffic engine never sent %d of %d offered frames and sent %d more so late that their host's queue refused them (%.2g%% in all): the machine, not the host link, held them back",
					p.Unsent, p.Offered, p.RefusedLate, 100*frac)
			}
			add(FidelityCheck{Check: "unsent", Phase: p.Phase, Load: p.Load, Value: frac, Limit: MaxOutsideDrops,
				OK: frac <= MaxOutsideDrops, What: "frames the traffic engine never sent, or sent late into a full host queue / frames offered"}, reason)
		}
		if l := p.Lateness; l.SlotUS > 0 && p.Sent > 0 {
			v, limit := l.MeanUS/l.SlotUS, max(MaxMeanLateness, LatenessFloorUS/l.SlotUS)
			add(FidelityCheck{Check: "lateness", Phase: p.Phase, Load: p.Load, Value: v, Limit: limit,
				OK: v <= limit, What: fmt.Sprintf("the traffic engine's mean lateness / a slot (a frame time at the host link's rate, %.3g ms); the limit is a slot or %g µs, the larger", l.SlotUS/1e3, LatenessFloorUS)},
				fmt.Sprintf("the traffic engine sent its frames %.3g ms late on average, %.2g slots of %.3g ms (limit %.2g; %d frames more than a slot late, the latest %.3g ms): the machine, not the arrival process, set when frames entered the fabric",
					l.MeanUS/1e3, v, l.SlotUS/1e3, limit, l.Late, l.MaxUS/1e3))
		}
		out := p.Drops.Outside()
		frac := 0.0
		if p.Sent > 0 {
			frac = float64(out) / float64(p.Sent)
		} else if out > 0 {
			frac = 1
		}
		add(FidelityCheck{Check: "drops", Phase: p.Phase, Load: p.Load, Value: frac, Limit: MaxOutsideDrops,
			OK: frac <= MaxOutsideDrops, What: "frames lost outside the modelled queues / frames sent"},
			fmt.Sprintf("%d frames (%.2g%% of %d sent) were lost outside the modelled queues (datapath %d, kernel %d, socket %d)",
				out, 100*frac, p.Sent, p.Drops.Datapath, p.Drops.Kernel, p.Drops.Socket))
		if p.Duplicates > 0 {
			frac := 1.0
			if p.Sent > 0 {
				frac = float64(p.Duplicates) / float64(p.Sent)
			}
			add(FidelityCheck{Check: "duplicates", Phase: p.Phase, Load: p.Load, Value: frac, Limit: 0,
				What: "frames received twice / frames sent"},
				fmt.Sprintf("%d frames (%.2g%% of %d sent) arrived twice: no rule copies a unicast frame, so the machine or the traffic engine did",
					p.Duplicates, 100*frac, p.Sent))
		}
		if len(p.Missing) > 0 {
			add(FidelityCheck{Check: "links", Phase: p.Phase, Load: p.Load, Value: float64(len(p.Missing)), Limit: 0,
				What: "links of the fabric that disappeared during the point"},
				fmt.Sprintf("%d link(s) (e.g. %s) disappeared during the point: the fabric is not the one the scenario built, and frames lost with them are not the fabric's loss",
					len(p.Missing), p.Missing[0]))
		}
		if len(p.Unshaped) > 0 {
			add(FidelityCheck{Check: "shaping", Phase: p.Phase, Load: p.Load, Value: float64(len(p.Unshaped)), Limit: 0,
				What: "link ends with a configured rate but no shaping queue"},
				fmt.Sprintf("%d link ends (e.g. %s) have a configured rate but no tbf queue, so their rate and buffering are not modelled",
					len(p.Unshaped), p.Unshaped[0]))
		}
		if len(p.Underlay) > 0 {
			// One check per point: the busiest machine's underlay.
			w, v := p.Underlay[0], -1.0
			for _, u := range p.Underlay {
				if u.SpeedBps > 0 && u.Bps/u.SpeedBps > v {
					w, v = u, u.Bps/u.SpeedBps
				}
			}
			if v >= 0 {
				add(FidelityCheck{Check: "underlay", Phase: p.Phase, Load: p.Load, Value: v, Limit: MaxUnderlayShare,
					OK: v <= MaxUnderlayShare, What: fmt.Sprintf("what machine %s's underlay interface %s sent / its speed", w.Machine, w.Dev)},
					fmt.Sprintf("machine %s's underlay interface %s sent %.3g bit/s, %.0f%% of its %.3g bit/s (limit %.0f%%): the cut links' frames queued in the machines' own network, which the scenario does not model",
						w.Machine, w.Dev, w.Bps, 100*v, w.SpeedBps, 100*MaxUnderlayShare))
			}
		}
		if r := p.PauseRelay; r != nil && (r.Changes > 0 || r.Expired > 0) {
			add(relayCheck(p, r))
		}
		if len(p.Leaked) > 0 {
			// One check per point: the worst queue.
			w := p.Leaked[0]
			for _, l := range p.Leaked[1:] {
				if leakShare(l) > leakShare(w) {
					w = l
				}
			}
			v := leakShare(w)
			add(FidelityCheck{Check: "queue_counts", Phase: p.Phase, Load: p.Load, Value: v, Limit: MaxQueueLeak,
				OK: v <= MaxQueueLeak, What: fmt.Sprintf("bytes a counted queue (eBPF datapath) held beyond its qdisc at the point's end / its limit, the worst of %d (%s)", len(p.Leaked), w.Port)},
				fmt.Sprintf("the eBPF program counted %d bytes in %s's queue that tbf did not hold (%.1f%% of its %d-byte limit) and never took them out: it modelled a shorter queue than the scenario's, so some of its queue drops are its own, not the fabric's",
					w.Bytes, w.Port, 100*v, w.Limit))
		}
		// One check per point for links: the worst saturated link.
		links := append([]LinkRate(nil), p.Links...)
		sort.SliceStable(links, func(i, j int) bool { return ratio(links[i]) < ratio(links[j]) })
		n := 0
		for _, l := range links {
			if l.Busy >= SaturatedBusy && l.RateBps > 0 {
				n++
			}
		}
		for _, l := range links {
			if l.Busy < SaturatedBusy || l.RateBps <= 0 {
				continue
			}
			r := ratio(l)
			add(FidelityCheck{Check: "link_rate", Phase: p.Phase, Load: p.Load, Value: r, Limit: MinAchievedRate,
				OK: r >= MinAchievedRate, What: fmt.Sprintf("achieved / configured rate of the slowest of %d saturated links (%s)", n, l.Port)},
				fmt.Sprintf("link %s sent at %.0f%% of its configured %s while its queue never emptied (non-empty %.0f%% of the time): the machine did not keep the shaper running at rate",
					l.Port, 100*r, formatBps(l.RateBps), 100*l.Busy))
			break
		}
	}
	return f
}

// relayCheck judges the PAUSE relayed between machines. On one machine a
// port's pause reaches the links feeding it in the poll that saw its
// queue cross; across machines it arrives a network's time later. Within
// one poll cycle (the onset's own resolution) the upstream switch reacts
// as it would on one machine; later, conditional routing's reaction
// measures the machines' network. A pause released because its refreshes
// stopped coming held feeders on their default paths too long or too
// short, either way not the fabric's doing.
func relayCheck(p FidelityInput, r *PauseRelay) (FidelityCheck, string) {
	d, how := r.Delay()
	n := r.AckedMS.N
	if r.Clocked {
		n = r.OneWayMS.N
	}
	limit := p.OnsetResolutionMS
	c := FidelityCheck{Check: "pause_relay", Phase: p.Phase, Load: p.Load, Value: d, Limit: limit,
		OK:   d <= limit && n > 0 && r.Expired == 0 && r.Unknown == 0,
		What: fmt.Sprintf("90th percentile of the PAUSE relayed between machines, %s, ms, against the condition monitors' poll cycle (%d changes, %d timed, %d expired)", how, r.Changes, n, r.Expired)}
	switch {
	case r.Unknown > 0:
		return c, fmt.Sprintf("%d pause states relayed between machines named ports whose feeders the receiving machine does not run: the machines compiled different tables", r.Unknown)
	case r.Expired > 0:
		return c, fmt.Sprintf("%d pauses relayed between machines were released because their refreshes stopped coming (a machine's monitor fell behind, or its datagrams were lost): the feeding links on the other machine went back to their default paths while the port was still congested",
			r.Expired)
	case n == 0 && r.Clocked:
		return c, fmt.Sprintf("none of the %d pause changes relayed between machines arrived to be timed: the machines' network may have lost them", r.Changes)
	case n == 0:
		return c, fmt.Sprintf("none of the %d pause changes relayed between machines was timed (no acknowledgement came back): the machines' network may have lost them", r.Changes)
	}
	return c, fmt.Sprintf("the PAUSE relayed between machines took %.2f ms (%s, 90th percentile), more than the condition monitors' %.2f ms poll cycle: upstream switches on other machines reacted later than on one machine, so conditional routing's reaction times measure the machines' network",
		d, how, limit)
}

func ratio(l LinkRate) float64 {
	if l.RateBps <= 0 {
		return 1
	}
	return l.AchievedBps / l.RateBps
}

func formatBps(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3g Gbit/s", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3g Mbit/s", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3g kbit/s", v/1e3)
	}
	return fmt.Sprintf("%.3g bit/s", v)
}

func leakShare(l QueueLeak) float64 {
	if l.Limit == 0 {
		return 1
	}
	return float64(l.Bytes) / float64(l.Limit)
}

// apartNote says what the CPU check left out of the machine's busy
// fraction, if anything.
func apartNote(p FidelityInput) string {
	if p.CPUApart <= 0 {
		return ""
	}
	return fmt.Sprintf(" besides the MPI ranks' idle-priority %.0f%% (%.0f%% in all)", 100*p.CPUApart, 100*p.CPUBusy)
}
