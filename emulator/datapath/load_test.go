package datapath

import (
	"os"
	"testing"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/topology"
)

// withQueues has the program count every inter-switch port's queue, held
// to limit bytes.
func withQueues(top *topology.Topology, ports []PortRef, limit uint64) []PortRef {
	peer := map[uint32]uint32{}
	for _, l := range top.Links {
		if l.Host >= 0 {
			continue
		}
		a, b := ifindexOf(l.A.Switch, l.A.Port), ifindexOf(l.B.Switch, l.B.Port)
		peer[a], peer[b] = b, a
	}
	out := append([]PortRef(nil), ports...)
	for i := range out {
		if p, ok := peer[out[i].Ifindex]; ok {
			out[i].Peer, out[i].QueueLimit = p, limit
		}
	}
	return out
}

// TestLoadPassesTheVerifier loads the program with every case's maps and
// reaches them again by ID, as another process would.
func TestLoadPassesTheVerifier(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for i, c := range cases {
		top, _, tables, ports := fabric(t, c)
		if c.opts.Mode == controller.Conditional {
			ports = withQueues(top, ports, 64<<10)
		}
		img, err := Build(tables, ports)
		if err != nil {
			t.Fatal(err)
		}
		cache := i%2 == 0      // both programs the flow_cache constant makes
		reroutable := i%3 == 1 // and the reroutable one, with and without the cache
		prio := i%2 == 1       // CNMs ahead of the queues (send_cnm), with and without the queue counters
		l, err := Load(img, LoadOptions{FlowCache: cache, Reroutable: reroutable, CNMPriority: prio})
		if err != nil {
			t.Fatalf("%s %s (flow cache %v, reroutable %v): %v", c.spec, c.opts.Mode, cache, reroutable, err)
		}
		if (l.IDs().Gens != 0) != reroutable {
			t.Fatalf("%s %s: reroutable %v, generations map id %d", c.spec, c.opts.Mode, reroutable, l.IDs().Gens)
		}
		h, err := Open(l.IDs())
		if err != nil {
			l.Close()
			t.Fatal(err)
		}
		if want := c.opts.Mode == controller.Conditional; h.HasQueues() != want {
			t.Fatalf("%s %s: queue counters %v, want %v", c.spec, c.opts.Mode, h.HasQueues(), want)
		}
		if h.HasQueues() {
			qr, err := h.Queues()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ports {
				if q := qr.Read(p.Ifindex); q.Limit != p.QueueLimit || q.Backlog() != 0 {
					t.Fatalf("port %d of switch %d: queue %+v, want limit %d, empty", p.Port, p.Switch, q, p.QueueLimit)
				}
			}
			qr.Close()
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
