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
