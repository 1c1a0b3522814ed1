package condition

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/emulator/addressing"
	"github.com/ethfab/ethfab/emulator/controller"
	"github.com/ethfab/ethfab/emulator/traffic"
)

// Reaction time (issue 6.3): from the poll that first sees a queue above
// XOFF to the first frame that leaves the switch on the alternative path,
// and from the poll that sees it below XON to the first frame that leaves
// on the default port again.
//
// The observable is the wire: a tap (tap.go) on every inter-switch port of
// the switch, enabled while one of its flips is measured, sees each
// traffic frame as the port's shaper releases it, with the kernel's
// timestamp. A frame belongs to a flip of port P when the switch's
// conditions decide it (its source enters the switch on a port whose
// frames load the condition bitmask) and its default rule is conditional
// on P; it reacted when it leaves on another port after P paused, or on P
// after P resumed.
//
// A frame forwarded before the flip must never be taken for a reaction:
// one diverted in an earlier pause may still sit in the alternative
// port's queue, and the datapath may have sent one the old way after the
// FlowMod, until it revalidated that source's flow. So a frame only counts
// if its host sent it (the EFTR send time) after the FlowMod was written:
// it cannot have been forwarded before. This makes the figure an upper
// bound: it includes waiting for the next frame of a source the flip
// concerns, and frames already on their way at the flip are not credited.
//
// Resolution and bias. The onset lies up to one poll cycle after the true
// crossing (Counters.CycleTime/Cycles), which biases the delay low by at
// most that; the frame's time is exact, but includes waiting for the next
// frame of a source the flip concerns and that frame's time in the new
// port's queue, which bias it high: at 2 Mbit/s a 1000-byte frame takes
// 4 ms to send.

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
	Resume bool `json:"resume"`
	// Upstream: the port was paused (or released) by the switch it
	// feeds, not by its own queue.
	Upstream bool      `json:"upstream,omitempty"`
	Onset    time.Time `json:"onset"` // the poll that saw the queue cross
	Sent     time.Time `json:"sent"`  // the FlowMod was written
	// Applied: the switch's barrier reply arrived, its flow table changed
	// (zero if that came after the frame, or never).
	Applied time.Time `json:"applied"`
	// Seen: the first frame on the new path left the port (kernel time);
	// FrameSent: its host sent it. Reacted only.
	Seen      time.Time `json:"seen"`
	FrameSent time.Time `json:"frame_sent"`
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
	upstream        map[*port]bool // changed by the switch downstream
}

type probe struct {
	r     Reaction
	p     *port
	flips uint64 // p.flips right after the flip measured
	// minSend: the EFTR send time (CLOCK_MONOTONIC ns) a frame must have:
	// just before the FlowMod.
	minSend int64
	// Set under the switch's pmu, then done is closed: by the tap that saw
	// the frame, or by a later flip of the same port (superseded).
	fired      bool
	superseded bool
	seen       time.Time
	firstSend  int64
	done       chan struct{}
	// A CLOCK_MONOTONIC reading and the wall time taken with it, to put
	// the frame's send time on the wall clock.
	mono int64
	wall time.Time
}

// flip sends the switch's new mask and starts measuring each port's
// reaction. Called with smu held.
func (m *Monitor) flip(s *sw, f *flip) {
	if m.o.NoReaction || len(s.taps) == 0 {
		m.flowMod(s, false)
		return
	}
	now, wall := monoNow(), time.Now()
	var probes []*probe
	s.pmu.Lock()
	add := func(p *port, resume bool) {
		// The port's earlier flip is over: what its frames do now is this
		// flip's doing.
		for _, old := range s.probes {
			if old.p == p && !old.fired {
				old.fired, old.superseded = true, true
				close(old.done)
			}
		}
		pr := &probe{r: Reaction{Switch: s.name, Port: p.num, Resume: resume, Upstream: f.upstream[p], Onset: f.onset},
			p: p, flips: p.flips.Load(), done: make(chan struct{}), mono: now, wall: wall, minSend: now}
		probes = append(probes, pr)
		s.probes = append(s.probes, pr)
	}
	for _, p := range f.paused {
		add(p, false)
	}
	for _, p := range f.resumed {
		add(p, true)
	}
	if !s.tapsOpen {
		// Queues rose faster than the taps were opened: open them now,
		// before the FlowMod, so no frame on the new path goes unseen.
		m.openTaps(s)
	}
	s.pmu.Unlock()
	acked, err := s.of.setMaskAcked(s.mask)
	m.countFlowMod(err)
	sent := time.Now()
	for _, pr := range probes {
		pr.r.Sent = sent
		m.probes.Add(1)
		go m.await(m.pctx, s, pr, acked)
	}
}

