// Package compaction computes the smallest longest-prefix-match table that
// forwards every key exactly as a given (possibly overlapping) prefix table
// does. It implements ORTC (Draves, King, Venkatachary, Zill: "Constructing
// Optimal IP Routing Tables", INFOCOM 1999), adapted so that a key matching
// no entry is dropped: the table's root inherits Drop without paying for an
// entry, and Drop is otherwise an ordinary action that may be emitted below a
// forwarding prefix.
//
// The controller uses it per switch on destination pseudo-MAC tables, which
// become TCAM value/mask rules ordered by Priority.
package compaction

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Drop is the action of a key that must not be forwarded. A key that matches
// no entry is dropped too.
const Drop int32 = -1

// MaxWidth is the widest key Compact accepts.
const MaxWidth = 64

// A Prefix is the top Len bits of a Width-bit key. Value holds the key's bits
// right-aligned in a uint64; the Width-Len bits below the prefix are zero.
type Prefix struct {
	Value uint64
	Len   int
}

// An Entry forwards keys under Prefix to Action, an opaque next-hop id.
type Entry struct {
	Prefix Prefix
	Action int32
}

// Mask returns the value/mask form of p for a width-bit key: a key k matches
// p iff k&mask == p.Value.
func (p Prefix) Mask(width int) uint64 {
	if p.Len == 0 {
		return 0
	}
	return lowBits(width) &^ lowBits(width-p.Len)
}

// Contains reports whether key matches p in a width-bit key space.
func (p Prefix) Contains(width int, key uint64) bool {
	return key&p.Mask(width) == p.Value
}

func (p Prefix) String() string { return fmt.Sprintf("%#x/%d", p.Value, p.Len) }

// lowBits returns a mask of the n lowest bits (n in 0..64).
func lowBits(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return uint64(1)<<uint(n) - 1
}

// PriorityBase is the lowest OpenFlow priority Priority returns; the range
// PriorityBase..PriorityBase+MaxWidth stays far below 65535 and above the
// table-miss priority 0, leaving room for other rule classes on either side.
const PriorityBase = 1000

// Priority returns an OpenFlow priority that realises longest-prefix match:
// a longer prefix always gets a higher priority. Prefixes of equal length
// never overlap, so equal priorities are unambiguous.
func Priority(p Prefix) int { return PriorityIn(PriorityBase, p) }

// PriorityIn is Priority with a caller-chosen base; it uses base..base+64.
func PriorityIn(base int, p Prefix) int { return base + p.Len }

// Lookup returns the action of the longest prefix in table that matches key,
// or Drop when none matches. It is a linear reference implementation for
// tests and verification, not a fast path. When a table holds the same prefix
// twice, the first occurrence wins.
func Lookup(table []Entry, width int, key uint64) int32 {
	best, act := -1, Drop
	for _, e := range table {
		if e.Prefix.Len > best && e.Prefix.Contains(width, key) {
			best, act = e.Prefix.Len, e.Action
		}
	}
	return act
}

// Validate checks that p is a well-formed prefix of a width-bit key.
func (p Prefix) Validate(width int) error {
	if p.Len < 0 || p.Len > width {
		return fmt.Errorf("prefix %v: length outside 0..%d", p, width)
	}
	if p.Value&^p.Mask(width) != 0 {
		return fmt.Errorf("prefix %v: bits set outside the top %d of %d", p, p.Len, width)
	}
	return nil
}

// ErrConflict is wrapped by Compact's error when one prefix appears twice
// with different actions.
var ErrConflict = errors.New("same prefix with different actions")

// node is a node of a path-compressed binary trie: an input prefix, a
// branching point, or the root. The single-child chains that compression
// removes, and the missing children of a node, are ORTC's normalising
// leaves and chain nodes; their candidate sets follow in closed form from
// the node below and the action in force above (see sideSet), so they are
// never materialised and the work is linear in the input, not in
// input × width.
type node struct {
	value uint64
	len   int32
	own   int32    // dense index of this exact prefix's action, or -1
	eff   int32    // dense index of the action in force at this prefix
	child [2]int32 // 0 = absent (the root, index 0, is never a child)
}

// compactor holds one run's state. Action sets are bitsets over dense action
// indices (index 0 is Drop), words uint64s per node in sets.
type compactor struct {
	width   int
	in      []Entry // sorted by (value, len), deduplicated
	nodes   []node
	actions []int32 // dense index -> action
	dense   []int32 // per entry of in: dense action index
	words   int
	sets    []uint64
	side    [2][]uint64
	out     []Entry
}

