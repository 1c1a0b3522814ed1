package traffic

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/topotest"
	"github.com/ethfab/ethfab/topology"
)

// build is the one topology fixture (internal/topotest).
var build = topotest.Build

func mustNew(t *testing.T, name string, topo *topology.Topology, seed int64) Pattern {
	t.Helper()
	s, err := ParsePattern(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(s, topo, seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParsePattern(t *testing.T) {
	for _, ok := range []string{"uniform", "adv+1", "adv+17", "bit-reversal", "transpose", "permutation", "all-to-all", "npb-like", "npb-like:CG", "npb-like:ft", "flows"} {
		s, err := ParsePattern(ok)
		if err != nil {
			t.Errorf("%s: %v", ok, err)
			continue
		}
		back, err := ParsePattern(s.String())
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Errorf("%s: String() %q reads back as %+v, %v", ok, s.String(), back, err)
		}
	}
	for bad, want := range map[string]string{
		"unifrom":     `"unifrom"`,
		"adv+0":       "at least 1",
		"adv1":        "adv+N",
		"adv+-1":      "adv+N",
		"npb-like:XX": `"XX"`,
		"":            `""`,
	} {
		_, err := ParsePattern(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePattern(%q) = %v, want an error containing %s", bad, err, want)
		}
	}
}

func TestUniformNeverSelfCoversAll(t *testing.T) {
	topo := build(t, "dragonfly:p=2,a=4,h=2") // 9 groups, 72 hosts
	p := mustNew(t, "uniform", topo, 1)
	n := len(topo.Hosts)
	rng := rand.New(rand.NewPCG(1, 2))
	for src := 0; src < n; src++ {
		seen := make([]bool, n)
		for range 2000 {
			d := p.Dest(src, 0, rng)
			if d == src || d < 0 || d >= n {
				t.Fatalf("uniform: %d -> %d", src, d)
			}
			seen[d] = true
		}
		for d, ok := range seen {
			if !ok && d != src {
				t.Fatalf("uniform: %d never picked %d in 2000 draws", src, d)
			}
		}
	}
}

func TestAdversarialDragonfly(t *testing.T) {
	topo := build(t, "dragonfly:p=2,a=4,h=2")
	g := topo.NumGroups()
	for _, off := range []int{1, 3, g - 1, g + 2} {
		p := mustNew(t, "adv+"+itoa(off), topo, 1)
		rng := rand.New(rand.NewPCG(3, 4))
		hit := map[int]bool{}
		for _, h := range topo.Hosts {
			for range 50 {
				d := p.Dest(h.ID, 0, rng)
				sg, dg := topo.Switches[h.Switch].Group, topo.Switches[topo.Hosts[d].Switch].Group
				if dg != (sg+off)%g {
					t.Fatalf("adv+%d: host %d of group %d -> host %d of group %d", off, h.ID, sg, d, dg)
				}
				if sg == 0 {
					hit[d] = true
				}
			}
		}
		if len(hit) != 8 { // a*p hosts in the target group
			t.Errorf("adv+%d: group 0 reached %d distinct hosts of its target group, want 8", off, len(hit))
		}
	}
	if _, err := New(Spec{Kind: Adversarial, Offset: g}, topo, 1, Options{}); err == nil {
		t.Errorf("adv+%d on %d groups: no error", g, g)
	}
}

func TestAdversarialFlatFlyAndClos(t *testing.T) {
	fb := build(t, "flatfly:dims=4x3,t=2")
	p := mustNew(t, "adv+1", fb, 1)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, h := range fb.Hosts {
		d := p.Dest(h.ID, 0, rng)
		sc, dc := fb.Switches[h.Switch].Coords, fb.Switches[fb.Hosts[d].Switch].Coords
		// The next group (row along dimension 0): same dimension-0
		// coordinate, next dimension-1 coordinate.
		if dc[0] != sc[0] || dc[1] != (sc[1]+1)%3 {
			t.Fatalf("FB adv+1: switch %v -> switch %v", sc, dc)
		}
	}
	if _, err := New(Spec{Kind: Adversarial, Offset: 3}, fb, 1, Options{}); err == nil {
		t.Error("FB adv+3 with 3 groups: no error")
	}
	clos := build(t, "clos:k=4")
	p = mustNew(t, "adv+1", clos, 1)
	for _, h := range clos.Hosts {
		d := p.Dest(h.ID, 0, rng)
		if sp, dp := clos.Switches[h.Switch].Group, clos.Switches[clos.Hosts[d].Switch].Group; dp != (sp+1)%clos.NumGroups() {
			t.Fatalf("Clos adv+1: pod %d -> pod %d", sp, dp)
		}
	}
}

func TestBitReversal(t *testing.T) {
	for _, spec := range []string{"flatfly:dims=4x4,t=4", "dragonfly:p=2,a=4,h=2"} { // 64 hosts, 72 hosts
		topo := build(t, spec)
		to := Map(mustNew(t, "bit-reversal", topo, 1))
		m := 64
		for i, d := range to {
			if i >= m {
				if d != Silent {
					t.Errorf("%s: host %d beyond the power-of-two subset sends to %d", spec, i, d)
				}
				continue
			}
			if d == Silent {
				// palindromes only
				if int(reverse6(i)) != i {
					t.Errorf("%s: host %d silent but not a palindrome", spec, i)
				}
				continue
			}
			if d == i || to[d] != i {
				t.Errorf("%s: bit-reversal not an involution: %d -> %d -> %d", spec, i, d, to[d])
			}
		}
		if to[1] != 32 || to[6] != 24 {
			t.Errorf("%s: 1 -> %d, 6 -> %d; want 32, 24", spec, to[1], to[6])
		}
	}
}

func reverse6(i int) int {
	r := 0
	for b := 0; b < 6; b++ {
		if i&(1<<b) != 0 {
			r |= 1 << (5 - b)
		}
	}
	return r
}

func TestTranspose(t *testing.T) {
	topo := build(t, "dragonfly:p=2,a=4,h=2") // 72 hosts: 8x8 matrix, 8 silent
	to := Map(mustNew(t, "transpose", topo, 1))
	for i, d := range to {
		r, c := i/8, i%8
		switch {
		case i >= 64 || r == c:
			if d != Silent {
				t.Errorf("host %d should be silent, sends to %d", i, d)
			}
		case d != c*8+r || to[d] != i:
			t.Errorf("transpose: %d -> %d -> %d", i, d, to[d])
		}
	}
}

func TestPermutationDerangementDeterministic(t *testing.T) {
	topo := build(t, "dragonfly:p=2,a=4,h=2")
	a := Map(mustNew(t, "permutation", topo, 7))
	b := Map(mustNew(t, "permutation", topo, 7))
	c := Map(mustNew(t, "permutation", topo, 8))
	if !slices.Equal(a, b) {
		t.Error("same seed, different permutations")
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 give the same permutation")
	}
	seen := make([]bool, len(a))
	for i, d := range a {
		if d == i || d < 0 || seen[d] {
			t.Fatalf("not a derangement at %d -> %d", i, d)
		}
		seen[d] = true
	}
}

func TestAllToAllPhases(t *testing.T) {
	topo := build(t, "flatfly:dims=3,t=2") // 6 hosts
	p := mustNew(t, "all-to-all", topo, 1)
	n := 6
	pairs := map[[2]int]bool{}
	for k := 0; k < n-1; k++ {
		at := time.Duration(k)*DefaultPhaseLen + DefaultPhaseLen/2
		dsts := map[int]bool{}
		for src := 0; src < n; src++ {
			d := p.Dest(src, at, nil)
			if d != (src+k+1)%n {
				t.Fatalf("phase %d: %d -> %d", k, src, d)
			}
			dsts[d] = true
			pairs[[2]int{src, d}] = true
		}
		if len(dsts) != n {
			t.Errorf("phase %d is not a permutation", k)
		}
	}
	if len(pairs) != n*(n-1) {
		t.Errorf("all phases cover %d pairs, want %d", len(pairs), n*(n-1))
	}
	if p.Dest(0, time.Duration(n-1)*DefaultPhaseLen, nil) != 1 {
		t.Error("phases do not start over after N-1")
	}
}

func TestNPBLike(t *testing.T) {
	topo := build(t, "dragonfly:p=2,a=4,h=2")
	p := mustNew(t, "npb-like:CG", topo, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	// CG: 1.6 ms iterations, gap first (0.8 ms), then burst.
	if d := p.Dest(3, 400*time.Microsecond, rng); d != Silent {
		t.Errorf("CG at 0.4 ms (gap) sends to %d", d)
	}
	if d := p.Dest(3, 1200*time.Microsecond, rng); d == Silent || d == 3 {
		t.Errorf("CG at 1.2 ms (burst): %d", d)
	}
	if j, app, burst, _ := NPBIteration(p, 3300*time.Microsecond); j != 2 || app != "CG" || burst {
		t.Errorf("CG at 3.3 ms: iteration %d %s burst %v, want 2 CG gap", j, app, burst)
	}
	// Mixed: every app of seed 000 Table II shows up, iteration lengths are its, and the seed fixes the mix.
	mix := mustNew(t, "npb-like", topo, 1)
	mix2 := mustNew(t, "npb-like", topo, 1)
	apps := map[string]bool{}
	var at time.Duration
	for j := 0; j < 200; j++ {
		jj, app, _, _ := NPBIteration(mix, at)
		_, app2, _, _ := NPBIteration(mix2, at)
		if jj != j || app != app2 {
			t.Fatalf("iteration %d at %v: got %d %s / %s", j, at, jj, app, app2)
		}
		apps[app] = true
		at += IterationTime[app]
	}
	if len(apps) != len(NPBApps) {
		t.Errorf("200 mixed iterations used %d apps", len(apps))
	}
	// The share of silent time matches CommShare.
	silent := 0
	for i := 0; i < 100000; i++ {
		if mix.Dest(0, time.Duration(i)*10*time.Microsecond, rng) == Silent {
			silent++
		}
	}
	if frac := float64(silent) / 100000; frac < 0.45 || frac > 0.55 {
		t.Errorf("silent fraction %.3f, want about 0.5", frac)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// Seed 002's transpose: on its 16 hosts, k = 4, host (x, y) = (id mod 4,
// id div 4) sends to (3-y, 3-x), the anti-diagonal's to (3-x, 3-y); a
// permutation, every host sending.
func TestTransposeKH(t *testing.T) {
	topo, err := topology.Build(topology.Spec{Kind: topology.Mesh, Dims: []int{4, 4}, T: 1})
	if err != nil {
		t.Fatal(err)
	}
	to := Map(mustNew(t, "transpose-kh", topo, 1))
	want := map[int]int{0: 15, 1: 11, 5: 10, 3: 12, 6: 9, 12: 3, 15: 0, 10: 5}
	for s, d := range want {
		if to[s] != d {
			t.Errorf("host %d -> %d, want %d", s, to[s], d)
		}
	}
	seen := map[int]bool{}
	for s, d := range to {
		if d == Silent || d == s || seen[d] {
			t.Fatalf("host %d -> %d: not a permutation without fixed points (%v)", s, d, to)
		}
		seen[d] = true
	}
}

// A flows pattern sends each host to its flows under way: none (silent),
// one, or several evenly (seed 002 Fig. 5: host 3 sends to 1, and to 2
// too from 5 s; host 0 sends to 2 until 10 s).
func TestFlows(t *testing.T) {
	top := build(t, "ring:n=4")
	fl := []Flow{{Src: "s0h0", Dst: "s2h0", To: 10 * time.Second}, {Src: "s3h0", Dst: "s1h0"}, {Src: "s3h0", Dst: "s2h0", From: 5 * time.Second}}
	p, err := New(Spec{Kind: Flows, Flows: fl}, top, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	count := func(src int, at time.Duration) map[int]int {
		c := map[int]int{}
		for range 1000 {
			c[p.Dest(src, at, rng)]++
		}
		return c
	}
	if c := count(0, time.Second); c[2] != 1000 {
		t.Errorf("host 0 at 1 s: %v", c)
	}
	if c := count(0, 10*time.Second); c[Silent] != 1000 {
		t.Errorf("host 0 at 10 s: %v", c)
	}
	if c := count(1, time.Second); c[Silent] != 1000 {
		t.Errorf("host 1 without flows: %v", c)
	}
	if c := count(3, time.Second); c[1] != 1000 {
		t.Errorf("host 3 at 1 s: %v", c)
	}
	if c := count(3, 6*time.Second); c[1] < 400 || c[2] < 400 || c[1]+c[2] != 1000 {
		t.Errorf("host 3 at 6 s, two flows: %v", c)
	}
	for _, bad := range [][]Flow{nil, {{Src: "s0h0", Dst: "s9h0"}}, {{Src: "s0h0", Dst: "s0h0"}}, {{Src: "s0h0", Dst: "s1h0", From: 2 * time.Second, To: time.Second}}} {
		if _, err := New(Spec{Kind: Flows, Flows: bad}, top, 1, Options{}); err == nil {
			t.Errorf("flows %+v accepted", bad)
		}
	}
}
