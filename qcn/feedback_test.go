package qcn

import (
	"math"
	"testing"
)

// The spec's check 1 (seeds-002-004-power.md §A.9): Qeq = 16 KB, w = 2,
// so Fbmax = 80 KB; Q = 32 KB after Qold = 16 KB gives Fb = -48 KB and
// QntzFb floor(48*63/80) = 37. A queue at or under Qeq that is not
// growing gives 0 (no CNM); one far past Fbmax gives 63.
func TestFeedbackQuantized(t *testing.T) {
	const kb = 1 << 10
	qeq, w := 16*kb, 2.0
	if fb := Feedback(32*kb, 16*kb, qeq, w); fb != -48*kb {
		t.Errorf("Fb = %v, want %d", fb, -48*kb)
	}
	for _, c := range []struct {
		q, qold int
		want    uint8
	}{
		{32 * kb, 16 * kb, 37},
		{16 * kb, 16 * kb, 0},
		{8 * kb, 16 * kb, 0},
		{16 * kb, 20 * kb, 0},
		{17 * kb, 17 * kb, 0}, // Fb -1 KB: floor(1*63/80)
		{18 * kb, 17 * kb, 3}, // Fb -(2+2*1) KB: floor(4*63/80)
		{400 * kb, 0, MaxFbq},
	} {
		fb := Feedback(c.q, c.qold, qeq, w)
		if got := Quantize(fb, qeq, w); got != c.want {
			t.Errorf("Q %d Qold %d: Fb %v quantized to %d, want %d", c.q, c.qold, fb, got, c.want)
		}
	}
	if got := Quantize(-1e9, 0, w); got != 0 {
		t.Errorf("Qeq 0: quantized to %d, want 0", got)
	}
}

// The spec's check 3: with gain 1/128 a CNM's decrease factor over
// QntzFb 1..63 spans [0.5078, 0.9922] ("between 0.5 and 1").
func TestDecreaseRange(t *testing.T) {
	lo, hi := Decrease(MaxFbq, 1.0/128), Decrease(1, 1.0/128)
	if math.Abs(lo-0.5078) > 5e-5 || math.Abs(hi-0.9922) > 5e-5 {
		t.Errorf("decrease over 1..63: [%.4f, %.4f], want [0.5078, 0.9922]", lo, hi)
	}
}
