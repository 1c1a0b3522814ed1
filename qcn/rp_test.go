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
