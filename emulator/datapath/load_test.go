package datapath

import (
	"os"
	"testing"
)

// TestLoadPassesTheVerifier loads the program with every case's maps and
// reaches them again by ID, as another process would.
func TestLoadPassesTheVerifier(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for i, c := range cases {
		_, _, tables, ports := fabric(t, c)
		img, err := Build(tables, ports)
		if err != nil {
			t.Fatal(err)
		}
		cache := i%2 == 0 // both programs the flow_cache constant makes
		l, err := Load(img, cache)
		if err != nil {
			t.Fatalf("%s %s (flow cache %v): %v", c.spec, c.opts.Mode, cache, err)
		}
		h, err := Open(l.IDs())
		if err != nil {
			l.Close()
			t.Fatal(err)
		}
		if err := h.SetCondition(1, 0b101); err != nil {
			t.Fatal(err)
		}
		if m, err := h.Condition(1); err != nil || m != 0b101 {
			t.Fatalf("condition read back %#x, %v", m, err)
		}
		cs, err := h.ReadCounters()
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != len(tables) {
			t.Fatalf("%d switches' counters, want %d", len(cs), len(tables))
		}
		h.Close()
		l.Close()
	}
}
