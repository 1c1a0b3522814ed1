package compaction

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// randTable builds n random, possibly overlapping prefixes over width bits
// with actions drawn from Drop and 1..nact. Duplicate prefixes are skipped.
func randTable(r *rand.Rand, width, n, nact int) []Entry {
	seen := map[Prefix]bool{}
	var t []Entry
	for len(t) < n {
		l := r.IntN(width + 1)
		v := r.Uint64() & Prefix{Len: l}.Mask(width)
		p := Prefix{Value: v, Len: l}
		if seen[p] {
			if len(seen) >= 1<<(width+1)-1 {
				break
			}
			continue
		}
		seen[p] = true
		a := int32(r.IntN(nact+1)) - 1 // -1 is Drop
		if a == 0 {
			a = Drop
		}
		t = append(t, Entry{Prefix: p, Action: a})
	}
	return t
}

// checkEquivalent compares in and out on every key of the width.
func checkEquivalent(t *testing.T, width int, in, out []Entry) {
	t.Helper()
	for k := uint64(0); k < 1<<width; k++ {
		if a, b := Lookup(in, width, k), Lookup(out, width, k); a != b {
			t.Fatalf("key %#x: input gives %d, compacted gives %d\nin=%v\nout=%v", k, a, b, in, out)
		}
	}
	seen := map[Prefix]bool{}
	for _, e := range out {
		if err := e.Prefix.Validate(width); err != nil {
			t.Fatalf("output entry %v: %v", e, err)
		}
		if seen[e.Prefix] {
			t.Fatalf("output repeats prefix %v", e.Prefix)
		}
		seen[e.Prefix] = true
	}
}

func TestCompactEquivalentRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		width := 8 + r.IntN(5)
		in := randTable(r, width, 1+r.IntN(80), 1+r.IntN(6))
		out, err := Compact(width, in)
		if err != nil {
			t.Fatal(err)
		}
		checkEquivalent(t, width, in, out)
		if len(out) > len(in) {
			t.Fatalf("compacted table grew: %d > %d entries", len(out), len(in))
		}
	}
}

// minDP is an independent exact optimum: the fewest entries of any prefix
// table reproducing the function f (f[k] = action of key k) over width bits,
// by dynamic programming over the complete trie. At each prefix either no
// entry exists (children inherit a) or one entry with some action b does.
func minDP(width int, f []int32, acts []int32) int {
	var cost func(lo, size int, a int32) int
	memo := map[[3]int]int{}
	idx := map[int32]int{}
	for i, a := range acts {
		idx[a] = i
	}
	cost = func(lo, size int, a int32) int {
		key := [3]int{lo, size, idx[a]}
		if v, ok := memo[key]; ok {
			return v
		}
		var best int
		if size == 1 {
			if f[lo] == a {
				best = 0
			} else {
				best = 1
			}
		} else {
			h := size / 2
			best = cost(lo, h, a) + cost(lo+h, h, a)
			for _, b := range acts {
				if b != a {
					if v := 1 + cost(lo, h, b) + cost(lo+h, h, b); v < best {
						best = v
					}
				}
			}
		}
		memo[key] = best
		return best
	}
	return cost(0, 1<<width, Drop)
}

func TestCompactOptimalAgainstDP(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 400; i++ {
		width := 3 + r.IntN(6)
		nact := 1 + r.IntN(4)
		in := randTable(r, width, 1+r.IntN(3*width), nact)
		out, err := Compact(width, in)
		if err != nil {
			t.Fatal(err)
		}
		checkEquivalent(t, width, in, out)
		f := make([]int32, 1<<width)
		for k := range f {
			f[k] = Lookup(in, width, uint64(k))
		}
		acts := []int32{Drop}
		for a := int32(1); a <= int32(nact); a++ {
			acts = append(acts, a)
		}
		if want := minDP(width, f, acts); len(out) != want {
			t.Fatalf("width %d: Compact gave %d entries, optimum is %d\nin=%v\nout=%v", width, len(out), want, in, out)
		}
	}
}

// TestCompactOptimalBruteForce checks optimality (and the DP above) against
// exhaustive enumeration: width 3, actions {Drop,1,2}, every prefix table
// of up to 5 entries, against all 3^8 key->action functions.
func TestCompactOptimalBruteForce(t *testing.T) {
	const width, maxSize = 3, 5
	acts := []int32{Drop, 1, 2}
	var prefixes []Prefix
	for l := 0; l <= width; l++ {
		for v := uint64(0); v < 1<<l; v++ {
			prefixes = append(prefixes, Prefix{Value: v << (width - l), Len: l})
		}
	}
	digit := func(a int32) int {
		if a == Drop {
			return 0
		}
		return int(a)
	}
	encode := func(tab []Entry) int {
		code := 0
		for k := 1<<width - 1; k >= 0; k-- {
			code = code*3 + digit(Lookup(tab, width, uint64(k)))
		}
		return code
	}
	best := map[int]int{}
	var tab []Entry
	var rec func(start int)
	rec = func(start int) {
		code := encode(tab)
		if v, ok := best[code]; !ok || len(tab) < v {
			best[code] = len(tab)
		}
		if len(tab) == maxSize {
			return
		}
		for i := start; i < len(prefixes); i++ {
			for _, a := range acts {
				tab = append(tab, Entry{prefixes[i], a})
				rec(i + 1)
				tab = tab[:len(tab)-1]
			}
		}
	}
	rec(0)
	for code := 0; code < 6561; code++ {
		f := make([]int32, 1<<width)
		var in []Entry
		c := code
		for k := range f {
			f[k] = acts[c%3]
			c /= 3
			in = append(in, Entry{Prefix{uint64(k), width}, f[k]})
		}
		out, err := Compact(width, in)
		if err != nil {
			t.Fatal(err)
		}
		checkEquivalent(t, width, in, out)
		dp := minDP(width, f, acts)
		if want, ok := best[code]; ok {
			if len(out) != want || dp != want {
				t.Fatalf("function %v: Compact %d, DP %d, brute force %d entries", f, len(out), dp, want)
			}
		} else if len(out) <= maxSize || dp <= maxSize {
			t.Fatalf("function %v: brute force needs > %d entries, Compact %d, DP %d", f, maxSize, len(out), dp)
		}
	}
}

