package traffic

import (
	"fmt"
	"time"

	pat "github.com/ethfab/ethfab/traffic"
)

// Result is one measurement. Loads are per host, as fractions of the host
// link rate, like the offered load of the papers' plots.
type Result struct {
	Pattern     string        `json:"pattern"`
	Load        float64       `json:"load"`         // as asked
	Seed        int64         `json:"seed"`         // arrivals and destination draws
	PatternSeed int64         `json:"pattern_seed"` // the pattern's own (permutation, npb-like mix)
	FrameSize   int           `json:"frame_bytes"`
	RateBps     uint64        `json:"rate_bps"`
	Warmup      time.Duration `json:"warmup_ns"`
	Duration    time.Duration `json:"duration_ns"`
	Drain       time.Duration `json:"drain_ns"`
	// Aggregate: counts summed over hosts, loads averaged over all hosts
	// (silent ones included), latency over every frame received.
	Aggregate Stats        `json:"aggregate"`
	Hosts     []HostStats  `json:"hosts"`
	Switches  []SwitchLoad `json:"switches"`
	Fidelity  Fidelity     `json:"fidelity"`
	// Probes is what Config.Probes found.
	Probes *pat.ProbeResult `json:"probes,omitempty"`
	// Flows are a flows pattern's pairs, each once, in the order the
	// pattern first lists them (FlowStats).
	Flows []FlowStats `json:"flows,omitempty"`
	// RP is what the reaction points did (Config.RP).
	RP *RPStats `json:"reaction_points,omitempty"`
	// Latency is the merged histogram behind Aggregate.Latency, for merging
	// several results.
	Latency *pat.Histogram `json:"-"`
}

// Stats are the measured figures. For one host, the sending side (offered,
// sent, lost, offered_load) is what the host sent, and the receiving side
// (received, duplicates, reordered, accepted_load, latency) is what it
// received.
type Stats struct {
	Offered      uint64  `json:"offered_frames"`  // Bernoulli arrivals in the window
	Sent         uint64  `json:"sent_frames"`     // of which the kernel accepted
	Received     uint64  `json:"received_frames"` // unique frames that arrived
	Lost         uint64  `json:"lost_frames"`     // sent and never received
	Duplicates   uint64  `json:"duplicates"`
	Reordered    uint64  `json:"reordered"`
	OfferedLoad  float64 `json:"offered_load"`
	AcceptedLoad float64 `json:"accepted_load"`
	Loss         float64 `json:"loss"` // Lost / Sent
	Latency      Latency `json:"latency_us"`
}

// Latency summarizes one-way latencies in µs (p50/p99 within ~1%).
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// HostStats are one host's figures.
type HostStats struct {
	Host   string `json:"host"`
	Switch int    `json:"switch"`
	Group  int    `json:"group"`
	Stats
}

// SwitchLoad is what the hosts of one switch injected into the fabric.
type SwitchLoad struct {
	Switch int `json:"switch"`
	Hosts  int `json:"hosts"`
	// InjectedBps is the measured-window rate of frames the hosts sent.
	InjectedBps float64 `json:"injected_bps"`
	// OfferedLoad and AcceptedLoad are the sums over the switch's hosts
	// (a switch of 4 hosts at load 0.5 offers 2.0 host links' worth).
	OfferedLoad  float64 `json:"offered_load"`
	AcceptedLoad float64 `json:"accepted_load"`
	// DeliveredLoad is what the sinks received from the switch's hosts,
	// summed like OfferedLoad: seed 004's Fig. 8 quantity. Injected counts
	// cannot give it on lossy links, where a switch's hosts inject their
	// whole load and lose part of it at a congested queue.
	DeliveredLoad float64 `json:"delivered_load"`
}

