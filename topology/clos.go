package topology

import "fmt"

// Folded-Clos (k-ary fat tree) layout, seed 000 Fig. 3a. With m = K/2:
//
//   - a pod holds m edge switches (level 1, m hosts each) and m aggregation
//     switches (level 2); edge switch e's uplink u goes to aggregation
//     switch u of its pod.
//   - 3 levels: aggregation switch a of every pod climbs into core plane a.
//     A plane has ceil(Pods*m/K) core switches of K ports; uplink u of pod
//     i's switch goes to core (i*m+u) mod C of the plane, so every core
//     switch reaches every pod (with parallel links when Pods < K).
//   - 4 levels: pods form groups of m pods; each group has m*m level-3
//     switches (a, s), switch (a, s) joined to aggregation switch a of every
//     pod of the group through that switch's uplink s. Level-3 switch x of
//     every group climbs into top plane x, wired like the 3-level core.
//     The paper's 300,000-host network is clos:k=72,levels=4,pods=234
//     (6.5 groups); it packs spare ports with extra links and so counts
//     29,484 switches where this construction, which keeps one plane per
//     level-3 position for plain up/down routing, has 31,104.
//
// Port numbers: hosts, then down ports, then up ports. Edge-aggregation
// links are local, everything above is global.

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ClosTopSwitches is the number of switches per plane at the top level.
func ClosTopSwitches(s Spec) int {
	m := s.K / 2
	if s.Levels == 3 {
		return ceilDiv(s.Pods*m, s.K)
	}
	return ceilDiv(ceilDiv(s.Pods, m)*m, s.K)
}

func buildClos(s Spec) *Topology {
	m := s.K / 2
	t := &Topology{Spec: s, groups: s.Pods}
	edge := func(i, e int) int { return i*2*m + e }
	agg := func(i, a int) int { return i*2*m + m + a }
	for i := 0; i < s.Pods; i++ {
		for e := 0; e < m; e++ {
			id := t.addSwitch(Switch{Name: fmt.Sprintf("p%de%d", i, e), Group: i, Index: e, Level: 1})
			t.addHosts(id, m)
		}
		for a := 0; a < m; a++ {
			t.addSwitch(Switch{Name: fmt.Sprintf("p%da%d", i, a), Group: i, Index: a, Level: 2})
		}
		for e := 0; e < m; e++ {
			for u := 0; u < m; u++ {
				t.connect(edge(i, e), agg(i, u), ClassLocal)
			}
		}
	}
	c := ClosTopSwitches(s)
	if s.Levels == 3 {
		core0 := len(t.Switches)
		for a := 0; a < m; a++ {
			for j := 0; j < c; j++ {
				t.addSwitch(Switch{Name: fmt.Sprintf("c%d-%d", a, j), Group: -1, Index: a*c + j, Level: 3})
			}
		}
		for i := 0; i < s.Pods; i++ {
			for a := 0; a < m; a++ {
				for u := 0; u < m; u++ {
					t.connect(agg(i, a), core0+a*c+(i*m+u)%c, ClassGlobal)
				}
			}
		}
		return t
	}
	groups := ceilDiv(s.Pods, m)
	l3 := func(g, x int) int { return 2*m*s.Pods + g*m*m + x }
	for g := 0; g < groups; g++ {
		for x := 0; x < m*m; x++ {
			t.addSwitch(Switch{Name: fmt.Sprintf("g%dx%d-%d", g, x/m, x%m), Group: -1, Index: x, Level: 3})
		}
	}
	for i := 0; i < s.Pods; i++ {
		for a := 0; a < m; a++ {
			for u := 0; u < m; u++ {
				t.connect(agg(i, a), l3(i/m, a*m+u), ClassGlobal)
			}
		}
	}
	top0 := len(t.Switches)
	for x := 0; x < m*m; x++ {
		for j := 0; j < c; j++ {
			t.addSwitch(Switch{Name: fmt.Sprintf("c%d-%d", x, j), Group: -1, Index: x*c + j, Level: 4})
		}
	}
	for g := 0; g < groups; g++ {
		for x := 0; x < m*m; x++ {
			for u := 0; u < m; u++ {
				t.connect(l3(g, x), top0+x*c+(g*m+u)%c, ClassGlobal)
			}
		}
	}
	return t
}
