package controller

import (
	"math/rand"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
)

// Seed 004 Fig. 1: under ADV the local links into S_out are what pause,
// so a Dragonfly global port must be fed by every local link into its
// switch; and minimal or Valiant routing never takes a local hop right
// after another, so no local link feeds a local port.
func TestPauseFeedersDragonfly(t *testing.T) {
	ctl := compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, Options{Mode: Conditional})
	top := ctl.plan.Topology()
	f, err := PauseFeeders(NewTables(ctl))
	if err != nil {
		t.Fatal(err)
	}
	for d := range top.Switches {
		s := &top.Switches[d]
		for _, p := range s.Ports {
			fs := f[PortRef{d, p.Num}]
			has := map[PortRef]bool{}
			for _, x := range fs {
				has[x] = true
				if x.Switch == d {
					t.Fatalf("%s port %d fed by itself", s.Name, p.Num)
				}
			}
			switch p.Class {
			case topology.ClassGlobal:
				for _, in := range s.Ports {
					if in.Class == topology.ClassLocal && !has[PortRef{in.Peer.Switch, in.Peer.Port}] {
						t.Errorf("%s global port %d: local link from %s not among its feeders %v", s.Name, p.Num, top.Switches[in.Peer.Switch].Name, fs)
					}
				}
			case topology.ClassLocal:
				for _, x := range fs {
					if top.Switches[x.Switch].Group == s.Group {
						t.Errorf("%s local port %d fed by local link from %s", s.Name, p.Num, top.Switches[x.Switch].Name)
					}
				}
			case topology.ClassHost:
				if len(fs) > 0 {
					t.Errorf("%s host port %d has feeders %v", s.Name, p.Num, fs)
				}
			}
		}
	}
}

// Every hop of every path some set of pauses can make a frame take (Choices
// at random at each switch) is covered: the link it came in on is a feeder
// of the port it leaves on. Otherwise a congested port would leave some of
// the links filling it unpaused.
func TestPauseFeedersCoverEveryPath(t *testing.T) {
	for _, c := range []struct {
		spec string
		mode Mode
	}{
		{"dragonfly:p=2,a=4,h=2", Conditional},
		{"dragonfly:p=2,a=4,h=2", Minimal},
		{"dragonfly:p=2,a=4,h=2", Valiant},
		{"flatfly:dims=4x4,t=3", Conditional},
		{"clos:k=6", Conditional},
	} {
		ctl := compile(t, c.spec, addressing.PerGroup, Options{Mode: c.mode})
		top := ctl.plan.Topology()
		ts := NewTables(ctl)
		f, err := PauseFeeders(ts)
		if err != nil {
			t.Fatal(err)
		}
		feeds := map[[2]PortRef]bool{}
		for k, fs := range f {
			for _, x := range fs {
				feeds[[2]PortRef{k, x}] = true
			}
		}
		rng := rand.New(rand.NewSource(1))
		hops := 0
		for i := 0; i < 3000; i++ {
			src, dst := rng.Intn(len(top.Hosts)), rng.Intn(len(top.Hosts))
			if src == dst {
				continue
			}
			mac := ctl.plan.HostMAC(dst)
			sw, in := top.Hosts[src].Switch, 0
			for _, p := range top.Switches[sw].Ports {
				if p.Host == src {
					in = p.Num
				}
			}
			var from PortRef // the upstream end of the link the frame came in on
			for n := 0; ; n++ {
				if n > 10 {
					t.Fatalf("%s %s: %d -> %d loops", c.spec, c.mode, src, dst)
				}
				tab, err := ts.Get(sw)
				if err != nil {
					t.Fatal(err)
				}
				ch := tab.Choices(in, mac, ethertype.Traffic)
				if len(ch) == 0 {
					t.Fatalf("%s %s: %d -> %d dropped at %s", c.spec, c.mode, src, dst, top.Switches[sw].Name)
				}
				r := ch[rng.Intn(len(ch))]
				out := int(r.Out[rng.Intn(len(r.Out))])
				p := top.Switches[sw].Ports[out-1]
				if p.Class == topology.ClassHost {
					break
				}
				if n > 0 {
					hops++
					if !feeds[[2]PortRef{{sw, out}, from}] {
						t.Fatalf("%s %s: %d -> %d enters %s from %s port %d and leaves on port %d, which does not list that link among its feeders",
							c.spec, c.mode, src, dst, top.Switches[sw].Name, top.Switches[from.Switch].Name, from.Port, out)
					}
				}
				from = PortRef{sw, out}
				sw, in = p.Peer.Switch, p.Peer.Port
			}
		}
		if hops == 0 {
			t.Fatalf("%s %s: no transit hop checked", c.spec, c.mode)
		}
	}
}