// Fidelity says how far the emulation kept to what was asked: a run whose
// senders fell behind or whose sockets dropped frames measured the host,
// not the fabric.
type Fidelity struct {
	LateFrames     uint64  `json:"late_frames"` // sent more than one slot after their time
	MeanLatenessUs float64 `json:"mean_lateness_us"`
	MaxLatenessUs  float64 `json:"max_lateness_us"`
	// SlotUs is a slot: a frame time at the host link's rate, the
	// arrival process's grain.
	SlotUs float64 `json:"slot_us"`
	// LateBinS and LateBinsUs: the mean lateness of the frames due in
	// each bin of the measurement window, LateBinS seconds wide (-1: none
	// due there), a frame never sent counted as late as the senders' stop,
	// so a slip shows when it happened and whether the engine caught up.
	LateBinS   float64   `json:"late_bin_s"`
	LateBinsUs []float64 `json:"late_bins_us"`
	Unsent     uint64    `json:"unsent_frames"` // arrivals never sent: senders behind at the end
	// UnsentEstimated: Unsent (and so the offered counts) include an
	// expectation rather than drawn arrivals, the senders being far behind.
	UnsentEstimated bool   `json:"unsent_estimated,omitempty"`
	SendNoBufs      uint64 `json:"send_enobufs"` // host link queue full (counted lost at the source)
	// SendNoBufsLate: of those, frames the engine sent more than a slot
	// late (the machine's doing: see srcStats.errNoBufsLate).
	SendNoBufsLate uint64 `json:"send_enobufs_late"`
	SendAgain      uint64 `json:"send_eagain"` // socket send buffer full
	SendOther      uint64 `json:"send_other_errors"`
	RxDrops        uint64 `json:"rx_socket_drops"` // PACKET_STATISTICS tp_drops
	Stray          uint64 `json:"stray_frames"`    // delivered to the wrong host
	Malformed      uint64 `json:"malformed_frames"`
	Foreign        uint64 `json:"foreign_frames"` // same EtherType, not traffic (pings)
	StaleRun       uint64 `json:"stale_run_frames"`
	FarReordered   uint64 `json:"far_reordered"` // beyond the duplicate window
	// Unclocked frames came from another machine whose clock does not
	// agree with the receiver's: received, their latency not taken.
	Unclocked uint64 `json:"unclocked_frames,omitempty"`
}

func latencyOf(h *pat.Histogram) Latency {
	if h.N == 0 {
		return Latency{}
	}
	return Latency{
		Mean: h.Mean() / 1e3,
		P50:  h.Quantile(0.5) / 1e3,
		P99:  h.Quantile(0.99) / 1e3,
		P999: h.Quantile(0.999) / 1e3,
		Min:  float64(h.Min) / 1e3,
		Max:  float64(h.Max) / 1e3,
	}
}

// FlowStats is one source-destination pair of a flows pattern over the
// measured window: what the kernel took from the source for that
// destination, what the destination received of it, the share of the
// host link that is (a frame a slot at load 1), and its one-way latency.
type FlowStats struct {
	Src          string  `json:"src"`
	Dst          string  `json:"dst"`
	Sent         uint64  `json:"sent_frames"`
	Received     uint64  `json:"received_frames"`
	Lost         uint64  `json:"lost_frames"`
	Reordered    uint64  `json:"reordered"`     // arrived after a later frame of the pair (a path change, adaptive routing)
	AcceptedLoad float64 `json:"accepted_load"` // fraction of the host link rate
	DeliveredBps float64 `json:"delivered_bps"` // frame bytes received, as bits per second
	Latency      Latency `json:"latency_us"`
}

