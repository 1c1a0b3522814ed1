package condition

import (
	"context"
	"fmt"
	"time"

	"github.com/ethfab/ethfab/emulator/controller"
)

// Reaction time (issue 6.3): from the poll that first sees a queue above
// XOFF to the first frame the switch sends on the alternative path, and
// from the poll that sees it below XON to the first frame back on the
// default. The observable is the switch's own rule counters, read with
// OpenFlow flow stats on the connection that sends the flips:
//
//   - pause: the packet count of the switch's alternative rules (cookie
//     of KindAlternative). They are per injection port, not per paused
//     port, so a pause is only measured when no other port of the switch
//     was paused (otherwise the alternatives were already counting);
//   - resume: the packet count of the conditional defaults that output to
//     the resumed port (cookie of KindConditional, out_port filter), which
//     only frames back on that port can raise.
//
// The baseline is read by a stats request written just before the FlowMod
// on the same connection, so the switch reads it before applying the
// flip. Then the prober asks every StatsPoll until the count rises.
//
// Resolution and bias. The onset lies up to one poll cycle after the true
// crossing (Counters.CycleTime/Cycles); the increase is timed when the
// reply arrives, up to one StatsPoll plus a round trip after the switch
// counted it. OVS (userspace datapath) credits a rule with the first frame
// of a new datapath flow at once but with later hits of an existing
// datapath flow only when a revalidator dumps it; a flow-table change — the
// flip itself — starts a revalidation at once, which credits the frames
// the affected datapath flows carried since the last dump to the rules of
// their new translation. So "first increase" is when the switch's datapath
// runs the new path with traffic on it; in the rare case a datapath flow
// carried frames before the flip and none after, it is credited early.

// Outcome is how a flip's reaction measurement ended.
type Outcome string

const (
	Reacted    Outcome = "reacted"    // a frame took the new path
	NoFrame    Outcome = "no_frame"   // none within ReactLimit, or the port flipped back first
	Unmeasured Outcome = "unmeasured" // the counters could not tell (see Why)
)

// Reaction is one flip's measurement.
type Reaction struct {
	Switch string `json:"switch"`
	Port   int    `json:"port"`
	// Resume: the flip re-enabled the port (back after XON).
	Resume bool      `json:"resume"`
	Onset  time.Time `json:"onset"` // the poll that saw the queue cross
	Sent   time.Time `json:"sent"`  // the FlowMod was written
	Seen   time.Time `json:"seen"`  // the raised count arrived (Reacted only)
	// Outcome and, unless Reacted, why.
	Outcome Outcome `json:"outcome"`
	Why     string  `json:"why,omitempty"`
}

// Delay is Seen − Onset for a reacted flip, else 0.
func (r Reaction) Delay() time.Duration {
	if r.Outcome != Reacted {
		return 0
	}
	return r.Seen.Sub(r.Onset)
}

// flip is what one Poll changed on one switch.
type flip struct {
	onset           time.Time
	before          uint64 // the mask before
	paused, resumed []*port
}

// maxProbes bounds the probers running at once: each costs one stats
// round trip per StatsPoll to its switch.
const maxProbes = 16

type probe struct {
	r      Reaction
	msg    []byte // the baseline request
	ch     <-chan statsResult
	cookie uint64
	out    uint32
	valid  func() (ok bool, flipped bool)
}

// flip sends the switch's new mask, preceded by the baseline stats
// requests of the flips it will measure, and starts their probers. Called
// with smu held.
func (m *Monitor) flip(s *sw, f *flip) {
	if m.o.NoReaction {
		m.flowMod(s, false)
		return
	}
	gen := s.gen.Load() + 1 // the generation flowMod is about to make
	var probes []*probe
	var skipped []Reaction
	measure := func(r Reaction, why string, mk func() *probe) {
		if why == "" && m.active.Load()+int32(len(probes)) >= maxProbes {
			why = fmt.Sprintf("%d probers already running", maxProbes)
		}
		if why != "" {
			r.Outcome, r.Why = Unmeasured, why
			skipped = append(skipped, r)
			return
		}
		pr := mk()
		pr.r = r
		probes = append(probes, pr)
	}
	for i, p := range f.paused {
		why := ""
		switch {
		case f.before != 0:
			why = "another port of the switch was already paused: its alternatives were in use"
		case i > 0:
			why = fmt.Sprintf("paused in the same poll as port %d", f.paused[0].num)
		}
		flips := p.flips.Load()
		measure(Reaction{Switch: s.name, Port: p.num, Onset: f.onset}, why, func() *probe {
			c := controller.KindAlternative.Cookie()
			msg, ch := s.of.statsMsg(c, ofAny)
			return &probe{msg: msg, ch: ch, cookie: c, out: ofAny, valid: func() (bool, bool) {
				return s.gen.Load() == gen, p.flips.Load() != flips
			}}
		})
	}
	for _, p := range f.resumed {
		flips := p.flips.Load()
		measure(Reaction{Switch: s.name, Port: p.num, Resume: true, Onset: f.onset}, "", func() *probe {
			c := controller.KindConditional.Cookie()
			msg, ch := s.of.statsMsg(c, uint32(p.num))
			return &probe{msg: msg, ch: ch, cookie: c, out: uint32(p.num), valid: func() (bool, bool) {
				ok := p.flips.Load() == flips
				return ok, !ok
			}}
		})
	}
	var baseline []byte
	for _, pr := range probes {
		baseline = append(baseline, pr.msg...)
	}
	var werr error
	if len(baseline) > 0 {
		werr = s.of.write(baseline)
	}
	m.flowMod(s, false)
	sent := time.Now()
	for _, r := range skipped {
		r.Sent = sent
		m.recordReaction(r)
	}
	for _, pr := range probes {
		pr.r.Sent = sent
		if werr != nil {
			s.of.finishStats(xidOf(pr.msg), 0, werr)
		}
		m.active.Add(1)
		m.probes.Add(1)
		go m.probe(m.pctx, s, pr)
	}
}