func TestCompactKnownCases(t *testing.T) {
	host := func(v uint64, a int32) Entry { return Entry{Prefix{v, 8}, a} }
	cases := []struct {
		name  string
		width int
		in    []Entry
		want  []Entry
	}{
		{"8 aligned on one port", 8,
			[]Entry{host(8, 3), host(9, 3), host(10, 3), host(11, 3), host(12, 3), host(13, 3), host(14, 3), host(15, 3)},
			[]Entry{{Prefix{8, 5}, 3}}},
		{"block of 4 with a hole", 8,
			[]Entry{host(4, 1), host(5, 1), host(6, 2), host(7, 1)},
			[]Entry{{Prefix{4, 6}, 1}, {Prefix{6, 8}, 2}}},
		{"drop hole below a route", 8,
			[]Entry{{Prefix{0, 1}, 1}, host(5, Drop)},
			[]Entry{{Prefix{0, 1}, 1}, {Prefix{5, 8}, Drop}}},
		{"explicit drop everywhere", 8,
			[]Entry{{Prefix{0, 0}, Drop}, host(5, Drop)},
			nil},
		{"two halves make a default", 8,
			[]Entry{{Prefix{0, 1}, 7}, {Prefix{0x80, 1}, 7}},
			[]Entry{{Prefix{0, 0}, 7}}},
		{"full width 48", 48,
			[]Entry{{Prefix{0x0200_0000_0000, 8}, 1}, {Prefix{0x0200_0000_0001, 48}, 2}},
			[]Entry{{Prefix{0x0200_0000_0000, 8}, 1}, {Prefix{0x0200_0000_0001, 48}, 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Compact(tc.width, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(tc.want) {
				t.Fatalf("got %v, want %v", out, tc.want)
			}
			for i := range out {
				if out[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", out, tc.want)
				}
			}
			if tc.width <= 16 {
				checkEquivalent(t, tc.width, tc.in, out)
			}
		})
	}
}

func TestCompactErrors(t *testing.T) {
	_, err := Compact(8, []Entry{{Prefix{4, 6}, 1}, {Prefix{4, 6}, 2}})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("conflicting duplicate: got %v, want ErrConflict", err)
	}
	if _, err := Compact(8, []Entry{{Prefix{4, 6}, 1}, {Prefix{4, 6}, 1}}); err != nil {
		t.Fatalf("identical duplicate: %v", err)
	}
	bad := []Entry{
		{Prefix{1, 6}, 1},   // bit below the prefix
		{Prefix{256, 8}, 1}, // bit above the width
		{Prefix{0, 9}, 1},   // longer than the width
		{Prefix{0, -1}, 1},
	}
	for _, e := range bad {
		if _, err := Compact(8, []Entry{e}); err == nil {
			t.Errorf("entry %v accepted", e)
		}
	}
	for _, w := range []int{0, 65} {
		if _, err := Compact(w, nil); err == nil {
			t.Errorf("width %d accepted", w)
		}
	}
}

func TestPriorityOrdersByLength(t *testing.T) {
	if Priority(Prefix{0, 0}) <= 0 || Priority(Prefix{0, 48}) > 65535 {
		t.Fatalf("priorities %d..%d outside OpenFlow's 1..65535", Priority(Prefix{0, 0}), Priority(Prefix{0, 48}))
	}
	for l := 0; l < MaxWidth; l++ {
		if Priority(Prefix{0, l}) >= Priority(Prefix{0, l + 1}) {
			t.Fatalf("length %d does not rank below %d", l, l+1)
		}
	}
}

// FuzzCompact derives a table from the fuzz input: a width byte, then three
// bytes per entry (length, value, action). Values are shifted into place, so
// every input is a valid table except for conflicting duplicates.
func FuzzCompact(f *testing.F) {
	f.Add([]byte{8, 5, 1, 3, 8, 0x7f, 0xff})
	f.Add([]byte{10, 0, 0, 2, 10, 3, 0, 4, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		width := 1 + int(data[0])%12
		data = data[1:]
		var in []Entry
		have := map[Prefix]int32{}
		for ; len(data) >= 3; data = data[3:] {
			l := int(data[0]) % (width + 1)
			v := (uint64(data[1])<<8 | uint64(data[2])) & lowBits(l)
			a := int32(data[2]>>4)%5 - 1
			p := Prefix{Value: v << uint(width-l), Len: l}
			if old, ok := have[p]; ok && old != a {
				continue
			}
			have[p] = a
			in = append(in, Entry{p, a})
		}
		out, err := Compact(width, in)
		if err != nil {
			t.Fatal(err)
		}
		checkEquivalent(t, width, in, out)
	})
}
