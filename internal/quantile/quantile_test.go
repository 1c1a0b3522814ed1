package quantile

import "testing"

func TestNearestRank(t *testing.T) {
	s := Sorted([]float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6})
	for p, want := range map[float64]float64{0.1: 1, 0.5: 5, 0.9: 9, 0.99: 10, 1: 10, 0.01: 1, 0.55: 6} {
		if got := NearestRank(s, p); got != want {
			t.Errorf("p%g = %g, want %g", p, got, want)
		}
	}
	if NearestRank(nil, 0.5) != 0 {
		t.Error("no samples")
	}
	// p·n exactly an integer: that rank, not the next (the two former
	// copies differed here: one added 0.999999, one took the ceiling).
	if got := NearestRank([]float64{1, 2, 3, 4}, 0.5); got != 2 {
		t.Errorf("p50 of 1..4 = %g, want 2", got)
	}
}
