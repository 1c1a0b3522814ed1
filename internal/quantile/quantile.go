// Package quantile is ethfab's one definition of a sample quantile, used
// by the host agent's and the results' summaries alike so that the same
// samples give the same p50 everywhere.
package quantile

import (
	"math"
	"slices"
)

// NearestRank is the p-quantile (0 < p <= 1) of sorted samples by the
// nearest-rank method: the smallest sample with at least a fraction p of
// the samples at or below it, s[ceil(p·n) − 1]. It is always one of the
// samples (no interpolation), 0 for no samples.
func NearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Sorted returns a sorted copy of samples.
func Sorted(samples []float64) []float64 {
	s := slices.Clone(samples)
	slices.Sort(s)
	return s
}
