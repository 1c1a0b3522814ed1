package topology

import "fmt"

// Myrinet-Clos and fat trees of seed 002 (Table 11, Table 3, Fig. 2).
//
// myriclos:n=N,t=T is K(N,N): two columns of N switches, every left
// switch linked to every right one, T hosts on each (Table 11's is n=4,
// t=2: 8 switches, 16 links). Names l0..l(N-1), r0..r(N-1); ports: hosts,
// then one per switch of the other column in order.
//
// fattree:u=U,d=D,r=R[,t=T] reads Table 3's (u, d, r): R levels of
// switches above the leaves, U up ports on every switch below the top, D
// down ports on every switch above the leaves, T hosts per leaf (default
// U). A level-1 group is D leaves under U switches, each leaf linked to
// each of them; a level-j group (j > 1) is D/U level-(j-1) groups, whose D
// switches are each linked to each of the group's U switches of level j.
// The top level is one group. So a leaf has U^R up-paths, one per choice
// at each level: seed 002's fixed assignment needs u^r VLANs, the renamed
// one u. fattree:u=2,d=4,r=2 is Table 11's tree (the paper's Fig. 2/3): 8
// leaves with 2 hosts and 2 up, 4 middle switches (4 down, 2 up) in 2
// pods, 2 top (4 down), 24 links. Names t<level>s<i>, leaves level 0;
// ports: hosts or down ports, then up ports (up links are local from the
// leaves, global above, as a Clos's).

func buildMyriClos(s Spec) *Topology {
	t := &Topology{Spec: s, groups: 1}
	for i := 0; i < s.N; i++ {
		id := t.addSwitch(Switch{Name: fmt.Sprintf("l%d", i), Index: i, Coords: []int{i, 0}})
		t.addHosts(id, s.T)
	}
	for i := 0; i < s.N; i++ {
		id := t.addSwitch(Switch{Name: fmt.Sprintf("r%d", i), Index: s.N + i, Coords: []int{i, 1}})
		t.addHosts(id, s.T)
	}
	for i := 0; i < s.N; i++ {
		for j := 0; j < s.N; j++ {
			t.connect(i, s.N+j, ClassLocal)
		}
	}
	return t
}

func buildFatTree(s Spec) *Topology {
	w := s.D / s.U // level-(j-1) groups per level-j group
	leaves := s.D
	for j := 1; j < s.R; j++ {
		leaves *= w
	}
	t := &Topology{Spec: s, groups: 1}
	first, count := []int{0}, []int{leaves} // per level: first switch ID, switches
	for i := 0; i < leaves; i++ {
		id := t.addSwitch(Switch{Name: fmt.Sprintf("t0s%d", i), Index: i, Level: 1})
		t.addHosts(id, s.T)
	}
	for j := 1; j <= s.R; j++ {
		first = append(first, len(t.Switches))
		count = append(count, count[j-1]*s.U/s.D)
		for i := 0; i < count[j]; i++ {
			t.addSwitch(Switch{Name: fmt.Sprintf("t%ds%d", j, i), Index: i, Level: j + 1})
		}
	}
	// Level j-1's switch c is under group c/D of level j, whose switches
	// are U consecutive ones. Links go level by level, each lower switch's
	// up ports in order of the upper switch, so every switch numbers its
	// down ports before its up ports.
	for j := 1; j <= s.R; j++ {
		class := ClassGlobal
		if j == 1 {
			class = ClassLocal
		}
		for c := 0; c < count[j-1]; c++ {
			for u := 0; u < s.U; u++ {
				t.connect(first[j-1]+c, first[j]+(c/s.D)*s.U+u, class)
			}
		}
	}
	return t
}

// FatTreeSpan is the number of leaves under one level-j group of a fat
// tree (j >= 1): D at level 1, D/U times more at each level above.
func (s Spec) FatTreeSpan(j int) int {
	n := s.D
	for i := 1; i < j; i++ {
		n *= s.D / s.U
	}
	return n
}

// FatTreeDigit is leaf's digit for level j (>= 1), (leaf / U^(j-1)) mod U:
// which of a level-j group's U switches a path for that leaf takes.
func (s Spec) FatTreeDigit(leaf, j int) int {
	for i := 1; i < j; i++ {
		leaf /= s.U
	}
	return leaf % s.U
}