// Compact returns a minimal set of entries that, under longest-prefix match
// with "no match = Drop", gives every width-bit key the action the input
// gives it under the same rule. Input prefixes may overlap and may carry
// Drop; a prefix repeated with the same action is accepted once, with a
// different action it is an error wrapping ErrConflict. The result is sorted
// by length then value and has no two entries with the same prefix. The
// input slice is not modified.
func Compact(width int, in []Entry) ([]Entry, error) {
	if width < 1 || width > MaxWidth {
		return nil, fmt.Errorf("compact: width %d outside 1..%d", width, MaxWidth)
	}
	c := &compactor{width: width}
	if err := c.prepare(in); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	c.nodes = make([]node, 1, 2*len(c.in)+1)
	c.nodes[0] = node{own: -1}
	lo := 0
	if len(c.in) > 0 && c.in[0].Prefix.Len == 0 {
		c.nodes[0].own = c.dense[0]
		lo = 1
	}
	c.build(0, lo, len(c.in))

	c.words = (len(c.actions) + 63) / 64
	c.sets = make([]uint64, (len(c.nodes)+2)*c.words)
	c.side[0] = c.sets[len(c.nodes)*c.words : (len(c.nodes)+1)*c.words]
	c.side[1] = c.sets[(len(c.nodes)+1)*c.words:]
	c.out = make([]Entry, 0, len(c.in)/2+1)
	c.candidates(0, 0) // the root's parent is "no match", i.e. Drop
	c.assign(0, 0)     // and Drop is in force above the root for free
	slices.SortFunc(c.out, func(a, b Entry) int {
		if a.Prefix.Len != b.Prefix.Len {
			return a.Prefix.Len - b.Prefix.Len
		}
		return cmp.Compare(a.Prefix.Value, b.Prefix.Value)
	})
	return c.out, nil
}

