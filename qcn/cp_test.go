package qcn

import "testing"

// The clock samples every Interval frames through a non-empty queue; the
// feedback follows the spec's check 1 (Qeq 16 KB, w 2); an empty queue
// is sampled as soon as it fills again; QoldCNM keeps Qold until a CNM.
func TestCongestionPointSamples(t *testing.T) {
	const kb = 1 << 10
	cp := NewCongestionPoint(16*kb, 2, 100, QoldSample)
	if _, ok := cp.Observe(99, 20*kb); ok {
		t.Fatal("sampled before 100 frames")
	}
	// First sample: Qold is 0, so the growth is the whole queue.
	s, ok := cp.Observe(1, 16*kb)
	if !ok || s.Qoff != 0 || s.Qdelta != 16*kb || s.Fbq != 25 {
		t.Fatalf("first sample %+v %v, want Qoff 0, Qdelta 16 KB, Fbq floor(32*63/80) = 25", s, ok)
	}
	s, ok = cp.Observe(100, 32*kb)
	if !ok || s.Fb != -48*kb || s.Fbq != 37 {
		t.Fatalf("Q 32 KB after 16 KB: %+v %v, want Fb -48 KB, Fbq 37", s, ok)
	}
	s, ok = cp.Observe(100, 16*kb)
	if !ok || s.Fbq != 0 {
		t.Fatalf("Q at Qeq and shrinking: %+v %v, want a sample with Fbq 0 (no CNM)", s, ok)
	}
	// Empty: no sample, and the clock stays run down.
	if _, ok := cp.Observe(150, 0); ok {
		t.Fatal("sampled an empty queue")
	}
	if s, ok := cp.Observe(1, 8*kb); !ok || s.Qdelta != -8*kb {
		t.Fatalf("first frame after empty: %+v %v, want a sample against Qold 16 KB", s, ok)
	}

	// QoldCNM: samples without a CNM leave Qold where the last CNM put it.
	cp = NewCongestionPoint(16*kb, 2, 10, QoldCNM)
	if s, ok := cp.Observe(10, 40*kb); !ok || s.Fbq == 0 {
		t.Fatalf("40 KB: %+v %v, want a CNM", s, ok)
	}
	if s, ok := cp.Observe(10, 10*kb); !ok || s.Fbq != 0 {
		t.Fatalf("10 KB: %+v %v, want no CNM", s, ok)
	}
	if s, ok := cp.Observe(10, 20*kb); !ok || s.Qdelta != -20*kb {
		t.Fatalf("20 KB: %+v %v, want Qdelta against the last CNM's 40 KB", s, ok)
	}
}
