package controller

import (
	"fmt"
	"sort"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
)

// PortRef names one port of one switch.
type PortRef struct {
	Switch int `json:"switch"`
	Port   int `json:"port"`
}

// PauseFeeders is where a congested port's PAUSE goes (seed 004 Fig. 1:
// the global link of S_out does not pause; the local links into S_out do,
// once its buffers fill with their frames). Lossless Ethernet pauses an
// ingress link when the frames it brought cannot leave, so the links to
// pause when egress port P of switch D backs up are those whose frames can
// leave D on P. For every inter-switch port P of every switch D it lists
// the far ends (U, U's port towards D) of the ingress links I of D such
// that some frame U may forward on that link, under any set of paused
// ports, leaves D on P under some set of paused ports.
//
// Destinations are taken one host per switch: every table routes a remote
// switch's hosts alike until that switch, so one stands for all.
func PauseFeeders(ts *Tables) (map[PortRef][]PortRef, error) {
	top := ts.c.top
	var reps []addressing.MAC
	seen := map[int]bool{}
	for _, h := range top.Hosts {
		if !seen[h.Switch] {
			seen[h.Switch] = true
			reps = append(reps, ts.c.plan.HostMAC(h.ID))
		}
	}
	inter := func(s *topology.Switch, port int32) bool {
		return port >= 1 && int(port) <= len(s.Ports) && s.Ports[port-1].Class != topology.ClassHost
	}
	// sends[U][q]: the representatives U may forward out inter-switch
	// port q, from any ingress port.
	sends := make([]map[int32][]int, len(top.Switches))
	for u := range top.Switches {
		s := &top.Switches[u]
		t, err := ts.Get(u)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", s.Name, err)
		}
		out := map[int32]map[int]bool{}
		for _, in := range s.Ports {
			for ri, mac := range reps {
				for _, r := range t.Choices(in.Num, mac, ethertype.Traffic) {
					for _, o := range r.Out {
						if o != int32(in.Num) && inter(s, o) {
							if out[o] == nil {
								out[o] = map[int]bool{}
							}
							out[o][ri] = true
						}
					}
				}
			}
		}
		sends[u] = map[int32][]int{}
		for o, set := range out {
			for ri := range set {
				sends[u][o] = append(sends[u][o], ri)
			}
		}
	}
	feeders := map[PortRef][]PortRef{}
	for d := range top.Switches {
		s := &top.Switches[d]
		t, err := ts.Get(d)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", s.Name, err)
		}
		for _, in := range s.Ports {
			if in.Class == topology.ClassHost {
				continue
			}
			up := PortRef{in.Peer.Switch, in.Peer.Port}
			outs := map[int32]bool{}
			for _, ri := range sends[up.Switch][int32(up.Port)] {
				for _, r := range t.Choices(in.Num, reps[ri], ethertype.Traffic) {
					for _, o := range r.Out {
						if o != int32(in.Num) && inter(s, o) {
							outs[o] = true
						}
					}
				}
			}
			for o := range outs {
				k := PortRef{d, int(o)}
				feeders[k] = append(feeders[k], up)
			}
		}
	}
	for k := range feeders {
		fs := feeders[k]
		sort.Slice(fs, func(i, j int) bool {
			if fs[i].Switch != fs[j].Switch {
				return fs[i].Switch < fs[j].Switch
			}
			return fs[i].Port < fs[j].Port
		})
	}
	return feeders, nil
}
