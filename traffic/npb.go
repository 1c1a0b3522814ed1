package traffic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// npb is the npb-like pattern: bulk-synchronous iterations whose lengths
// are seed 000 Table II's, each a computation gap (every host silent)
// followed by a communication burst taking CommShare of the iteration. All
// hosts share one clock, as MPI ranks leaving a barrier do, so the bursts
// of all hosts coincide: traffic changes at the time scale the paper says
// adaptive routing must follow.
//
// Burst destinations follow the application's dominant exchange: FT and IS
// are all-to-all transposes (a uniformly random other host per frame); CG,
// MG, BT, SP and LU exchange halos with grid neighbours (host i sends to
// i±1 or i±w, w = ceil(sqrt(N)), wrapping around N). Without an App each
// iteration is a random application of Table II, drawn from the seed, so
// burst lengths and destinations change from one iteration to the next.
type npb struct {
	base
	share float64
	w     int
	// One cycle of iterations: ends[j] is when iteration j ends, apps[j]
	// its application; the cycle repeats after ends[len-1].
	ends []time.Duration
	apps []string
}

// npbCycle is how many iterations a mixed npb-like pattern draws before it
// repeats (about half an hour of traffic).
const npbCycle = 1 << 16

func newNPB(b base, seed int64, share float64) (Pattern, error) {
	p := &npb{base: b, share: share, w: int(math.Ceil(math.Sqrt(float64(b.n))))}
	if b.spec.App != "" {
		t, ok := IterationTime[b.spec.App]
		if !ok {
			return nil, fmt.Errorf("pattern %s: unknown NPB application %q (want one of %v)", b.spec, b.spec.App, NPBApps)
		}
		p.ends, p.apps = []time.Duration{t}, []string{b.spec.App}
		return p, nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e7062)) // "npb"
	var end time.Duration
	for range npbCycle {
		a := NPBApps[rng.IntN(len(NPBApps))]
		end += IterationTime[a]
		p.ends = append(p.ends, end)
		p.apps = append(p.apps, a)
	}
	return p, nil
}

// Iteration returns which iteration t falls in (counting from 0 at the
// start of the traffic), its application, and whether t is inside the
// iteration's communication burst.
func (p *npb) Iteration(t time.Duration) (j int, app string, burst bool) {
	cycle := p.ends[len(p.ends)-1]
	c, r := int(t/cycle), t%cycle
	k := sort.Search(len(p.ends), func(i int) bool { return p.ends[i] > r })
	start := time.Duration(0)
	if k > 0 {
		start = p.ends[k-1]
	}
	length := p.ends[k] - start
	gap := time.Duration(float64(length) * (1 - p.share))
	return c*len(p.ends) + k, p.apps[k], r-start >= gap
}

func (p *npb) Dest(src int, t time.Duration, rng *rand.Rand) int {
	_, app, burst := p.Iteration(t)
	if !burst {
		return Silent
	}
	switch app {
	case "FT", "IS":
		return other(p.n, src, rng)
	}
	var d int
	switch rng.IntN(4) {
	case 0:
		d = src + 1
	case 1:
		d = src - 1
	case 2:
		d = src + p.w
	default:
		d = src - p.w
	}
	d = ((d % p.n) + p.n) % p.n
	if d == src {
		return other(p.n, src, rng)
	}
	return d
}

// NPBIteration reports, for an npb-like pattern, the iteration t falls in,
// its application and whether t is in its communication burst; ok is false
// for other patterns.
func NPBIteration(p Pattern, t time.Duration) (j int, app string, burst, ok bool) {
	q, ok := p.(*npb)
	if !ok {
		return 0, "", false, false
	}
	j, app, burst = q.Iteration(t)
	return j, app, burst, true
}
