// Package qcnswitch is QCN-Switch (seed 004): a switch's conditional
// rules are enabled with a probability per transit port instead of a
// PAUSE flag, and the switch itself lowers a port's probability on the
// QCN congestion notifications (CNMs) it intercepts for its own hosts,
// and raises it again while the port sends without one. Three variants:
// base; + source processing (the switch also reacts to the CNMs its own
// congestion points send); + feedback comparison (a CNM lowers P only by
// how much its Fb exceeds the mean of the ports' last ones). Complete is
// both (FOGSim's COMPLETE).
//
// The formulas and their provenance are in
// ../shared/specs/seeds-002-004-power.md §A.1, A.2 and A.4.2. This
// package is pure: the condition monitor (emulator/condition) feeds it
// what it reads from the fabric and writes the bitmask it returns.
package qcnswitch

import (
	"fmt"
	"math"

	"github.com/ethfab/ethfab/qcn"
)

// Variant is which reactions a switch runs.
type Variant string

const (
	Base       Variant = "base"
	Source     Variant = "source"
	Comparison Variant = "comparison"
	Complete   Variant = "complete" // source and comparison
)

// source: the switch processes its own congestion points' CNMs.
func (v Variant) source() bool { return v == Source || v == Complete }

// compare: a CNM's Fb is compared with the mean of the ports' last ones.
func (v Variant) compare() bool { return v == Comparison || v == Complete }

// Params are a switch's reaction parameters (scenario routing.qcn).
type Params struct {
	Variant Variant
	Lf      float64 // decrease gain: P *= 1 - Lf*Fbq (1/128)
	Ai      float64 // increase, percentage points
	PCl     int     // frames sent through a port without a CNM before P += Ai
	PMin    float64 // floor of P, percent
}

// Cause is why a probability changed.
type Cause string

const (
	CauseCNM      Cause = "cnm"      // a CNM intercepted on the port lowered P
	CauseSource   Cause = "source"   // the switch's own congestion point's CNM (+ source)
	CauseIncrease Cause = "increase" // PCl frames sent without a CNM
	CauseCompare  Cause = "compare"  // a CNM no worse than the ports' mean (+ comparison)
)

// Change is one probability update.
type Change struct {
	Port     int // the transit port's number
	Cause    Cause
	Fbq      uint8   // the CNM's (0 for increase)
	FbAvg    float64 // + comparison: the ports' mean last Fb, before this CNM
	Old, New float64 // P, percent
}

// Switch is one switch's per-port probabilities of routing minimally.
type Switch struct {
	p      Params
	ports  []int       // transit ports in condition-bit order
	bit    map[int]int // port number -> index in ports
	prob   []float64   // P, percent
	tx     []int       // frames sent since the last CNM or increase
	lastFb []uint8     // + comparison: each port's last CNM's Fbq (0 until one)
}

// New starts a switch whose transit ports are ports, in the order of
// their condition bits (controller.CondPorts): every P at 100.
func New(p Params, ports []int) (*Switch, error) {
	switch p.Variant {
	case Base, Source, Comparison, Complete:
	default:
		return nil, fmt.Errorf("unknown QCN-Switch variant %q", p.Variant)
	}
	if p.PCl < 1 {
		return nil, fmt.Errorf("pcl %d: must be at least one frame", p.PCl)
	}
	if len(ports) > 64 {
		return nil, fmt.Errorf("%d transit ports: the condition bitmask holds 64", len(ports))
	}
	s := &Switch{p: p, ports: ports, bit: map[int]int{}, prob: make([]float64, len(ports)),
		tx: make([]int, len(ports)), lastFb: make([]uint8, len(ports))}
	for i, n := range ports {
		s.bit[n] = i
		s.prob[i] = 100
	}
	return s, nil
}

// Ports are the transit ports, in bit order.
func (s *Switch) Ports() []int { return s.ports }

// P is a port's probability of routing minimally, percent (-1: not a
// transit port).
func (s *Switch) P(port int) float64 {
	i, ok := s.bit[port]
	if !ok {
		return -1
	}
	return s.prob[i]
}

// set changes P within [PMin, 100] and says what changed.
func (s *Switch) set(i int, v float64, c Change) (Change, bool) {
	v = min(100, max(s.p.PMin, v))
	c.Port, c.Old, c.New = s.ports[i], s.prob[i], v
	s.prob[i] = v
	return c, c.Old != c.New
}

// CNM applies a CNM with feedback fbq intercepted on port (the port it
// arrived on, the transit port towards its congestion point). The PCl
// counter restarts either way. False when P did not change (or port is
// not a transit port).
func (s *Switch) CNM(port int, fbq uint8) (Change, bool) {
	i, ok := s.bit[port]
	if !ok {
		return Change{}, false
	}
	s.tx[i] = 0
	if !s.p.Variant.compare() {
		return s.set(i, s.prob[i]*qcn.Decrease(fbq, s.p.Lf), Change{Cause: CauseCNM, Fbq: fbq})
	}
	// Fb_avg = sum of the transit ports' last Fb / (a-1+h), never-notified
	// ports counting 0 (FOGSim); the new Fb is compared with the mean
	// before it is stored.
	s.lastFb[i] = fbq
	sum := 0.0
	for _, f := range s.lastFb {
		sum += float64(f)
	}
	avg := sum / float64(len(s.lastFb))
	c := Change{Cause: CauseCompare, Fbq: fbq, FbAvg: avg}
	if float64(fbq) > avg {
		c.Cause = CauseCNM
		return s.set(i, s.prob[i]*(1-s.p.Lf*(float64(fbq)-avg)), c)
	}
	return s.set(i, s.prob[i]+s.p.Ai, c)
}

// OwnCNM applies, under + source, a CNM the switch's own congestion point
// sent about a victim the switch forwarded minimally out of port (the
// minimal port towards the victim's destination, another group's).
func (s *Switch) OwnCNM(port int, fbq uint8) (Change, bool) {
	i, ok := s.bit[port]
	if !ok || !s.p.Variant.source() {
		return Change{}, false
	}
	return s.set(i, s.prob[i]*qcn.Decrease(fbq, s.p.Lf), Change{Cause: CauseSource, Fbq: fbq})
}

// Sent counts n frames the port transmitted (injected or transit: FOGSim
// counts every frame forwarded through it); every PCl of them without a
// CNM raise P by Ai.
func (s *Switch) Sent(port, n int) []Change {
	i, ok := s.bit[port]
	if !ok || n <= 0 {
		return nil
	}
	s.tx[i] += n
	var out []Change
	for s.tx[i] >= s.p.PCl {
		s.tx[i] -= s.p.PCl
		if c, ok := s.set(i, s.prob[i]+s.p.Ai, Change{Cause: CauseIncrease}); ok {
			out = append(out, c)
		}
	}
	return out
}

// Mask is the condition bitmask for a draw N in 1..100: a port's
// conditional rules are disabled (its bit set) when N exceeds its P,
// truncated to an integer (FOGSim: misroute iff rand()%100+1 > P).
func (s *Switch) Mask(n int) uint64 {
	var m uint64
	for i, p := range s.prob {
		if n > int(math.Floor(p)) {
			m |= 1 << i
		}
	}
	return m
}

// Intermediate says whether some port's P is strictly between 0 and 100,
// so that draws can change the mask.
func (s *Switch) Intermediate() bool {
	for _, p := range s.prob {
		if int(math.Floor(p)) > 0 && p < 100 {
			return true
		}
	}
	return false
}
