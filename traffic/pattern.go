package traffic

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/ethfab/ethfab/topology"
)

// Silent is what Dest returns when a host sends nothing at that moment: a
// computation gap of npb-like, a fixed point of a permutation, or a host
// outside the part of the fabric a bit pattern is defined on.
const Silent = -1

// Pattern picks destinations. Dest returns the host (an index into
// Topology.Hosts) that src sends a frame to at time t since the traffic
// started, or Silent. All randomness comes from rng, which the caller keeps
// per source host, so a run is reproducible whatever the order in which
// hosts are served; anything random about the pattern itself (the
// permutation, npb-like's application mix) is drawn from the seed given to
// New. Dest is safe for concurrent use with distinct rngs.
type Pattern interface {
	Dest(src int, t time.Duration, rng *rand.Rand) int
	// Spec is the pattern's name.
	Spec() Spec
	// Hosts is the number of hosts the pattern spans.
	Hosts() int
	// Seed is the seed New was given (for the results).
	Seed() int64
}

// Options tune the phased patterns. The zero value means the defaults.
type Options struct {
	// PhaseLen is how long one all-to-all phase lasts (default 1 ms):
	// phase k of the run has host i send to i+k mod N, k = 1..N-1, then
	// the phases start over.
	PhaseLen time.Duration
	// CommShare is the fraction of each npb-like iteration spent in the
	// communication burst (default 0.5); the rest is a computation gap in
	// which every host is silent. Seed 000 gives iteration times only, not
	// this share, so it is an assumption that a scenario may change.
	CommShare float64
}

// Defaults of Options.
const (
	DefaultPhaseLen  = time.Millisecond
	DefaultCommShare = 0.5
)

// IterationTime is seed 000 Table II: the approximate iteration time of the
// NAS Parallel Benchmarks traced on 64 nodes.
var IterationTime = map[string]time.Duration{
	"CG": 1600 * time.Microsecond,
	"BT": 29 * time.Millisecond,
	"FT": 58 * time.Millisecond,
	"IS": 10 * time.Millisecond,
	"LU": 52 * time.Millisecond,
	"MG": 11 * time.Millisecond,
	"SP": 22 * time.Millisecond,
}

// NPBApps lists Table II's applications in the paper's order.
var NPBApps = []string{"CG", "BT", "FT", "IS", "LU", "MG", "SP"}

// New builds the pattern spec names over topo's hosts.
func New(spec Spec, topo *topology.Topology, seed int64, opt Options) (Pattern, error) {
	n := len(topo.Hosts)
	if n < 2 {
		return nil, fmt.Errorf("pattern %s: needs at least 2 hosts, the topology has %d", spec, n)
	}
	if opt.PhaseLen <= 0 {
		opt.PhaseLen = DefaultPhaseLen
	}
	if opt.CommShare <= 0 || opt.CommShare > 1 {
		if opt.CommShare != 0 {
			return nil, fmt.Errorf("pattern %s: communication share %g is not in (0, 1]", spec, opt.CommShare)
		}
		opt.CommShare = DefaultCommShare
	}
	b := base{spec: spec, n: n, seed: seed}
	switch spec.Kind {
	case Uniform:
		return &uniform{b}, nil
	case Adversarial:
		return newAdversarial(b, topo)
	case BitReversal:
		return newBitReversal(b), nil
	case Transpose:
		return newTranspose(b), nil
	case TransposeKH:
		return newTransposeKH(b), nil
	case Permutation:
		return newPermutation(b, seed), nil
	case AllToAll:
		return &allToAll{b, opt.PhaseLen}, nil
	case NPBLike:
		return newNPB(b, seed, opt.CommShare)
	case Flows:
		return newFlows(b, topo)
	}
	return nil, fmt.Errorf("unknown traffic pattern %q (want one of %v)", spec.Kind, Kinds)
}

type base struct {
	spec Spec
	n    int
	seed int64
}

func (b base) Spec() Spec  { return b.spec }
func (b base) Hosts() int  { return b.n }
func (b base) Seed() int64 { return b.seed }

// flows is the flows pattern: each host's flows, in time order.
type flows struct {
	base
	by [][]flowAt // by source host
}

type flowAt struct {
	dst      int
	from, to time.Duration // to 0: the end
}

