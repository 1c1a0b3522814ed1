package topology

import (
	"fmt"
	"strings"
)

// Extended generalized fat trees of seed 003 (Öhring et al.):
// XGFT(h; m1..mh; w1..wh) has h levels of switches above the compute
// nodes (level 0). A level-i node has m_i children and w_(i+1) parents, so
// level i holds (w1 ... wi)(m(i+1) ... mh) nodes: the compute nodes number
// m1 ... mh, the top switches w1 ... wh, and between two compute nodes in
// different top subtrees there is one path through each top switch.
//
// A level-i node is labelled by h digits, the highest first: at positions
// j > i a child digit x_j < m_j, at positions j <= i a parent digit
// y_j < w_j. Its parent through digit y replaces x_(i+1) by y; its
// children replace y_i by each x. The node's index within its level reads
// the label as a mixed-radix number, position 1 least significant, so a
// compute node's index (its host ID) is its x digits and a leaf's hosts
// are consecutive. Switch IDs go level by level from the leaves.
//
// ethfab's hosts have one link, so w1 must be 1 (Validate): the compute
// nodes under a leaf are its hosts. Switch names are x<level>s<index>;
// ports: down ports (hosts at level 1) in order of the child digit, then
// up ports in order of the parent digit. Links from the leaves are local,
// those above global (as a Clos's).

// XGFTLevelSizes is the number of nodes at each level 0..h.
func (s Spec) XGFTLevelSizes() []int {
	sizes := make([]int, s.H+1)
	for i := 0; i <= s.H; i++ {
		n := 1
		for j := 1; j <= s.H; j++ {
			n *= s.xgftRadix(i, j)
		}
		sizes[i] = n
	}
	return sizes
}

// xgftRadix is the radix of digit position j (1-based) in a level-i label.
func (s Spec) xgftRadix(i, j int) int {
	if j > i {
		return s.M[j-1]
	}
	return s.W[j-1]
}

// XGFTLabel is the digits of node idx of level i, position 1 first.
func (s Spec) XGFTLabel(i, idx int) []int {
	d := make([]int, s.H)
	for j := 1; j <= s.H; j++ {
		r := s.xgftRadix(i, j)
		d[j-1] = idx % r
		idx /= r
	}
	return d
}

// XGFTIndex is the index within level i of the node labelled d.
func (s Spec) XGFTIndex(i int, d []int) int {
	idx := 0
	for j := s.H; j >= 1; j-- {
		idx = idx*s.xgftRadix(i, j) + d[j-1]
	}
	return idx
}

// XGFTParent is the index at level i+1 of node idx's parent through
// parent digit y.
func (s Spec) XGFTParent(i, idx, y int) int {
	d := s.XGFTLabel(i, idx)
	d[i] = y
	return s.XGFTIndex(i+1, d)
}

// XGFTUpPort is the d-mod-m choice of parent digit at level l (>= 1)
// towards compute node x: floor(x / (w1 ... wl)) mod w(l+1) (Rodriguez et
// al., as seed 003's spec §B.3 writes it).
func (s Spec) XGFTUpPort(l, x int) int {
	for j := 1; j <= l; j++ {
		x /= s.W[j-1]
	}
	return x % s.W[l]
}

// XGFTName is the fabric as seed 003 writes it, XGFT(h; m1,...; w1,...).
func (s Spec) XGFTName() string {
	return fmt.Sprintf("XGFT(%d; %s; %s)", s.H, joinInts(s.M, ","), joinInts(s.W, ","))
}

func joinInts(v []int, sep string) string {
	ss := make([]string, len(v))
	for i, n := range v {
		ss[i] = fmt.Sprint(n)
	}
	return strings.Join(ss, sep)
}

func (s Spec) validateXGFT() error {
	if s.H < 1 || s.H > 8 {
		return paramErr(s.Kind, "h", "must be 1 to 8 levels of switches, got %d", s.H)
	}
	for _, p := range []struct {
		name string
		v    []int
		what string
	}{{"m", s.M, "children per node"}, {"w", s.W, "parents per node"}} {
		if len(p.v) != s.H {
			return paramErr(s.Kind, p.name, "needs h = %d values (%s, level 1 first), got %d", s.H, p.what, len(p.v))
		}
		for i, n := range p.v {
			if n < 1 || n > 4096 {
				return paramErr(s.Kind, p.name, "value %d is %d; each must be 1 to 4096 %s", i+1, n, p.what)
			}
		}
	}
	total := int64(0)
	for i := 0; i <= s.H; i++ {
		n := int64(1)
		for j := 1; j <= s.H; j++ {
			n *= int64(s.xgftRadix(i, j))
			if n > maxHosts {
				return paramErr(s.Kind, "m", "level %d has more than %d nodes", i, maxHosts)
			}
		}
		total += n
	}
	if total > maxHosts {
		return paramErr(s.Kind, "m", "%d nodes is too many", total)
	}
	if s.W[0] != 1 {
		sz := s.XGFTLevelSizes()
		return paramErr(s.Kind, "w", "w1 = %d gives every compute node %d links; ethfab's hosts have one, so w1 must be 1 (%s has %d compute nodes and %s switches at levels 1..%d)",
			s.W[0], s.W[0], s.XGFTName(), sz[0], joinInts(sz[1:], ", "), s.H)
	}
	return nil
}

func buildXGFT(s Spec) *Topology {
	t := &Topology{Spec: s, groups: 1}
	sizes := s.XGFTLevelSizes()
	first := make([]int, s.H+1) // level i's first switch ID (level >= 1)
	for i := 1; i <= s.H; i++ {
		first[i] = len(t.Switches)
		for idx := 0; idx < sizes[i]; idx++ {
			id := t.addSwitch(Switch{Name: fmt.Sprintf("x%ds%d", i, idx), Index: idx, Level: i, Coords: s.XGFTLabel(i, idx)})
			if i == 1 {
				t.addHosts(id, s.M[0])
			}
		}
	}
	// Level by level, each lower node's up ports in order of the parent
	// digit. A parent's children differ only in the digit it replaced, so
	// taking them in index order numbers its down ports by that digit.
	for i := 1; i < s.H; i++ {
		class := ClassGlobal
		if i == 1 {
			class = ClassLocal
		}
		for idx := 0; idx < sizes[i]; idx++ {
			for y := 0; y < s.W[i]; y++ {
				t.connect(first[i]+idx, first[i+1]+s.XGFTParent(i, idx, y), class)
			}
		}
	}
	return t
}

// xgftDiameter: two compute nodes whose highest differing digit is at
// position j meet at level j, j-1 hops above their leaves.
func xgftDiameter(s Spec) int {
	for j := s.H; j >= 2; j-- {
		if s.M[j-1] > 1 {
			return 2 * (j - 1)
		}
	}
	return 0
}

// XGFTFirst is the first switch ID of XGFT level i (>= 1).
func (s Spec) XGFTFirst(i int) int {
	sizes, n := s.XGFTLevelSizes(), 0
	for l := 1; l < i; l++ {
		n += sizes[l]
	}
	return n
}
