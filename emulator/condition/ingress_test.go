package condition

import (
	"testing"

	"github.com/ethfab/ethfab/internal/topotest"
	"github.com/ethfab/ethfab/topology"
)

// The sources whose frames a switch's conditions decide: its own hosts on
// a direct topology; on a Clos every host below, by the down port its
// frames climb through.
func TestClimbIngress(t *testing.T) {
	build := func(spec string) *topology.Topology { return topotest.Build(t, spec) }
	df := build("dragonfly:p=2,a=4,h=2")
	for i := range df.Switches {
		in := climbIngress(df, i)
		if len(in) != 2 {
			t.Fatalf("dragonfly switch %d: %d sources, want its 2 hosts", i, len(in))
		}
		for h, port := range in {
			if df.Hosts[h].Switch != i || df.Switches[i].Ports[port-1].Host != h {
				t.Fatalf("dragonfly switch %d: host %d via port %d", i, h, port)
			}
		}
	}
	clos := build("clos:k=4")
	for i, s := range clos.Switches {
		in := climbIngress(clos, i)
		for h, port := range in {
			// Following port down must reach h's edge switch.
			p := s.Ports[port-1]
			if p.Class == topology.ClassHost {
				if p.Host != h {
					t.Fatalf("clos switch %d: host %d via host port %d of host %d", i, h, port, p.Host)
				}
				continue
			}
			if p.Up || clos.Switches[p.Peer.Switch].Level >= s.Level {
				t.Fatalf("clos switch %d: host %d via port %d, which does not go down", i, h, port)
			}
			if e := clos.Hosts[h].Switch; e != p.Peer.Switch && s.Level == 2 {
				t.Fatalf("clos switch %d: host %d (edge %d) via port %d to switch %d", i, h, e, port, p.Peer.Switch)
			}
		}
		// Levels count from 1 at the edge; k=4: 2 hosts per edge switch,
		// 4 per pod, 16 under a core switch.
		if want := map[int]int{1: 2, 2: 4, 3: 16}[s.Level]; len(in) != want {
			t.Errorf("clos switch %d (level %d): %d sources, want %d", i, s.Level, len(in), want)
		}
	}
}