// prepare validates the input, sorts it so that every prefix precedes its
// descendants and each subtree is contiguous, removes duplicates, and maps
// actions to dense indices (Drop first, the rest ascending so the output
// does not depend on input order).
func (c *compactor) prepare(in []Entry) error {
	for i, e := range in {
		if err := e.Prefix.Validate(c.width); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	c.in = slices.Clone(in)
	slices.SortFunc(c.in, func(a, b Entry) int {
		if a.Prefix.Value != b.Prefix.Value {
			return cmp.Compare(a.Prefix.Value, b.Prefix.Value)
		}
		return a.Prefix.Len - b.Prefix.Len
	})
	c.actions = make([]int32, 0, 16)
	c.actions = append(c.actions, Drop)
	k := 0
	for i, e := range c.in {
		if i > 0 && e.Prefix == c.in[k-1].Prefix {
			if e.Action != c.in[k-1].Action {
				return fmt.Errorf("prefix %v: actions %d and %d: %w",
					e.Prefix, c.in[k-1].Action, e.Action, ErrConflict)
			}
			continue
		}
		c.in[k] = e
		k++
		c.actions = append(c.actions, e.Action)
	}
	c.in = c.in[:k]
	slices.Sort(c.actions[1:])
	c.actions = slices.Compact(c.actions) // Drop sorts first, so stays at 0
	c.dense = make([]int32, len(c.in))
	for i, e := range c.in {
		j, _ := slices.BinarySearch(c.actions, e.Action)
		c.dense[i] = int32(j)
	}
	return nil
}

// bit returns bit d (0 = most significant) of a width-bit key.
func (c *compactor) bit(v uint64, d int) int {
	return int(v>>uint(c.width-1-d)) & 1
}

// build attaches c.in[lo:hi], all strict descendants of node n, below n.
// Each side's entries are contiguous; their subtree root is their longest
// common prefix, which is the first entry itself when that entry is an
// ancestor of the rest (the sort puts an ancestor first).
func (c *compactor) build(n int32, lo, hi int) {
	d := int(c.nodes[n].len)
	// All of c.in[lo:hi] share n's top d bits and are sorted, so bit d
	// splits them in two runs.
	mid, hiS := lo, hi
	for mid < hiS {
		m := int(uint(mid+hiS) >> 1)
		if c.bit(c.in[m].Prefix.Value, d) == 0 {
			mid = m + 1
		} else {
			hiS = m
		}
	}
	for b, r := range [2][2]int{{lo, mid}, {mid, hi}} {
		lo, hi := r[0], r[1]
		if lo == hi {
			continue
		}
		first, last := c.in[lo].Prefix, c.in[hi-1].Prefix
		l := min(first.Len, bits.LeadingZeros64((first.Value^last.Value)<<uint(64-c.width)))
		ch := int32(len(c.nodes))
		nd := node{value: first.Value &^ lowBits(c.width-l), len: int32(l), own: -1}
		if l == first.Len {
			nd.own = c.dense[lo]
			lo++
		}
		c.nodes = append(c.nodes, nd)
		c.nodes[n].child[b] = ch
		c.build(ch, lo, hi)
	}
}

func (c *compactor) set(n int32) []uint64 {
	return c.sets[int(n)*c.words : (int(n)+1)*c.words]
}

func has(s []uint64, a int32) bool { return s[a>>6]&(1<<uint(a&63)) != 0 }

// sideSet writes into dst the ORTC candidate set of the uncompressed trie
// node on side b of n (one level below n). With e the action in force at n:
// a missing child is a normalising leaf, {e}. A child C directly below has
// its own set. Otherwise a chain of single-child nodes lies between, each
// with a normalising leaf {e} beside it: the lowest has {e} if e is in S(C)
// and S(C)∪{e} if not, and every higher one {e}.
func (c *compactor) sideSet(n int32, b int, dst []uint64) {
	nd := &c.nodes[n]
	e := nd.eff
	ch := nd.child[b]
	clear(dst)
	if ch == 0 {
		dst[e>>6] = 1 << uint(e&63)
		return
	}
	cs := c.set(ch)
	chain := int(c.nodes[ch].len - nd.len - 1)
	switch {
	case chain == 0:
		copy(dst, cs)
	case chain >= 2 || has(cs, e):
		dst[e>>6] = 1 << uint(e&63)
	default:
		copy(dst, cs)
		dst[e>>6] |= 1 << uint(e&63)
	}
}

// candidates is ORTC's pass 1 (push the action in force down; inh is the
// parent's) fused with pass 2 (bottom-up candidate sets: the intersection of
// the two sides' sets when non-empty, otherwise their union).
func (c *compactor) candidates(n int32, inh int32) {
	nd := &c.nodes[n]
	nd.eff = inh
	if nd.own >= 0 {
		nd.eff = nd.own
	}
	for _, ch := range nd.child {
		if ch != 0 {
			c.candidates(ch, nd.eff)
		}
	}
	l, r := c.side[0], c.side[1]
	c.sideSet(n, 0, l)
	c.sideSet(n, 1, r)
	s := c.set(n)
	var any uint64
	for i := range s {
		s[i] = l[i] & r[i]
		any |= s[i]
	}
	if any == 0 {
		for i := range s {
			s[i] = l[i] | r[i]
		}
	}
}

// assign is ORTC's pass 3: walking down, a node whose candidate set holds
// the action it inherits (inh) needs no entry; otherwise it gets one entry
// with a member of its set. Compressed chains and normalising leaves are
// handled in closed form, mirroring sideSet.
func (c *compactor) assign(n int32, inh int32) {
	nd := &c.nodes[n]
	cur := inh
	if s := c.set(n); !has(s, inh) {
		cur = c.pick(s)
		c.emit(nd.value, int(nd.len), cur)
	}
	e, d := nd.eff, int(nd.len)
	for b, ch := range nd.child {
		top := nd.value | uint64(b)<<uint(c.width-1-d) // the node on side b
		if ch == 0 {
			if cur != e { // a normalising leaf, set {e}
				c.emit(top, d+1, e)
			}
			continue
		}
		cn := &c.nodes[ch]
		chain := int(cn.len) - d - 1
		switch {
		case chain == 0:
			c.assign(ch, cur)
		case chain >= 2 || has(c.set(ch), e):
			// Every chain node's set is {e} (the lowest's contains e), so
			// at most the top one needs an entry and C inherits e.
			if cur != e {
				c.emit(top, d+1, e)
			}
			c.assign(ch, e)
		default:
			// One chain node with set S(C)∪{e}, e not in S(C), beside a
			// normalising leaf {e}.
			cs := c.set(ch)
			if cur != e && !has(cs, cur) {
				cur2 := min(c.pick(cs), e)
				c.emit(top, d+1, cur2)
				c.assignChainLeaf(cn, cur2, e)
				c.assign(ch, cur2)
			} else {
				c.assignChainLeaf(cn, cur, e)
				c.assign(ch, cur)
			}
		}
	}
}

// assignChainLeaf emits the normalising leaf beside compressed child cn when
// the action in force there, cur, is not its action e.
func (c *compactor) assignChainLeaf(cn *node, cur, e int32) {
	if cur == e {
		return
	}
	d := int(cn.len)
	v := (cn.value &^ lowBits(c.width-d+1)) | (^cn.value & (uint64(1) << uint(c.width-d)))
	c.emit(v, d, e)
}

// pick chooses the set member to emit: the lowest dense index, so Drop when
// it is a candidate, otherwise the smallest action id. Any member is optimal.
func (c *compactor) pick(s []uint64) int32 {
	for i, w := range s {
		if w != 0 {
			return int32(i*64 + bits.TrailingZeros64(w))
		}
	}
	panic("compaction: empty candidate set")
}

func (c *compactor) emit(value uint64, depth int, a int32) {
	c.out = append(c.out, Entry{Prefix: Prefix{Value: value, Len: depth}, Action: c.actions[a]})
}
