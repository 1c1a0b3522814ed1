package compaction

import (
	"math/rand/v2"
	"testing"
)

// dragonflyTable imitates one Dragonfly switch's hierarchical table over a
// 26-bit key (12-bit group, 7-bit switch, 7-bit host): its own hosts, the
// other switches of its group, and every remote group, reached through the
// switch's own global ports or the local port towards the switch owning the
// global link. h groups per switch, so blocks are not power-of-2 aligned.
func dragonflyTable(groups, switches, hosts, h int) []Entry {
	const width, gb, sb, hb = 26, 12, 7, 7
	const me, myGroup = 0, 0
	var t []Entry
	for x := 0; x < hosts; x++ {
		t = append(t, Entry{Prefix{uint64(myGroup)<<(sb+hb) | uint64(me)<<hb | uint64(x), width}, int32(1 + x)})
	}
	for s := 1; s < switches; s++ {
		t = append(t, Entry{Prefix{uint64(myGroup)<<(sb+hb) | uint64(s)<<hb, gb + sb}, int32(hosts + s)})
	}
	for g := 1; g < groups; g++ {
		owner := (g - 1) / h // switch in my group owning the global link to g
		port := int32(hosts + owner)
		if owner == me {
			port = int32(hosts + switches + (g-1)%h)
		}
		t = append(t, Entry{Prefix{uint64(g) << (sb + hb), gb}, port})
	}
	return t
}

func BenchmarkCompactDragonfly(b *testing.B) {
	// a=32 switches/group, h=16 global ports, 8 hosts, 480 groups: 519 entries.
	in := dragonflyTable(480, 32, 8, 16)
	b.ReportMetric(float64(len(in)), "entries_in")
	var out []Entry
	for b.Loop() {
		var err error
		if out, err = Compact(26, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(out)), "entries_out")
}

func BenchmarkCompactRandom(b *testing.B) {
	// Worst case for trie sharing: 515 unrelated prefixes of 20..30 bits
	// in a 30-bit key, 48 next hops plus Drop.
	r := rand.New(rand.NewPCG(5, 6))
	in := make([]Entry, 0, 515)
	seen := map[Prefix]bool{}
	for len(in) < 515 {
		l := 20 + r.IntN(11)
		p := Prefix{r.Uint64() & Prefix{Len: l}.Mask(30), l}
		if !seen[p] {
			seen[p] = true
			in = append(in, Entry{p, int32(r.IntN(49)) - 1})
		}
	}
	var out []Entry
	for b.Loop() {
		var err error
		if out, err = Compact(30, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(out)), "entries_out")
}

func TestDragonflyTableCompacts(t *testing.T) {
	in := dragonflyTable(480, 32, 8, 16)
	out, err := Compact(26, in)
	if err != nil {
		t.Fatal(err)
	}
	// Spot-check equivalence on every group/switch/host boundary key and
	// random keys; 2^26 keys is too many for a unit test.
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 200000; i++ {
		k := r.Uint64() & lowBits(26)
		if i%2 == 0 {
			k &^= lowBits(7) // a host address with host index 0, a likelier edge
		}
		if a, b := Lookup(in, 26, k), Lookup(out, 26, k); a != b {
			t.Fatalf("key %#x: input %d, compacted %d", k, a, b)
		}
	}
	if len(out) >= len(in) {
		t.Fatalf("no compaction: %d -> %d", len(in), len(out))
	}
	t.Logf("dragonfly switch table: %d -> %d entries", len(in), len(out))
}