func xidOf(msg []byte) uint32 {
	return uint32(msg[4])<<24 | uint32(msg[5])<<16 | uint32(msg[6])<<8 | uint32(msg[7])
}

// probe polls one switch's counter until it rises above the baseline.
func (m *Monitor) probe(ctx context.Context, s *sw, pr *probe) {
	defer m.probes.Done()
	defer m.active.Add(-1)
	r := pr.r
	done := func(o Outcome, why string) {
		r.Outcome, r.Why = o, why
		m.recordReaction(r)
	}
	base, err := s.of.waitStats(pr.msg, pr.ch, m.o.ReactLimit)
	if err != nil {
		done(Unmeasured, fmt.Sprintf("baseline flow stats: %v", err))
		return
	}
	deadline := r.Onset.Add(m.o.ReactLimit)
	t := time.NewTicker(m.o.StatsPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			done(Unmeasured, "the monitor stopped first")
			return
		case <-t.C:
		}
		n, err := s.of.flowPackets(pr.cookie, pr.out, m.o.ReactLimit)
		now := time.Now()
		if err != nil {
			done(Unmeasured, fmt.Sprintf("flow stats: %v", err))
			return
		}
		// A later flip changes which frames the counters see: the
		// measurement ends there, whatever this reply says.
		if ok, self := pr.valid(); !ok {
			if self {
				done(NoFrame, "the port flipped back before a frame took the new path")
			} else {
				done(Unmeasured, "another port of the switch flipped first")
			}
			return
		}
		if n > base {
			r.Seen = now
			done(Reacted, "")
			return
		}
		if now.After(deadline) {
			done(NoFrame, fmt.Sprintf("no frame within %v", m.o.ReactLimit))
			return
		}
	}
}

func (m *Monitor) recordReaction(r Reaction) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case r.Outcome == Unmeasured:
		m.c.Unmeasured++
	case r.Outcome == Reacted && r.Resume:
		m.c.Recovered++
	case r.Outcome == Reacted:
		m.c.Reacted++
	case r.Resume:
		m.c.Unrecovered++
	default:
		m.c.Undiverted++
	}
	m.rtotal++
	if len(m.reacts) < m.o.LogSize {
		m.reacts = append(m.reacts, r)
		return
	}
	m.reacts[m.rhead] = r
	m.rhead = (m.rhead + 1) % len(m.reacts)
}

// Reactions returns the kept reactions recorded since the from-th (0: all
// kept), oldest first, and the number recorded so far — the next from.
func (m *Monitor) Reactions(from uint64) ([]Reaction, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := m.rtotal - uint64(len(m.reacts)) // oldest kept
	from = min(max(from, first), m.rtotal)
	all := append(append([]Reaction(nil), m.reacts[m.rhead:]...), m.reacts[:m.rhead]...)
	return all[from-first:], m.rtotal
}

// ProbeResolution is the reaction measurement's resolution: the onset's
// (the mean poll cycle, at least Interval) and the stats polling period.
func (m *Monitor) ProbeResolution() (onset, stats time.Duration) {
	c := m.Counters()
	onset = m.o.Interval
	if c.Cycles > 0 {
		onset = max(onset, c.CycleTime/time.Duration(c.Cycles))
	}
	return onset, m.o.StatsPoll
}

// ReactLimit is how long a prober waits for a frame on the new path.
func (m *Monitor) ReactLimit() time.Duration { return m.o.ReactLimit }
