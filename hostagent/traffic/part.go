package traffic

import (
	"context"
	"fmt"

	pat "github.com/ethfab/ethfab/traffic"
)

// Part is one machine's share of a measurement across machines: what its
// hosts sent (as sources) and received (as sinks). Every machine's engine
// runs the same Config (pattern, seed, run number, start) over every
// host, with the others' Remote; a host's arrivals and destinations are
// drawn from its own generator, so each machine sends exactly what the
// one-machine engine would have sent from its hosts. MergeParts makes the
// Result the one engine would have reported.
type Part struct {
	Sources []PartSource `json:"sources"`
	Sinks   []PartSink   `json:"sinks"`
	// Latency merges every sink's histogram here.
	Latency *pat.Histogram `json:"latency"`
	// Late is this machine's senders' lateness over the window.
	Late LateBins `json:"late_bins"`
}

// PartSource is one host's sending side.
type PartSource struct {
	Host            int     `json:"host"`
	Offered         uint64  `json:"offered"`
	Sent            uint64  `json:"sent"`
	NoBufs          uint64  `json:"enobufs"`
	NoBufsLate      uint64  `json:"enobufs_late,omitempty"`
	Again           uint64  `json:"eagain"`
	Other           uint64  `json:"other"`
	Unsent          uint64  `json:"unsent"`
	UnsentEstimated bool    `json:"unsent_estimated,omitempty"`
	Late            uint64  `json:"late"`
	LateSum         float64 `json:"late_sum_ns"`
	LateMax         int64   `json:"late_max_ns"`
}

// PartSink is one host's receiving side.
type PartSink struct {
	Host       int     `json:"host"`
	Received   uint64  `json:"received"`
	Duplicates uint64  `json:"duplicates"`
	Reordered  uint64  `json:"reordered"`
	FarBehind  uint64  `json:"far_behind"`
	Stray      uint64  `json:"stray"`
	StaleRun   uint64  `json:"stale_run"`
	Foreign    uint64  `json:"foreign"`
	Malformed  uint64  `json:"malformed"`
	Unclocked  uint64  `json:"unclocked"`
	RxDrops    uint64  `json:"rx_drops"`
	Latency    Latency `json:"latency_us"`
	// From counts the frames received from each source host that sent
	// any, by host index.
	From map[int]uint64 `json:"from"`
}

// RunPart runs this machine's share of a measurement across machines (see
// Part). The config must set Run and StartNs, the same on every machine.
func (e *Engine) RunPart(ctx context.Context, cfg Config) (*Part, error) {
	if cfg.Run == 0 || cfg.StartNs == 0 {
		return nil, fmt.Errorf("traffic: a measurement across machines needs its run number and start")
	}
	if cfg.Probes != nil || cfg.RP != nil || cfg.Pattern != nil && cfg.Pattern.Spec().Kind == pat.Flows {
		return nil, fmt.Errorf("traffic: probes, reaction points and flows patterns do not run across machines yet")
	}
	m, err := e.measure(ctx, &cfg)
	if m == nil {
		return nil, err
	}
	p := &Part{Latency: &pat.Histogram{}, Late: m.late}
	for i, h := range e.hosts {
		if h.Remote {
			continue
		}
		s, k := m.srcs[i].stats, m.sinks[i]
		p.Sources = append(p.Sources, PartSource{Host: i, Offered: s.offered, Sent: s.sent, NoBufs: s.errNoBufs, NoBufsLate: s.errNoBufsLate, Again: s.errAgain,
			Other: s.errOther, Unsent: s.unsent, UnsentEstimated: s.unsentEstimated, Late: s.late, LateSum: s.lateSum, LateMax: s.lateMax})
		ks := PartSink{Host: i, Received: k.st.received, Duplicates: k.st.duplicates, Reordered: k.st.reordered, FarBehind: k.st.farBehind,
			Stray: k.st.stray, StaleRun: k.st.staleRun, Foreign: k.st.foreign, Malformed: k.st.malformed, Unclocked: k.st.unclocked,
			RxDrops: m.drops[i], Latency: latencyOf(&k.hist), From: map[int]uint64{}}
		for src, f := range k.flows {
			if f.recv > 0 {
				ks.From[src] = f.recv
			}
		}
		p.Sinks = append(p.Sinks, ks)
		p.Latency.Merge(&k.hist)
	}
	return p, err
}

// MergeParts reports a measurement across machines from every machine's
// Part: hosts and cfg are those every engine ran. Each host must be some
// machine's, once.
func MergeParts(hosts []Host, cfg Config, parts []*Part) (*Result, error) {
	if err := cfg.check(len(hosts)); err != nil {
		return nil, fmt.Errorf("traffic: %w", err)
	}
	n := len(hosts)
	in := counts{src: make([]srcStats, n), snk: make([]sinkStats, n), recvFrom: make([]uint64, n), drops: make([]uint64, n),
		lat: make([]Latency, n), hist: &pat.Histogram{}}
	seenSrc, seenSink := make([]bool, n), make([]bool, n)
	bins, noBins := len(lateBinsOf(&cfg).N), 0
	for _, p := range parts {
		for _, s := range p.Sources {
			if s.Host < 0 || s.Host >= n || seenSrc[s.Host] {
				return nil, fmt.Errorf("traffic: host %d sent on no machine or on two", s.Host)
			}
			seenSrc[s.Host] = true
			in.src[s.Host] = srcStats{offered: s.Offered, sent: s.Sent, errNoBufs: s.NoBufs, errNoBufsLate: s.NoBufsLate, errAgain: s.Again, errOther: s.Other, unsent: s.Unsent,
				unsentEstimated: s.UnsentEstimated, late: s.Late, lateSum: s.LateSum, lateMax: s.LateMax}
		}
		for _, k := range p.Sinks {
			if k.Host < 0 || k.Host >= n || seenSink[k.Host] {
				return nil, fmt.Errorf("traffic: host %d received on no machine or on two", k.Host)
			}
			seenSink[k.Host] = true
			in.snk[k.Host] = sinkStats{received: k.Received, duplicates: k.Duplicates, reordered: k.Reordered, farBehind: k.FarBehind,
				stray: k.Stray, staleRun: k.StaleRun, foreign: k.Foreign, malformed: k.Malformed, unclocked: k.Unclocked}
			in.drops[k.Host], in.lat[k.Host] = k.RxDrops, k.Latency
			for src, c := range k.From {
				if src < 0 || src >= n {
					return nil, fmt.Errorf("traffic: host %d received from host %d of %d", k.Host, src, n)
				}
				in.recvFrom[src] += c
			}
		}
		if p.Latency != nil {
			in.hist.Merge(p.Latency)
		}
		if len(p.Late.N) == 0 {
			noBins++
		} else if err := in.late.add(p.Late, bins); err != nil {
			return nil, fmt.Errorf("traffic: %w", err)
		}
	}
	if noBins > 0 {
		in.late = LateBins{} // a part from an older worker: no series rather than part of one
	}
	for i := range hosts {
		if !seenSrc[i] || !seenSink[i] {
			return nil, fmt.Errorf("traffic: host %s is on no machine", hosts[i].Name)
		}
	}
	return buildResult(hosts, &cfg, &in), nil
}
