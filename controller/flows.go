package controller

import (
	"fmt"
	"math"
)

// Flow shares: seed 003's 3-flow experiment reads each flow's throughput
// against what its paths allow, and the spec asks `plan` for "each
// variant's max-min fair share under static routing and under every AR
// choice" (seeds-002-004-power.md §B.3), the values its checks use.

// Hop is one directed link a flow crosses: switch Switch's output port
// Port (the destination's host port last). A flow's first link, from its
// source host into its switch, is Hop{Switch: -1, Port: source host}.
type Hop struct{ Switch, Port int }

// StaticPath is the links a frame from host src to host dst crosses under
// the static routing (every eligible list's first port); nil if it
// reaches no further.
func (c *Controller) StaticPath(src, dst int) []Hop {
	paths, _ := c.paths(src, dst, 1, true)
	if len(paths) == 0 {
		return nil
	}
	return paths[0]
}

// EligiblePaths is every path from host src to host dst that a sequence
// of eligible choices takes, the static one first; false if there are
// more than limit.
func (c *Controller) EligiblePaths(src, dst, limit int) ([][]Hop, bool) {
	return c.paths(src, dst, limit, false)
}

func (c *Controller) paths(src, dst, limit int, static bool) ([][]Hop, bool) {
	d := c.top.Hosts[dst]
	var out [][]Hop
	var walk func(s int, path []Hop) bool
	walk = func(s int, path []Hop) bool {
		if s == d.Switch {
			if len(out) == limit {
				return false
			}
			out = append(out, append(path[:len(path):len(path)], Hop{s, d.Port}))
			return true
		}
		l := c.Eligible(s, dst)
		if static && len(l) > 1 {
			l = l[:1]
		}
		for _, p := range l {
			// Eligible ports bring the frame one hop closer every time
			// (VerifyEligible), so the walk ends.
			if !walk(c.top.Switches[s].Port(p).Peer.Switch, append(path, Hop{s, p})) {
				return false
			}
		}
		return true
	}
	ok := walk(c.top.Hosts[src].Switch, []Hop{{-1, src}})
	return out, ok
}

// MaxMinFair is the max-min fair rate of flows over the given paths, with
// every link's capacity 1 and every flow wanting 1 (water-filling: the
// tightest link's flows get its equal share, and so on).
func MaxMinFair(paths [][]Hop) []float64 {
	rate := make([]float64, len(paths))
	fixed := make([]bool, len(paths))
	left := len(paths)
	for f, p := range paths {
		if len(p) == 0 { // no link to share (none here: each has its source's)
			rate[f], fixed[f] = 1, true
			left--
		}
	}
	for left > 0 {
		used, free := map[Hop]float64{}, map[Hop]int{}
		for f, p := range paths {
			for _, h := range p {
				if fixed[f] {
					used[h] += rate[f]
				} else {
					free[h]++
				}
			}
		}
		// The tightest link, the first by (switch, port) among equals so
		// that the same paths give the same bits.
		share, tight := math.Inf(1), Hop{}
		for h, n := range free {
			s := (1 - used[h]) / float64(n)
			if s < share || s == share && (h.Switch < tight.Switch || h.Switch == tight.Switch && h.Port < tight.Port) {
				share, tight = s, h
			}
		}
		for f, p := range paths {
			if fixed[f] {
				continue
			}
			on := false
			for _, h := range p {
				on = on || h == tight
			}
			if on {
				rate[f], fixed[f] = math.Max(share, 0), true
				left--
			}
		}
	}
	return rate
}

// FlowShares is the max-min fair shares of flows (host pairs) under
// the static routing and under every adaptive choice: an assignment of
// one eligible path per flow in which no switch sends one destination
// out of two ports.
type FlowShares struct {
	Static []float64
	// Choices counts the adaptive choice sets; Best is the shares of the
	// one whose least share is largest (then its mean), BestPaths its
	// paths. MeanMin and MeanMax bound the mean share over every choice.
	Choices          int
	Best             []float64
	BestPaths        [][]Hop
	MeanMin, MeanMax float64
}

// MaxChoices bounds the adaptive choice sets FlowShares enumerates.
const MaxChoices = 1 << 16

// FlowShares computes the flows' max-min shares (see the type).
func (c *Controller) FlowShares(flows [][2]int) (*FlowShares, error) {
	per := make([][][]Hop, len(flows))
	static := make([][]Hop, len(flows))
	total := 1
	for i, f := range flows {
		if f[0] == f[1] {
			return nil, fmt.Errorf("flow %d: %s to itself", i+1, c.top.Hosts[f[0]].Name)
		}
		static[i] = c.StaticPath(f[0], f[1])
		p, ok := c.EligiblePaths(f[0], f[1], MaxChoices)
		if static[i] == nil || len(p) == 0 {
			return nil, fmt.Errorf("flow %d: no path from %s to %s", i+1, c.top.Hosts[f[0]].Name, c.top.Hosts[f[1]].Name)
		}
		if !ok || total*len(p) > MaxChoices {
			return nil, fmt.Errorf("more than %d adaptive choice sets", MaxChoices)
		}
		per[i], total = p, total*len(p)
	}
	fs := &FlowShares{Static: MaxMinFair(static), MeanMin: math.Inf(1), MeanMax: math.Inf(-1)}
	pick := make([][]Hop, len(flows))
	var bestMin, bestMean float64 = -1, -1
	var each func(i int)
	each = func(i int) {
		if i == len(flows) {
			if !consistent(pick, flows) {
				return
			}
			fs.Choices++
			r := MaxMinFair(pick)
			least, mean := math.Inf(1), 0.0
			for _, x := range r {
				least, mean = math.Min(least, x), mean+x/float64(len(r))
			}
			if least > bestMin+1e-12 || math.Abs(least-bestMin) <= 1e-12 && mean > bestMean+1e-12 {
				bestMin, bestMean, fs.Best = least, mean, r
				fs.BestPaths = append([][]Hop(nil), pick...)
			}
			fs.MeanMin, fs.MeanMax = math.Min(fs.MeanMin, mean), math.Max(fs.MeanMax, mean)
			return
		}
		for _, p := range per[i] {
			pick[i] = p
			each(i + 1)
		}
	}
	each(0)
	return fs, nil
}

// consistent reports whether no switch sends one destination host out of
// two ports in the chosen paths (a switch's table has one rule per
// destination).
func consistent(paths [][]Hop, flows [][2]int) bool {
	out := map[[2]int]int{}
	for i, p := range paths {
		for _, h := range p[1:] {
			k := [2]int{h.Switch, flows[i][1]}
			if q, ok := out[k]; ok && q != h.Port {
				return false
			}
			out[k] = h.Port
		}
	}
	return true
}
