package qcn

import "math"

// ReactionPoint is a QCN reaction point's rate limiter for one flow
// (802.1Qau's RP; seed 003: "Use rate limiters (RL) at the edge to shape
// flows causing congestion … Reduce rate limit multiplicatively when
// F_b < 0 — Autonomously increase rate limit based on byte counting or
// timer … Release rate limiter when limit returns to full link
// capacity"). The constants are the standard's as the spec records them
// (../shared/specs/seeds-002-004-power.md §B.2.5): Gd = 1/128, a byte
// counter of 150 KB (75 KB once past fast recovery), 5 fast-recovery
// stages, active increase by 0.05% of the line rate.
//
// The increases count the bytes the flow sends (the spec's default), or,
// with Timed, the time that passes: one period is the time the line rate
// takes to carry a byte counter's worth (12 ms of 150 KB at 100 Mbit/s),
// so the two clocks agree for a flow at the line rate and need no time
// scale of their own. A counted flow recovers at its own pace, a timed
// one at the line's: on seed 003's topology 3 (qcn.Model, seeds 1-5)
// the flow behind two congestion points keeps 0.09-0.19 of its link by
// bytes and 0.35-0.36 by time. 802.1Qau runs both (a 15 ms timer beside
// the byte counter at 10 Gb/s, a hundred of its periods); in the model
// that timer (with hyper-active increase) moved flow 2's share by 0.02 or
// less, so it is not offered.
//
// Rates are bits per second; bytes are the flow's frames as sent.
type ReactionPoint struct {
	Line float64 // the line rate: the limiter starts and ends there
	// CR is the current rate, TR the target rate.
	CR, TR float64
	// Stage counts byte-counter (or timer) periods since the last
	// decrease.
	Stage int
	// Timed: the periods run on the time Elapse reports, not on the
	// bytes Sent counts.
	Timed bool
	// counted is the bytes sent (Timed: the line's bytes elapsed) in the
	// current period; clock the line's bytes below a whole one.
	counted int
	clock   float64
}

// RP constants (spec §B.2.5).
const (
	Gd                 = 1.0 / 128
	ByteCounter        = 150_000
	FastRecoveryStages = 5
	AIShare            = 0.0005 // R_AI as a share of the line rate
	// MinShare is the floor of the current rate, a share of the line
	// rate: 802.1Qau's minimum rate (10 Mb/s of 10 Gb/s in its reference
	// code). Without one, a queue that stays full sends CNMs until the
	// rate underflows: a frame's time at it overflowed the traffic
	// engine's clock, and the limiter let everything through (a 400 s
	// snoop-ar run lost 9% of its frames that way after 355 s).
	MinShare = 0.001
)

// NewReactionPoint starts a limiter at the line rate, as the first CNM
// of a flow does.
func NewReactionPoint(line float64) *ReactionPoint {
	return &ReactionPoint{Line: line, CR: line, TR: line}
}

// CNM applies a notification of quantized feedback fbq (1..63): the
// target becomes the current rate, which falls by Gd·fbq (at most 49%),
// and the byte counter starts over.
func (r *ReactionPoint) CNM(fbq uint8) {
	if fbq == 0 {
		return
	}
	r.TR = r.CR
	r.CR = max(r.CR*(1-Gd*float64(min(fbq, MaxFbq))), MinShare*r.Line)
	r.Stage, r.counted, r.clock = 0, 0, 0
}

// Sent counts n bytes sent on the flow and runs the byte counter's
// increases (Timed: none). It reports whether the limiter is released (CR
// back at the line rate): the flow then goes unlimited and the limiter is
// dropped.
func (r *ReactionPoint) Sent(n int) (released bool) {
	if !r.Timed {
		r.counted += n
	}
	return r.increase()
}

// Elapse runs a Timed limiter's clock on by the time the line rate takes
// to carry lineBytes, and its increases; it reports, as Sent does,
// whether the limiter is released. A limiter counting bytes ignores it.
func (r *ReactionPoint) Elapse(lineBytes float64) (released bool) {
	if r.Timed && lineBytes > 0 {
		r.clock += lineBytes
		whole := math.Floor(r.clock)
		r.counted += int(whole)
		r.clock -= whole
	}
	return r.increase()
}

// increase runs the periods counted so far.
func (r *ReactionPoint) increase() (released bool) {
	for {
		period := ByteCounter
		if r.Stage >= FastRecoveryStages {
			period = ByteCounter / 2
		}
		// A timed limiter back at the line rate stops there: after a
		// long quiet spell its clock holds many periods that would only
		// raise a target no longer used.
		if r.counted < period || r.Timed && r.CR >= r.Line {
			break
		}
		r.counted -= period
		r.Stage++
		if r.Stage > FastRecoveryStages {
			r.TR += AIShare * r.Line
		}
		r.CR = (r.CR + r.TR) / 2
	}
	if r.CR >= r.Line {
		r.CR = r.Line
		return true
	}
	return false
}