func newFlows(b base, topo *topology.Topology) (Pattern, error) {
	if len(b.spec.Flows) == 0 {
		return nil, fmt.Errorf("pattern %s: no flows", b.spec)
	}
	index := make(map[string]int, len(topo.Hosts))
	for _, h := range topo.Hosts {
		index[h.Name] = h.ID
	}
	p := &flows{base: b, by: make([][]flowAt, b.n)}
	for i, f := range b.spec.Flows {
		s, ok := index[f.Src]
		d, ok2 := index[f.Dst]
		switch {
		case !ok || !ok2:
			return nil, fmt.Errorf("pattern %s: flow %d (%s to %s): no such host", b.spec, i, f.Src, f.Dst)
		case s == d:
			return nil, fmt.Errorf("pattern %s: flow %d: %s sends to itself", b.spec, i, f.Src)
		case f.From < 0 || (f.To != 0 && f.To <= f.From):
			return nil, fmt.Errorf("pattern %s: flow %d: from %v to %v is no time span", b.spec, i, f.From, f.To)
		}
		p.by[s] = append(p.by[s], flowAt{d, f.From, f.To})
	}
	return p, nil
}

// Dest picks among the source's flows under way at t, evenly.
func (p *flows) Dest(src int, t time.Duration, rng *rand.Rand) int {
	var on [8]int
	active := on[:0]
	for _, f := range p.by[src] {
		if t >= f.from && (f.to == 0 || t < f.to) {
			active = append(active, f.dst)
		}
	}
	switch len(active) {
	case 0:
		return Silent
	case 1:
		return active[0]
	}
	return active[rng.IntN(len(active))]
}

// other picks any host but src, uniformly.
func other(n, src int, rng *rand.Rand) int {
	d := rng.IntN(n - 1)
	if d >= src {
		d++
	}
	return d
}

// uniform is UN of seeds 000/004: any other host.
type uniform struct{ base }

func (p *uniform) Dest(src int, _ time.Duration, rng *rand.Rand) int { return other(p.n, src, rng) }

// adversarial is ADV+N: a random host among those attached to the target
// of src's own "group":
//
//   - Dragonfly: group (g+N) mod G, as seed 004 (all of a group's traffic
//     crosses the one global link between the two groups);
//   - Flattened Butterfly: the switch with the same dimension-0 coordinate
//     in group (g+N) mod G, a group being a row along dimension 0 (seed 000
//     §VI) and G the number of rows. All T hosts of a switch send to that
//     one switch, which dimension-order routing reaches over one link (seed
//     000 §V-D: "all end hosts connected to a switch send traffic to the
//     same destination switch"); the remote-group rule that takes it is the
//     one conditional routing may divert (Fig. 10b);
//   - folded-Clos: pod (p+N) mod Pods; the pod's uplinks are the shared
//     resource.
//
// An offset that lands a host on its own group (N a multiple of the group
// count) is rejected.
type adversarial struct {
	base
	target []int   // per source host: index into cands
	cands  [][]int // candidate destination sets: hosts of a group or switch
}

func newAdversarial(b base, topo *topology.Topology) (Pattern, error) {
	n, off := b.n, b.spec.Offset
	p := &adversarial{base: b, target: make([]int, n)}
	switch topo.Spec.Kind {
	case topology.Dragonfly, topology.Clos:
		g := topo.NumGroups()
		if off%g == 0 {
			return nil, fmt.Errorf("pattern %s: offset %d is a multiple of the %d groups, every host would target its own group", b.spec, off, g)
		}
		p.cands = make([][]int, g)
		for _, h := range topo.Hosts {
			gr := topo.Switches[h.Switch].Group
			p.cands[gr] = append(p.cands[gr], h.ID)
		}
		for _, h := range topo.Hosts {
			p.target[h.ID] = (topo.Switches[h.Switch].Group + off) % g
		}
	case topology.FlatFly:
		k0 := topo.Spec.Dims[0]
		g := len(topo.Switches) / k0 // rows along dimension 0
		if off%g == 0 {
			return nil, fmt.Errorf("pattern %s: offset %d is a multiple of the %d groups (rows along dimension 0), every switch would target itself", b.spec, off, g)
		}
		p.cands = make([][]int, len(topo.Switches))
		for _, h := range topo.Hosts {
			p.cands[h.Switch] = append(p.cands[h.Switch], h.ID)
		}
		for _, h := range topo.Hosts {
			// Switch IDs are the coordinates in mixed radix, dimension 0
			// fastest (topology/flatfly.go): ID = group*k0 + c0.
			id := topo.Switches[h.Switch].ID
			p.target[h.ID] = ((id/k0+off)%g)*k0 + id%k0
		}
	default:
		return nil, fmt.Errorf("pattern %s: no adversarial analogue for topology kind %q", b.spec, topo.Spec.Kind)
	}
	for i, c := range p.cands {
		if len(c) == 0 && contains(p.target, i) {
			return nil, fmt.Errorf("pattern %s: target group %d has no hosts", b.spec, i)
		}
	}
	return p, nil
}

