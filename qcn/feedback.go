package qcn

import "math"

// Feedback is a congestion point's Fb for a queue of q bytes that held
// qold at the previous sample, with equilibrium qeq and weight w:
// Fb = -(Qoff + w*Qdelta), Qoff = q-qeq, Qdelta = q-qold (seed 004
// §II-D). Negative means congested.
func Feedback(q, qold, qeq int, w float64) float64 {
	return -(float64(q-qeq) + w*float64(q-qold))
}

// Quantize maps Fb to the CNM's 6-bit QntzFb: the congestion magnitude
// -Fb, clipped to 0..Fbmax with Fbmax = qeq*(2w+1), scaled to 0..63 and
// rounded down (seed 004: "quantized to 6 bits"; seed 003: "with respect
// to F_b,max = (1+2W)*Q_eq"; FOGSim: qcnFb*63/maxQcnFb). 0 sends no CNM.
func Quantize(fb float64, qeq int, w float64) uint8 {
	fbmax := float64(qeq) * (2*w + 1)
	if fbmax <= 0 {
		return 0
	}
	m := min(max(-fb, 0), fbmax)
	return uint8(math.Floor(m * MaxFbq / fbmax))
}

// Decrease is the factor a reaction multiplies its rate or its minimal
// routing probability by on a CNM of QntzFb fbq, with gain gd:
// 1 - gd*fbq (QCN's rate decrease; QCN-Switch's probability decrease).
func Decrease(fbq uint8, gd float64) float64 { return 1 - gd*float64(fbq) }
