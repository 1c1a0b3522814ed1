package traffic

import (
	"math"
	"math/bits"
)

// Histogram records latencies in log-linear buckets, as HDR histograms do:
// values below 64 ns are exact, above that each power of two is split into
// 64 buckets, so a bucket is at most 1/64 of its values wide and a quantile
// read at a bucket's midpoint is within 0.8% of the truth. Memory is fixed
// (about 9 KB) whatever the number of samples; values beyond 2^40 ns
// (18 minutes) land in the last bucket.
type Histogram struct {
	Counts [histBuckets]uint32
	N      uint64
	Sum    float64 // ns, for the exact mean
	Min    uint64
	Max    uint64
}

const (
	histSub     = 64
	histSubBits = 6
	histMaxExp  = 40
	histBuckets = histSub * (histMaxExp - histSubBits + 1)
)

func histBucket(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1
	if shift > histMaxExp-histSubBits-1 {
		return histBuckets - 1
	}
	return histSub*(shift+1) + int(v>>shift) - histSub
}

// bucketMid is the value a bucket stands for: its midpoint.
func bucketMid(b int) float64 {
	if b < histSub {
		return float64(b)
	}
	shift := b/histSub - 1
	lo := uint64(histSub+b%histSub) << shift
	return float64(lo) + float64(uint64(1)<<shift)/2 - 0.5
}

// Add records one latency in ns.
func (h *Histogram) Add(ns uint64) {
	b := histBucket(ns)
	if h.Counts[b] < math.MaxUint32 {
		h.Counts[b]++
	}
	if h.N == 0 || ns < h.Min {
		h.Min = ns
	}
	if ns > h.Max {
		h.Max = ns
	}
	h.N++
	h.Sum += float64(ns)
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.N == 0 {
		return
	}
	for i, c := range o.Counts {
		h.Counts[i] = uint32(min(uint64(h.Counts[i])+uint64(c), math.MaxUint32))
	}
	if h.N == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	h.Max = max(h.Max, o.Max)
	h.N += o.N
	h.Sum += o.Sum
}

// Mean is the exact mean in ns (0 without samples).
func (h *Histogram) Mean() float64 {
	if h.N == 0 {
		return 0
	}
	return h.Sum / float64(h.N)
}

// Quantile returns the q-quantile (0..1) in ns, accurate to ~1%, clamped to
// the exact minimum and maximum (0 without samples).
func (h *Histogram) Quantile(q float64) float64 {
	if h.N == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.N)))
	rank = max(rank, 1)
	var seen uint64
	for b, c := range h.Counts {
		seen += uint64(c)
		if seen >= rank {
			if b == histBuckets-1 {
				return float64(h.Max) // the overflow bucket has no midpoint
			}
			return min(max(bucketMid(b), float64(h.Min)), float64(h.Max))
		}
	}
	return float64(h.Max)
}
