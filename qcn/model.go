package qcn

import "math/rand/v2"

// Model is this package's congestion and reaction points alone, with no
// emulator, kernel or scheduler in the way: saturated flows over links of
// one rate, each link a FIFO queue with a congestion point, each flow a
// reaction point, time in slots of one frame's transmission. It tells
// what the algorithm itself does with a set of paths, so that a lab's
// result can be set against it (`ethfab plan --flows` prints it): on seed
// 003's topology 3 the flow behind two congestion points ends with a
// fifth of its link or less and the others take the rest, as in the
// emulated runs (README, snoop-3flow; TestModelParkingLot).
//
// Each slot, every flow whose rate limiter has credit for a frame offers
// one to its first link (at most one: its host link has the links' rate);
// every link then serves one frame, which joins the flow's next link in
// the next slot. A link samples the bytes entering its queue as a
// CongestionPoint and sends a CNM for a victim drawn among the frames
// that left it last (Ring.Pick's rule), delivered Delay slots later.
type Model struct {
	// Paths are the flows' links in order, indices below Links; the
	// links marked Plain are FIFOs without a congestion point (ethfab's
	// switches have none on a host's link).
	Paths [][]int
	Links int
	Plain []bool
	// Frame is the frames' length in bytes; Limit the queue's, in bytes.
	Frame, Limit int
	// Qeq, W and SampleBytes are the congestion points'.
	Qeq, SampleBytes int
	W                float64
	// Slots is how many frame times the model runs; Delay how many a
	// CNM takes to reach its source.
	Slots, Delay int
	Seed         uint64
	// Timed runs the reaction points' increases on time (a slot is a
	// frame's worth of the line), not on the bytes each flow sends.
	Timed bool
}

// ModelResult is what a Model's run carried.
type ModelResult struct {
	// Shares are the flows' delivered frames per slot (a fraction of the
	// link rate); Queues the links' time-average backlog in bytes.
	Shares, Queues []float64
	// Lost counts frames a full queue refused, LostAt by link.
	Lost   int
	LostAt []int
}

// Run runs the model. Rates are in frames per slot: the line rate is 1.
func (m Model) Run() ModelResult {
	rng := rand.New(rand.NewPCG(m.Seed, 0x51))
	type arrival struct{ flow, hop int }
	type link struct {
		q       []arrival // the queued frames, head first
		cp      *CongestionPoint
		left    [RingSize]int // flows of the last departures
		n, next int
		sum     float64
	}
	links := make([]*link, m.Links)
	for i := range links {
		links[i] = &link{}
		if i >= len(m.Plain) || !m.Plain[i] {
			links[i].cp = NewCongestionPoint(m.Qeq, m.W, m.SampleBytes, QoldSample)
		}
	}
	type cnm struct {
		at, flow int
		fbq      uint8
	}
	var pending []cnm
	rps := make([]*ReactionPoint, len(m.Paths))
	credit := make([]float64, len(m.Paths))
	delivered := make([]int, len(m.Paths))
	res := ModelResult{Shares: make([]float64, len(m.Paths)), Queues: make([]float64, m.Links), LostAt: make([]int, m.Links)}
	var fwd, fresh []arrival
	enqueue := func(s int, a arrival) {
		// The point counts every frame that arrives, dropped ones too.
		li := m.Paths[a.flow][a.hop]
		l := links[li]
		if (len(l.q)+1)*m.Frame > m.Limit {
			res.Lost++
			res.LostAt[li]++
		} else {
			l.q = append(l.q, a)
		}
		if l.cp == nil {
			return
		}
		smp, ok := l.cp.Observe(m.Frame, len(l.q)*m.Frame)
		if !ok || smp.Fbq == 0 || l.n == 0 {
			return
		}
		last := min(max(len(l.q), 1), l.n)
		v := l.left[(l.next-1-rng.IntN(last)+RingSize)%RingSize]
		pending = append(pending, cnm{s + m.Delay, v, smp.Fbq})
	}
	for s := 0; s < m.Slots; s++ {
		kept := pending[:0]
		for _, c := range pending {
			if c.at > s {
				kept = append(kept, c)
				continue
			}
			if rps[c.flow] == nil {
				rps[c.flow] = NewReactionPoint(1)
				rps[c.flow].Timed = m.Timed
			}
			rps[c.flow].CNM(c.fbq)
		}
		pending = kept
		// The frames links passed on in the last slot join their next
		// queues first, then the hosts', each in no fixed order.
		rng.Shuffle(len(fwd), func(i, j int) { fwd[i], fwd[j] = fwd[j], fwd[i] })
		for _, a := range fwd {
			enqueue(s, a)
		}
		fwd = fwd[:0]
		fresh = fresh[:0]
		for f := range m.Paths {
			if m.Timed && rps[f] != nil && rps[f].Elapse(float64(m.Frame)) {
				rps[f] = nil
			}
			r := 1.0
			if rps[f] != nil {
				r = rps[f].CR
			}
			if credit[f] += r; credit[f] < 1 {
				continue
			}
			credit[f] = min(credit[f]-1, 1)
			if rps[f] != nil && rps[f].Sent(m.Frame) {
				rps[f] = nil
			}
			fresh = append(fresh, arrival{f, 0})
		}
		rng.Shuffle(len(fresh), func(i, j int) { fresh[i], fresh[j] = fresh[j], fresh[i] })
		for _, a := range fresh {
			enqueue(s, a)
		}
		for _, l := range links {
			if len(l.q) > 0 {
				a := l.q[0]
				l.q = l.q[1:]
				l.left[l.next] = a.flow
				l.next, l.n = (l.next+1)%RingSize, min(l.n+1, RingSize)
				if a.hop+1 < len(m.Paths[a.flow]) {
					fwd = append(fwd, arrival{a.flow, a.hop + 1})
				} else {
					delivered[a.flow]++
				}
			}
			l.sum += float64(len(l.q) * m.Frame)
		}
	}
	for f, d := range delivered {
		res.Shares[f] = float64(d) / float64(max(m.Slots, 1))
	}
	for i, l := range links {
		res.Queues[i] = l.sum / float64(max(m.Slots, 1))
	}
	return res
}
