package qcn

// QoldMode says when a congestion point takes Qold, the queue its next
// feedback compares against (seeds-002-004-power.md §0.2).
type QoldMode int

const (
	// QoldSample: at every sample of a non-empty queue, as FOGSim and
	// 802.1Qau do (the default).
	QoldSample QoldMode = iota
	// QoldCNM: only when a CNM goes out, as seed 004's text reads ("the
	// buffer length when the last CNM was generated").
	QoldCNM
)

// CongestionPoint is one egress queue's QCN sampling (802.1Qau's CP): a
// sample every Interval frames (seed 004) or bytes (seed 003) through
// the queue, a feedback from the queue then and at the previous sample.
type CongestionPoint struct {
	Qeq      int     // equilibrium queue, bytes
	W        float64 // weight of the queue's growth (2)
	Interval int     // frames or bytes between samples
	Mode     QoldMode
	counter  int
	qold     int
}

// NewCongestionPoint starts a congestion point's clock.
func NewCongestionPoint(qeq int, w float64, interval int, mode QoldMode) *CongestionPoint {
	return &CongestionPoint{Qeq: qeq, W: w, Interval: interval, Mode: mode, counter: interval}
}

// Sample is what one sample found: the queue, its offset from Qeq and
// growth since Qold, the feedback and its quantization (a CNM goes out
// when Fbq > 0).
type Sample struct {
	Q, Qoff, Qdelta int
	Fb              float64
	Fbq             uint8
}

// Observe advances the clock by n (frames or bytes that went through the
// queue since the last call) with the queue now at q bytes, and says
// whether that took a sample. An empty queue takes none and keeps the
// clock run down, so the next non-empty reading is sampled at once
// (FOGSim resets the clock "only when the port is not empty").
func (cp *CongestionPoint) Observe(n, q int) (Sample, bool) {
	cp.counter -= n
	if cp.counter > 0 || q <= 0 {
		return Sample{}, false
	}
	s := Sample{Q: q, Qoff: q - cp.Qeq, Qdelta: q - cp.qold}
	s.Fb = Feedback(q, cp.qold, cp.Qeq, cp.W)
	s.Fbq = Quantize(s.Fb, cp.Qeq, cp.W)
	if cp.Mode == QoldSample || s.Fbq > 0 {
		cp.qold = q
	}
	cp.counter = cp.Interval
	return s, true
}
