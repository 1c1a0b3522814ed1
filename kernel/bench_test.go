package kernel

import (
	"fmt"
	"os"
	"testing"
)

// BenchmarkStatsIndex is the cost of one poll of one link's queue, the
// operation PAUSE emulation repeats per port.
func BenchmarkStatsIndex(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	ns := fmt.Sprintf("%sbench-%d", testPrefix, b.N)
	created, err := CreateNamespaces([]string{ns})
	defer DeleteNamespaces(created)
	if err != nil {
		b.Fatal(err)
	}
	if err := CreateVeths([]Veth{{A: VethEnd{NS: ns, Name: "a"}, B: VethEnd{NS: ns, Name: "b"}}}, 1); err != nil {
		b.Fatal(err)
	}
	if err := Shape(ns, "a", Shaping{RateBps: 1e9}); err != nil {
		b.Fatal(err)
	}
	r, err := NewStatsReader(ns)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	idx, err := r.Index("a")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.StatsIndex(idx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatsAll is the cost of one dump of every link's queue in a
// namespace of 252 tbf-shaped links (DF(2,4,2)'s switch ports): what the
// condition monitor pays every millisecond and the sampler every interval.
func BenchmarkStatsAll(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	ns := fmt.Sprintf("%sball-%d", testPrefix, b.N)
	created, err := CreateNamespaces([]string{ns})
	defer DeleteNamespaces(created)
	if err != nil {
		b.Fatal(err)
	}
	var pairs []Veth
	for i := range 126 {
		pairs = append(pairs, Veth{A: VethEnd{NS: ns, Name: fmt.Sprintf("a%d", i)}, B: VethEnd{NS: ns, Name: fmt.Sprintf("b%d", i)}})
	}
	if err := CreateVeths(pairs, 1); err != nil {
		b.Fatal(err)
	}
	for _, p := range pairs {
		for _, e := range []string{p.A.Name, p.B.Name} {
			if err := Shape(ns, e, Shaping{RateBps: 1e9}); err != nil {
				b.Fatal(err)
			}
		}
	}
	r, err := NewStatsReader(ns)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		all, err := r.All()
		if err != nil {
			b.Fatal(err)
		}
		if len(all) < 252 { // and the loopback's noqueue
			b.Fatalf("%d links, want 252 and lo", len(all))
		}
	}
}