func contains(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

func (p *adversarial) Dest(src int, _ time.Duration, rng *rand.Rand) int {
	c := p.cands[p.target[src]]
	return c[rng.IntN(len(c))]
}

// fixed is a pattern where each host has one destination, or Silent.
type fixed struct {
	base
	to []int
}

func (p *fixed) Dest(src int, _ time.Duration, _ *rand.Rand) int { return p.to[src] }

// Map returns the destination of every host (Silent for silent hosts) of a
// pattern that has one destination per host (bit-reversal, transpose,
// permutation), or nil for the others.
func Map(p Pattern) []int {
	if f, ok := p.(*fixed); ok {
		return append([]int(nil), f.to...)
	}
	return nil
}

// newBitReversal sends host i to the host whose index has the bits of i
// reversed, over b = floor(log2 N) bits. Only the first 2^b hosts take part
// (with N not a power of two the others are silent, and receive nothing);
// hosts whose index is a bit palindrome would send to themselves and are
// silent too.
func newBitReversal(b base) Pattern {
	w := bits.Len(uint(b.n)) - 1
	m := 1 << w
	to := make([]int, b.n)
	for i := range to {
		to[i] = Silent
		if i < m {
			r := int(bits.Reverse64(uint64(i)) >> (64 - w))
			if w == 0 {
				r = i
			}
			if r != i {
				to[i] = r
			}
		}
	}
	return &fixed{b, to}
}

// newTransposeKH is seed 002's matrix transpose: "a host (x, y) sends a
// packet to the host (k − y − 1, k − x − 1) … or (k − x − 1, k − y − 1)
// when x + y = k − 1", host (x, y) being (id mod k, id div k) over the
// first k*k hosts, k = floor(sqrt(N)) (4 for its 16 hosts). It reflects
// through the anti-diagonal, whose own hosts are reflected through the
// centre; the centre of an odd k would send to itself and is silent, as
// are hosts beyond k*k. ethfab's transpose is (r, c) -> (c, r) with a
// silent diagonal, not the same.
func newTransposeKH(b base) Pattern {
	k := isqrt(b.n)
	to := make([]int, b.n)
	for i := range to {
		to[i] = Silent
		if i >= k*k {
			continue
		}
		x, y := i%k, i/k
		dx, dy := k-y-1, k-x-1
		if x+y == k-1 {
			dx, dy = k-x-1, k-y-1
		}
		if d := dy*k + dx; d != i {
			to[i] = d
		}
	}
	return &fixed{b, to}
}

// isqrt is floor(sqrt(n)), exact past float rounding.
func isqrt(n int) int {
	s := int(math.Sqrt(float64(n)))
	for (s+1)*(s+1) <= n {
		s++
	}
	for s*s > n {
		s--
	}
	return s
}

// newTranspose lays the first s*s hosts out as an s x s matrix, s =
// floor(sqrt(N)), row-major by host index, and sends (r, c) to (c, r). For
// N = 4^k this is the usual bit definition (swap the halves of the index
// bits). Hosts beyond s*s and on the diagonal are silent.
func newTranspose(b base) Pattern {
	s := isqrt(b.n)
	to := make([]int, b.n)
	for i := range to {
		to[i] = Silent
		if i < s*s {
			r, c := i/s, i%s
			if r != c {
				to[i] = c*s + r
			}
		}
	}
	return &fixed{b, to}
}

// newPermutation draws a derangement (a permutation without fixed points)
// uniformly from the seed: shuffles until one has no fixed point, which
// takes e ≈ 2.7 tries on average.
func newPermutation(b base, seed int64) Pattern {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7065726d)) // "perm"
	to := make([]int, b.n)
	for {
		for i := range to {
			to[i] = i
		}
		rng.Shuffle(len(to), func(i, j int) { to[i], to[j] = to[j], to[i] })
		ok := true
		for i, d := range to {
			if d == i {
				ok = false
				break
			}
		}
		if ok {
			return &fixed{b, to}
		}
	}
}

// allToAll is the shift exchange of MPI_Alltoall: in phase k (k = 1..N-1,
// each PhaseLen long, repeating) host i sends to i+k mod N, so at any time
// the traffic is a permutation and over N-1 phases every pair is served.
type allToAll struct {
	base
	phase time.Duration
}

// PhaseOf returns the shift k an all-to-all pattern uses at time t.
func (p *allToAll) PhaseOf(t time.Duration) int {
	return 1 + int((t/p.phase)%time.Duration(p.n-1))
}

func (p *allToAll) Dest(src int, t time.Duration, _ *rand.Rand) int {
	return (src + p.PhaseOf(t)) % p.n
}
