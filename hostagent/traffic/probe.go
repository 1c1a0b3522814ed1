package traffic

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/quantile"
	pat "github.com/ethfab/ethfab/traffic"
)

// Probes are seed 002's measurement of an interruption: "ping frame ...
// at every 100 mseconds" between chosen hosts while links change. Every
// pair gets one small frame per tick, the tick's number its sequence
// number, beside the run's traffic and through the same fabric (the same
// EtherType, so the same routes). A run's probes go from its start until
// the measurement window ends, warm-up included: link events are timed
// from the start too.
type Probes struct {
	// Interval is the time between a pair's probes (10 ms or more).
	Interval time.Duration
	// Size is the probe's frame length in bytes (default 64, the paper's
	// ping).
	Size int
	// Pairs are (source, destination) host indices.
	Pairs [][2]int
}

// DefaultProbeSize is a ping's 64-byte frame.
const DefaultProbeSize = 64

// MinProbeInterval bounds how often a pair is probed: each probe is a
// write(2) of its own, some 5 µs of this machine's time.
const MinProbeInterval = 10 * time.Millisecond

func (p *Probes) check(n int) error {
	if p.Interval < MinProbeInterval {
		return fmt.Errorf("probe interval %v is under %v", p.Interval, MinProbeInterval)
	}
	if p.Size == 0 {
		p.Size = DefaultProbeSize
	}
	if p.Size < pat.MinFrameSize || p.Size > pat.MaxFrameSize {
		return fmt.Errorf("probe size %d is not in %d..%d", p.Size, pat.MinFrameSize, pat.MaxFrameSize)
	}
	if len(p.Pairs) == 0 {
		return errors.New("no probe pairs")
	}
	for _, pr := range p.Pairs {
		if pr[0] < 0 || pr[0] >= n || pr[1] < 0 || pr[1] >= n || pr[0] == pr[1] {
			return fmt.Errorf("probe pair %v: want two different hosts of 0..%d", pr, n-1)
		}
	}
	return nil
}

// prober sends a run's probes, one tick at a time.
type prober struct {
	e     *Engine
	p     *Probes
	sched schedule
	run   uint32
	ticks int
	sent  [][]bool // by pair, by tick: the kernel took it
}

func newProber(e *Engine, p *Probes, sched schedule, run uint32) *prober {
	ticks := int((sched.measTo + int64(p.Interval) - 1) / int64(p.Interval))
	pr := &prober{e: e, p: p, sched: sched, run: run, ticks: ticks, sent: make([][]bool, len(p.Pairs))}
	for i := range pr.sent {
		pr.sent[i] = make([]bool, ticks)
	}
	return pr
}

// loop sends every pair's probe at each tick. A tick it reaches late goes
// out late, stamped with its real send time; a probe the kernel refused
// (the host's link queue full) is lost like one the fabric dropped.
func (pr *prober) loop(ctx context.Context) {
	frame := make([]byte, pr.p.Size)
	h := pat.Header{Run: pr.run, Flags: pat.FlagProbe}
	for k := range pr.ticks {
		if wait := int64(k)*int64(pr.p.Interval) - (monoNow() - pr.sched.start); wait > 0 {
			sleep(wait)
		}
		if ctx.Err() != nil {
			return
		}
		for i, p := range pr.p.Pairs {
			s, d := p[0], p[1]
			copy(h.Dst[:], pr.e.hosts[d].MAC)
			copy(h.Src[:], pr.e.hosts[s].MAC)
			h.SrcHost, h.DstHost, h.Seq = uint32(s), uint32(d), uint64(k)
			h.SendNs = uint64(monoNow())
			pat.Encode(frame, &h)
			_, err := unix.Write(pr.e.socks[s].tx.FD(), frame)
			pr.sent[i][k] = err == nil
		}
	}
}

// probeRx is one probe a sink received.
type probeRx struct {
	src   uint32
	seq   uint64
	latNs int64
}

// result gathers the sinks' probes by pair.
func (pr *prober) result(sinks []*sink) *pat.ProbeResult {
	r := &pat.ProbeResult{IntervalMs: float64(pr.p.Interval) / 1e6, FrameSize: pr.p.Size, Ticks: pr.ticks,
		Pairs: make([]pat.ProbePair, len(pr.p.Pairs))}
	index := make(map[[2]int]int, len(pr.p.Pairs))
	for i, p := range pr.p.Pairs {
		index[p] = i
	}
	got := make([][]int64, len(pr.p.Pairs)) // by pair, by tick: latency, -1 not received
	for i := range got {
		got[i] = make([]int64, pr.ticks)
		for k := range got[i] {
			got[i][k] = -1
		}
	}
	for d, k := range sinks {
		for _, rx := range k.probes {
			i, ok := index[[2]int{int(rx.src), d}]
			if !ok || rx.seq >= uint64(pr.ticks) {
				continue // the sink counted it stray already
			}
			if got[i][rx.seq] >= 0 {
				r.Duplicates++
				continue
			}
			got[i][rx.seq] = max(rx.latNs, 0)
		}
	}
	interval := pr.p.Interval.Seconds()
	var all []float64
	for i, p := range pr.p.Pairs {
		pp := &r.Pairs[i]
		pp.Src, pp.Dst = pr.e.hosts[p[0]].Name, pr.e.hosts[p[1]].Name
		var lats []float64
		from := -1 // first tick of the outage under way
		for k, lat := range got[i] {
			if pr.sent[i][k] {
				pp.Sent++
			} else {
				pp.Refused++
			}
			if lat >= 0 {
				pp.Received++
				lats = append(lats, float64(lat)/1e3)
				if from >= 0 {
					pp.Outages = append(pp.Outages, pat.ProbeOutage{FromS: float64(from) * interval, ToS: float64(k) * interval, Lost: k - from})
					from = -1
				}
				continue
			}
			pp.Lost++
			if from < 0 {
				from = k
			}
		}
		if from >= 0 {
			pp.Outages = append(pp.Outages, pat.ProbeOutage{FromS: float64(from) * interval, ToS: float64(pr.ticks) * interval, Lost: pr.ticks - from})
		}
		l := latencyOfSamples(lats)
		pp.P50US, pp.MaxUS = l.P50, l.Max
		all = append(all, lats...)
		r.Sent += uint64(pp.Sent)
		r.Received += uint64(pp.Received)
		r.Lost += uint64(pp.Lost)
		r.Refused += uint64(pp.Refused)
		if pp.Lost > 0 {
			r.PairsLosing++
		}
		r.MaxLost = max(r.MaxLost, pp.Lost)
		for _, o := range pp.Outages {
			r.LongestOutageS = max(r.LongestOutageS, o.ToS-o.FromS)
		}
	}
	l := latencyOfSamples(all)
	r.P50US, r.P99US, r.MaxUS = l.P50, l.P99, l.Max
	return r
}

// latencyOfSamples summarizes latencies in µs exactly (a pair's probes
// are a few hundred).
func latencyOfSamples(us []float64) Latency {
	if len(us) == 0 {
		return Latency{}
	}
	s := quantile.Sorted(us)
	var sum float64
	for _, v := range s {
		sum += v
	}
	return Latency{Mean: sum / float64(len(s)), P50: quantile.NearestRank(s, 0.5), P99: quantile.NearestRank(s, 0.99), P999: quantile.NearestRank(s, 0.999),
		Min: s[0], Max: s[len(s)-1]}
}
