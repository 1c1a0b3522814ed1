package qcn

import (
	"math"
	"testing"
)

// A CNM cuts the rate by Gd·Fbq and makes the old rate the target; each
// 150 KB sent halves the gap (fast recovery), after five stages the
// target climbs by R_AI every 75 KB, and the limiter is released once the
// rate is back at the line rate.
func TestReactionPoint(t *testing.T) {
	const line = 20e6
	r := NewReactionPoint(line)
	r.CNM(63)
	if want := line * (1 - 63.0/128); math.Abs(r.CR-want) > 1e-6 || r.TR != line {
		t.Fatalf("after Fbq 63: CR %.0f TR %.0f, want %.0f and the line rate", r.CR, r.TR, want)
	}
	r.CNM(0) // no feedback: nothing
	cut := r.CR
	if r.Sent(ByteCounter - 1) {
		t.Fatal("released before a byte-counter period")
	}
	if r.CR != cut {
		t.Fatalf("CR moved within the first period: %.0f", r.CR)
	}
	r.Sent(1)
	if want := (cut + line) / 2; r.Stage != 1 || math.Abs(r.CR-want) > 1e-6 {
		t.Fatalf("after one period: stage %d CR %.0f, want 1 and %.0f", r.Stage, r.CR, want)
	}
	r.Sent(4 * ByteCounter)
	gap := line - r.CR
	if want := (line - cut) / 32; r.Stage != 5 || math.Abs(gap-want) > 1e-3 {
		t.Fatalf("after fast recovery: stage %d gap %.1f, want 5 and %.1f", r.Stage, gap, want)
	}
	if r.TR != line {
		t.Fatalf("fast recovery moved the target: %.0f", r.TR)
	}
	r.Sent(ByteCounter / 2)
	if r.Stage != 6 || math.Abs(r.TR-(line+AIShare*line)) > 1e-6 {
		t.Fatalf("first active increase: stage %d TR %.0f", r.Stage, r.TR)
	}
	// It is released within a few more periods, at the line rate.
	for i := 0; i < 20; i++ {
		if r.Sent(ByteCounter / 2) {
			if r.CR != line {
				t.Fatalf("released at CR %.0f", r.CR)
			}
			return
		}
	}
	t.Fatalf("not released: CR %.0f TR %.0f", r.CR, r.TR)
}

// A second CNM during recovery cuts from the rate reached and restarts
// the counter.
func TestReactionPointCutDuringRecovery(t *testing.T) {
	r := NewReactionPoint(100e6)
	r.CNM(32)
	r.Sent(2 * ByteCounter)
	before := r.CR
	r.CNM(16)
	if r.TR != before || math.Abs(r.CR-before*(1-16.0/128)) > 1e-6 || r.Stage != 0 {
		t.Fatalf("second cut: CR %.0f TR %.0f stage %d (was %.0f)", r.CR, r.TR, r.Stage, before)
	}
}

// A queue that stays full sends CNMs without end: the rate stops at the
// floor, a thousandth of the line, and climbs from there once fast
// recovery (towards a target at the floor too) is over.
func TestReactionPointFloor(t *testing.T) {
	r := NewReactionPoint(50e6)
	for range 1000 {
		r.CNM(MaxFbq)
	}
	if r.CR != MinShare*50e6 || r.TR != r.CR {
		t.Fatalf("after 1000 CNMs: CR %g TR %g, want the floor %g", r.CR, r.TR, MinShare*50e6)
	}
	r.Sent(FastRecoveryStages*ByteCounter + ByteCounter/2)
	if r.CR <= MinShare*50e6 {
		t.Fatalf("no recovery from the floor: CR %g", r.CR)
	}
}

// A timed limiter recovers on the time that passes, whatever the flow
// sends: the same periods as the byte counter's at the line rate, fed in
// pieces that need not be whole bytes; a CNM restarts the clock.
func TestReactionPointTimed(t *testing.T) {
	bytes := NewReactionPoint(10e6)
	timed := NewReactionPoint(10e6)
	timed.Timed = true
	for _, r := range []*ReactionPoint{bytes, timed} {
		r.CNM(40)
	}
	if timed.Sent(10 * ByteCounter) {
		t.Fatal("a timed limiter released by bytes sent")
	}
	if timed.Stage != 0 {
		t.Fatalf("a timed limiter counted bytes: stage %d", timed.Stage)
	}
	if bytes.Elapse(10 * ByteCounter) {
		t.Fatal("a byte-counting limiter released by time")
	}
	// Thirds of a byte: 3·ByteCounter of them make one period, not a
	// byte sooner.
	for range 3*ByteCounter - 1 {
		timed.Elapse(1.0 / 3)
	}
	if timed.Stage != 0 {
		t.Fatalf("a period ran a third of a byte early: stage %d", timed.Stage)
	}
	timed.Elapse(1.0/3 + 1e-9)
	if timed.Stage != 1 {
		t.Fatalf("after a period's time: stage %d, want 1", timed.Stage)
	}
	bytes.Sent(ByteCounter)
	if bytes.Stage != 1 || math.Abs(bytes.CR-timed.CR) > 1e-6 {
		t.Fatalf("a period apart: bytes stage %d CR %.0f, timed stage %d CR %.0f", bytes.Stage, bytes.CR, timed.Stage, timed.CR)
	}
	timed.Elapse(ByteCounter / 2)
	timed.CNM(8)
	timed.Elapse(ByteCounter - 1)
	if timed.Stage != 0 {
		t.Fatalf("the CNM did not restart the clock: stage %d", timed.Stage)
	}
	for range 200 {
		if timed.Elapse(ByteCounter) {
			if timed.CR != 10e6 {
				t.Fatalf("released at CR %.0f", timed.CR)
			}
			return
		}
	}
	t.Fatalf("not released: CR %.0f TR %.0f", timed.CR, timed.TR)
}

// A timed limiter left alone for hours is released at the line rate by
// the next Elapse, without running every period of the spell.
func TestReactionPointTimedLongSpell(t *testing.T) {
	r := NewReactionPoint(1e9)
	r.Timed = true
	r.CNM(MaxFbq)
	if !r.Elapse(3600 * 1e9 / 8) { // an hour of a 1 Gb/s line
		t.Fatalf("not released after an hour: CR %g", r.CR)
	}
	if r.CR != 1e9 || r.Stage > 20 {
		t.Fatalf("CR %g after %d periods, want the line rate within a few", r.CR, r.Stage)
	}
}