// openTaps opens a switch's closed taps and starts their readers. Called
// with pmu held.
func (m *Monitor) openTaps(s *sw) {
	if s.closed {
		return
	}
	for _, t := range s.taps {
		if t.f != nil {
			continue
		}
		if err := t.open(); err != nil {
			m.countTapErr()
			continue
		}
		m.readers.Add(1)
		go m.listen(t, t.rc)
	}
	s.tapsOpen = true
}

// closeTaps closes a switch's taps unless a flip is being measured there;
// the closing itself (an RCU grace period each) happens in the
// background. Called with pmu held.
func (m *Monitor) closeTaps(s *sw) {
	if len(s.probes) > 0 || !s.tapsOpen {
		return
	}
	var fs []*os.File
	for _, t := range s.taps {
		if t.f != nil {
			fs = append(fs, t.f)
			t.f, t.rc = nil, nil
		}
	}
	s.tapsOpen = false
	for _, f := range fs {
		go f.Close()
	}
}

// setTaps opens (on) or closes every switch's taps; Run calls it, in the
// background, when queues warm up or have long been cold.
func (m *Monitor) setTaps(on bool) {
	var wg sync.WaitGroup
	for _, s := range m.switches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.pmu.Lock()
			defer s.pmu.Unlock()
			if on {
				m.openTaps(s)
			} else {
				m.closeTaps(s)
			}
		}()
	}
	wg.Wait()
}

func (m *Monitor) countTapErr() {
	m.mu.Lock()
	m.c.TapErrs++
	m.mu.Unlock()
}

// await waits for a probe's frame, the react limit or the monitor's end,
// noting when the switch acknowledged the FlowMod (acked: nil if it could
// not be sent).
func (m *Monitor) await(ctx context.Context, s *sw, pr *probe, acked <-chan struct{}) {
	defer m.probes.Done()
	r := pr.r
	timer := time.NewTimer(time.Until(r.Onset.Add(m.o.ReactLimit)))
	defer timer.Stop()
	var o Outcome
	var why string
wait:
	for {
		select {
		case <-acked:
			r.Applied, acked = time.Now(), nil
		case <-pr.done:
			if pr.superseded {
				o, why = NoFrame, "the port flipped again before a frame took the new path"
			} else {
				o, r.Seen = Reacted, pr.seen
				r.FrameSent = pr.wall.Add(time.Duration(pr.firstSend - pr.mono))
			}
			break wait
		case <-timer.C:
			o, why = NoFrame, fmt.Sprintf("no frame within %v", m.o.ReactLimit)
			break wait
		case <-ctx.Done():
			o, why = Unmeasured, "the monitor stopped first"
			break wait
		}
	}
	s.pmu.Lock()
	if o != Reacted && !pr.fired {
		pr.fired = true
		close(pr.done)
	}
	for i, x := range s.probes {
		if x == pr {
			s.probes = append(s.probes[:i], s.probes[i+1:]...)
			break
		}
	}
	s.pmu.Unlock()
	r.Outcome, r.Why = o, why
	m.recordReaction(r)
}

// listen reads one tap's socket (rc) until it is closed, firing the
// probes its frames answer.
func (m *Monitor) listen(t *tap, rc syscall.RawConn) {
	defer m.readers.Done()
	buf := make([]byte, tapSnap)
	oob := make([]byte, 128)
	var h traffic.Header
	s := t.port.sw
	for {
		n, ts, err := read(rc, buf, oob)
		if err != nil {
			return // closed
		}
		if traffic.Decode(buf[:n], &h) != nil {
			continue
		}
		in, ok := s.ingress[h.Src]
		if !ok {
			continue // not a frame the switch's conditions decide
		}
		rule := s.table.Lookup(in, addressing.MACFromBytes(h.Dst[:]), traffic.EtherType)
		if rule == nil || rule.Kind != controller.KindConditional {
			continue
		}
		s.pmu.Lock()
		for _, pr := range s.probes {
			if pr.fired || int(rule.Cond) != pr.p.num || pr.r.Resume != (t.port.num == pr.p.num) ||
				int64(h.SendNs) < pr.minSend || pr.p.flips.Load() != pr.flips || ts.Before(pr.r.Onset) {
				continue
			}
			pr.fired, pr.seen, pr.firstSend = true, ts, int64(h.SendNs)
			close(pr.done)
		}
		s.pmu.Unlock()
	}
}

func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
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

// ProbeResolution is the onset's resolution: the mean poll cycle, at
// least Interval. The frame's time is the kernel's.
func (m *Monitor) ProbeResolution() time.Duration {
	c := m.Counters()
	onset := m.o.Interval
	if c.Cycles > 0 {
		onset = max(onset, c.CycleTime/time.Duration(c.Cycles))
	}
	return onset
}

// ReactLimit is how long a prober waits for a frame on the new path.
func (m *Monitor) ReactLimit() time.Duration { return m.o.ReactLimit }
