package qcnswitch

import (
	"math"
	"math/rand/v2"
	"testing"
)

// five is a switch of DF(2,4,2): a-1+h = 5 transit ports, numbered as
// the topology numbers them after its 2 host ports.
func five(t *testing.T, v Variant) *Switch {
	t.Helper()
	s, err := New(Params{Variant: v, Lf: 1.0 / 128, Ai: 1, PCl: 100}, []int{3, 4, 5, 6, 7})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Seed 004 Fig. 6: a CNM with Fb 60 arrives at a switch of a
// (p=2, a=4, h=2) Dragonfly (spec §A.4.2's worked values).
func TestFig6(t *testing.T) {
	s := five(t, Base)
	c, ok := s.CNM(3, 60)
	if !ok || c.New != 53.125 || c.Cause != CauseCNM {
		t.Errorf("base: %+v, want P 100 -> 53.125", c)
	}
	// Comparison under ADV: only this port was ever notified, the mean
	// over five ports is 12, R = 1 - 48/128.
	s = five(t, Comparison)
	c, ok = s.CNM(3, 60)
	if !ok || c.New != 62.5 || c.FbAvg != 12 {
		t.Errorf("comparison, ADV-like: %+v, want P 62.5 with Fb_avg 12", c)
	}
	// Comparison under UN: every port last reported 60, so the CNM is no
	// worse than the mean and P rises by Ai.
	s = five(t, Comparison)
	for _, p := range []int{4, 5, 6, 7} {
		s.CNM(p, 60)
	}
	s.prob[0] = 50
	c, ok = s.CNM(3, 60)
	if !ok || c.New != 51 || c.Cause != CauseCompare {
		t.Errorf("comparison, UN-like: %+v, want P 50 -> 51", c)
	}
}

// R = 1 - Lf*Fbq spans [0.5078, 0.9922] for Fbq 1..63: "between 0.5 and 1".
func TestDecreaseRange(t *testing.T) {
	for f := 1; f <= 63; f++ {
		s := five(t, Base)
		c, _ := s.CNM(5, uint8(f))
		r := c.New / 100
		if r < 0.5078 || r > 0.9922 {
			t.Errorf("Fbq %d: R %v outside [0.5078, 0.9922]", f, r)
		}
	}
	s := five(t, Base)
	if c, _ := s.CNM(5, 1); math.Abs(c.New-100*(1-1.0/128)) > 1e-12 {
		t.Errorf("Fbq 1: P %v", c.New)
	}
	if c, _ := five(t, Base).CNM(5, 63); math.Abs(c.New-100*(1-63.0/128)) > 1e-12 || c.New < 50.78 {
		t.Errorf("Fbq 63: P %v", c.New)
	}
}

// P stays within [PMin, 100] whatever arrives; a port never notified
// only climbs back to 100.
func TestProbabilityBounds(t *testing.T) {
	for _, v := range []Variant{Base, Source, Comparison, Complete} {
		s, err := New(Params{Variant: v, Lf: 1.0 / 128, Ai: 5, PCl: 10, PMin: 2}, []int{1, 2, 3})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 10000 {
			port := 1 + r.IntN(3)
			switch r.IntN(3) {
			case 0:
				s.CNM(port, uint8(r.IntN(64)))
			case 1:
				s.OwnCNM(port, uint8(r.IntN(64)))
			default:
				s.Sent(port, r.IntN(30))
			}
			for _, p := range s.prob {
				if p < 2 || p > 100 {
					t.Fatalf("%s: P %v outside [2, 100]", v, p)
				}
			}
		}
	}
}

// Under + comparison, CNMs of one Fb on every port never lower P.
func TestComparisonEqualFeedbackNeverDecreases(t *testing.T) {
	s := five(t, Comparison)
	for _, p := range s.Ports() {
		s.CNM(p, 40) // the first ones compare against a lower mean
	}
	for i := range s.prob {
		s.prob[i] = 70
	}
	for range 100 {
		for _, p := range s.Ports() {
			if c, _ := s.CNM(p, 40); c.New < c.Old {
				t.Fatalf("%+v: P fell with every port at Fb 40", c)
			}
		}
	}
}

// Only + source and complete react to their own congestion points.
func TestOwnCNM(t *testing.T) {
	for v, want := range map[Variant]bool{Base: false, Source: true, Comparison: false, Complete: true} {
		_, ok := five(t, v).OwnCNM(6, 32)
		if ok != want {
			t.Errorf("%s: own CNM changed P %v, want %v", v, ok, want)
		}
	}
}

// PCl frames without a CNM raise P by Ai; a CNM restarts the count.
func TestIncrease(t *testing.T) {
	s := five(t, Base)
	s.CNM(4, 63)
	p := s.P(4)
	if cs := s.Sent(4, 99); len(cs) != 0 {
		t.Fatalf("99 frames raised P: %+v", cs)
	}
	s.CNM(4, 0) // no decrease (Fbq 0), but the count restarts
	if cs := s.Sent(4, 99); len(cs) != 0 {
		t.Fatalf("the count did not restart on a CNM: %+v", cs)
	}
	cs := s.Sent(4, 201)
	if len(cs) != 3 || cs[2].New != p+3 || cs[0].Cause != CauseIncrease {
		t.Fatalf("300 frames since the CNM: %+v, want three increases from %v", cs, p)
	}
}

// The realisation: with one port at P = 30 and N drawn uniformly in
// 1..100 per refresh, the port's rules are enabled for 30 +- 5 percent of
// 2,000 draws; at P = 100 the mask never changes.
func TestMaskRealisesP(t *testing.T) {
	s := five(t, Base)
	r := rand.New(rand.NewPCG(7, 7))
	for range 2000 {
		if s.Mask(1+r.IntN(100)) != 0 {
			t.Fatal("P = 100 disabled a rule")
		}
	}
	if s.Intermediate() {
		t.Fatal("every P is 100, yet Intermediate")
	}
	s.prob[2] = 30.7 // truncated: enabled iff N <= 30
	enabled := 0
	for range 2000 {
		m := s.Mask(1 + r.IntN(100))
		if m&^(1<<2) != 0 {
			t.Fatalf("mask %b touches a port at 100", m)
		}
		if m == 0 {
			enabled++
		}
	}
	if share := float64(enabled) / 20; share < 25 || share > 35 {
		t.Errorf("minimal share %.1f%% for P 30, want 30 +- 5", share)
	}
	if !s.Intermediate() {
		t.Error("P 30.7 is intermediate")
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(Params{Variant: "fast", PCl: 1}, nil); err == nil {
		t.Error("unknown variant accepted")
	}
	if _, err := New(Params{Variant: Base}, nil); err == nil {
		t.Error("pcl 0 accepted")
	}
	if _, err := New(Params{Variant: Base, PCl: 1}, make([]int, 65)); err == nil {
		t.Error("65 ports accepted")
	}
}