// flowPairs are a flows pattern's (source, destination) host indexes,
// each pair once; nil for every other pattern.
func (e *Engine) flowPairs(cfg *Config) ([][2]int, error) {
	spec := cfg.Pattern.Spec()
	if spec.Kind != pat.Flows {
		return nil, nil
	}
	id := make(map[string]int, len(e.hosts))
	for i, h := range e.hosts {
		id[h.Name] = i
	}
	var out [][2]int
	seen := map[[2]int]bool{}
	for _, f := range spec.Flows {
		s, okS := id[f.Src]
		d, okD := id[f.Dst]
		if !okS || !okD {
			return nil, fmt.Errorf("flow %s -> %s: no such host", f.Src, f.Dst)
		}
		if p := [2]int{s, d}; !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// flowStats reads each pair's counts off its source and its sink.
func (e *Engine) flowStats(cfg *Config, pairs [][2]int, srcs []*source, sinks []*sink) []FlowStats {
	capacity := float64(cfg.Duration) / float64(cfg.slotNs())
	var out []FlowStats
	for _, p := range pairs {
		f := &sinks[p[1]].flows[p[0]]
		st := FlowStats{Src: e.hosts[p[0]].Name, Dst: e.hosts[p[1]].Name, Sent: srcs[p[0]].sentTo[int32(p[1])], Received: f.recv, Reordered: f.reordered}
		st.Lost = st.Sent - min(st.Received, st.Sent)
		st.AcceptedLoad = float64(st.Received) / capacity
		st.DeliveredBps = float64(st.Received) * float64(cfg.FrameSize) * 8 / cfg.Duration.Seconds()
		if f.hist != nil {
			st.Latency = latencyOf(f.hist)
		}
		out = append(out, st)
	}
	return out
}

func (e *Engine) result(cfg *Config, srcs []*source, sinks []*sink, drops []uint64, late LateBins) *Result {
	n := len(e.hosts)
	in := counts{src: make([]srcStats, n), snk: make([]sinkStats, n), recvFrom: make([]uint64, n), drops: drops,
		lat: make([]Latency, n), hist: &pat.Histogram{}, late: late}
	for i, k := range sinks {
		in.src[i], in.snk[i] = srcs[i].stats, k.st
		in.lat[i] = latencyOf(&k.hist)
		in.hist.Merge(&k.hist)
		for src := range k.flows {
			in.recvFrom[src] += k.flows[src].recv
		}
	}
	return buildResult(e.hosts, cfg, &in)
}

// counts are a measurement's counts by host, wherever they were taken
// (one engine, or every machine's part of one: MergeParts).
type counts struct {
	src      []srcStats
	snk      []sinkStats
	recvFrom []uint64 // frames received from each host, anywhere
	drops    []uint64
	lat      []Latency      // each host's, as a destination
	hist     *pat.Histogram // every frame's
	late     LateBins       // the senders' lateness over the window
}

// buildResult reports a measurement from its counts.
func buildResult(hosts []Host, cfg *Config, in *counts) *Result {
	n := len(hosts)
	r := &Result{
		Pattern: cfg.Pattern.Spec().String(), Load: cfg.Load, Seed: cfg.Seed, PatternSeed: cfg.Pattern.Seed(),
		FrameSize: cfg.FrameSize, RateBps: cfg.RateBps,
		Warmup: cfg.Warmup, Duration: cfg.Duration, Drain: cfg.Drain,
		Hosts:   make([]HostStats, n),
		Latency: in.hist,
	}
	// Frames a host link carries in the window at load 1.
	capacity := float64(cfg.Duration) / float64(cfg.slotNs())
	recvFrom, drops := in.recvFrom, in.drops
	var late, emitted uint64
	var lateSum float64
	var lateMax int64
	bySwitch := map[int]int{}
	for i := range r.Hosts {
		s, k := in.src[i], in.snk[i]
		hs := &r.Hosts[i]
		hs.Host, hs.Switch, hs.Group = hosts[i].Name, hosts[i].Switch, hosts[i].Group
		hs.Offered, hs.Sent = s.offered, s.sent
		hs.Lost = s.sent - min(recvFrom[i], s.sent)
		hs.Received, hs.Duplicates, hs.Reordered = k.received, k.duplicates, k.reordered
		hs.OfferedLoad = float64(s.offered) / capacity
		hs.AcceptedLoad = float64(k.received) / capacity
		if s.sent > 0 {
			hs.Loss = float64(hs.Lost) / float64(s.sent)
		}
		hs.Latency = in.lat[i]

		a := &r.Aggregate
		a.Offered += hs.Offered
		a.Sent += hs.Sent
		a.Received += hs.Received
		a.Lost += hs.Lost
		a.Duplicates += hs.Duplicates
		a.Reordered += hs.Reordered

		f := &r.Fidelity
		late += s.late
		lateSum += s.lateSum
		emitted += s.offered - s.unsent - s.rpDropped // the frames that reached a send
		lateMax = max(lateMax, s.lateMax)
		f.Unsent += s.unsent
		f.UnsentEstimated = f.UnsentEstimated || s.unsentEstimated
		f.SendNoBufs += s.errNoBufs
		f.SendNoBufsLate += s.errNoBufsLate
		f.SendAgain += s.errAgain
		f.SendOther += s.errOther
		f.RxDrops += drops[i]
		f.Stray += k.stray
		f.Malformed += k.malformed
		f.Foreign += k.foreign
		f.StaleRun += k.staleRun
		f.FarReordered += k.farBehind
		f.Unclocked += k.unclocked

		j, ok := bySwitch[hs.Switch]
		if !ok {
			j = len(r.Switches)
			bySwitch[hs.Switch] = j
			r.Switches = append(r.Switches, SwitchLoad{Switch: hs.Switch})
		}
		sw := &r.Switches[j]
		sw.Hosts++
		sw.InjectedBps += float64(s.sent) * float64(cfg.FrameSize) * 8 / cfg.Duration.Seconds()
		sw.OfferedLoad += hs.OfferedLoad
		sw.AcceptedLoad += hs.AcceptedLoad
		sw.DeliveredLoad += float64(recvFrom[i]) / capacity
	}
	a := &r.Aggregate
	a.OfferedLoad = float64(a.Offered) / capacity / float64(n)
	a.AcceptedLoad = float64(a.Received) / capacity / float64(n)
	if a.Sent > 0 {
		a.Loss = float64(a.Lost) / float64(a.Sent)
	}
	a.Latency = latencyOf(r.Latency)
	r.Fidelity.LateFrames = late
	if emitted > 0 {
		r.Fidelity.MeanLatenessUs = lateSum / float64(emitted) / 1e3
	}
	r.Fidelity.MaxLatenessUs = float64(lateMax) / 1e3
	r.Fidelity.SlotUs = float64(cfg.slotNs()) / 1e3
	if len(in.late.SumNs) > 0 {
		r.Fidelity.LateBinS = time.Duration(lateBinNs(cfg)).Seconds()
		r.Fidelity.LateBinsUs = in.late.means()
	}
	return r
}
