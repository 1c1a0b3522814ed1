package controller

import (
	"fmt"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
)

// flatFlyShapes lists every Flattened Butterfly of 1 to maxDims dimensions
// of 2 to 6 switches each, in every order (the address layout is not
// symmetric in the dimensions).
func flatFlyShapes(maxDims int) [][]int {
	var out [][]int
	var grow func(dims []int)
	grow = func(dims []int) {
		if len(dims) > 0 {
			out = append(out, append([]int(nil), dims...))
		}
		if len(dims) == maxDims {
			return
		}
		for k := 2; k <= 6; k++ {
			grow(append(dims, k))
		}
	}
	grow(nil)
	return out
}

// Seed 000 §III-B: with the switch coordinates in separate sub-fields "a FB
// of any dimension can reach the minimum number of rules", its port count.
// Every shape of up to 4 dimensions of 2 to 6 switches, with 1 to 6 hosts
// per switch (4,680 fabrics, a million switches): the first, a middle and
// the last switch reach the port count (the count does not depend on the
// coordinates: every switch gets one entry per neighbour before
// compaction), and the table walk delivers every host pair of the fabrics
// of up to fullWalk switches, with broadcasts and DMP, and a seeded
// sample of pairs of the larger ones. Compiling every switch of every
// fabric would take 40 s of CPU; the larger fabrics' tables differ from the
// smaller ones' only in the sub-fields' values. Building the fabrics and
// walking the samples take about 12 s of CPU on a 2-core VM, so -short
// gives each 4-dimension shape one host count (in turn) and takes 3 s.
func TestCompactFlatFlyReachesPortCountOnEveryShape(t *testing.T) {
	const fullWalk, samplePairs = 36, 4
	shapes := flatFlyShapes(4)
	var full, sampled int
	for i, dims := range shapes {
		for hosts := 1; hosts <= 6; hosts++ {
			if testing.Short() && len(dims) == 4 && hosts != 1+i%6 {
				continue
			}
			sp := topology.Spec{Kind: topology.FlatFly, Dims: dims, T: hosts}
			c := compileSpec(t, sp, addressing.PerGroup, Options{Compact: true})
			n := len(c.top.Switches)
			for _, sw := range []int{0, n / 2, n - 1} {
				tab, err := c.Table(sw)
				if err != nil {
					t.Fatal(err)
				}
				if got, ports := tab.Count(KindRouting), len(c.top.Switches[sw].Ports); got != ports {
					t.Fatalf("%s: %s has %d routing rules, port count %d", sp, c.top.Switches[sw].Name, got, ports)
				}
			}
			o := VerifyOptions{Seed: int64(n*7 + hosts), Workers: 1}
			if n > fullWalk {
				o.MaxPairs, o.UnicastOnly = samplePairs, true
				sampled++
			} else {
				full++
			}
			r, err := Verify(NewTables(c), o)
			if err != nil {
				t.Fatalf("%s: %v", sp, err)
			}
			if r.Failures+r.BroadcastFailures+r.DMPFailures != 0 || r.MaxHops > r.HopBound || r.Sampled != o.UnicastOnly {
				t.Fatalf("%s: %d unicast, %d broadcast, %d DMP failures, %d hops (bound %d), e.g. %+v",
					sp, r.Failures, r.BroadcastFailures, r.DMPFailures, r.MaxHops, r.HopBound, r.Examples)
			}
		}
	}
	t.Logf("%d fabrics walked in full, %d sampled", full, sampled)
}

// The compact layout routes an address by its coordinate sub-fields alone
// and wildcards the sub-fields below, so codes that no switch has are
// forwarded until they are the highest differing sub-field (see
// coordEntries). Walk such addresses from every port of every switch, in
// every routing mode: each frame must be dropped, or delivered only to the
// host that owns the address, within the hop bound.
func TestCompactFlatFlyWildcardsCannotLoop(t *testing.T) {
	for _, spec := range []string{"flatfly:dims=3x3x3,t=3", "flatfly:dims=5x2x3,t=2", "flatfly:dims=2x3x2x3,t=1", "flatfly:dims=6,t=5"} {
		for _, mode := range []Mode{Minimal, Valiant, Conditional} {
			name := fmt.Sprintf("%s/%s", spec, mode)
			c := compile(t, spec, addressing.PerGroup, Options{Mode: mode, Compact: true})
			ts := NewTables(c)
			owned := map[addressing.MAC]bool{}
			for h := range c.top.Hosts {
				owned[c.plan.HostMAC(h)] = true
			}
			addrs, forwarded := strayAddresses(c.plan), 0
			for sw := range c.top.Switches {
				for _, p := range c.top.Switches[sw].Ports {
					for _, l := range addrs {
						dst := addressing.ToMAC(l)
						hops, err := walkStray(ts, sw, p.Num, dst, 0)
						if err != nil {
							t.Fatalf("%s: from %s port %d: %v", name, c.top.Switches[sw].Name, p.Num, err)
						}
						if hops > 0 && !owned[dst] {
							forwarded++
						}
					}
				}
			}
			// The wildcards must have carried some stray addresses across
			// switches, or the walk tested nothing.
			if forwarded == 0 {
				t.Fatalf("%s: no address that no host has left its first switch", name)
			}
		}
	}
}

// strayAddresses are the logical addresses made of, in each field, every
// code some host has, the first code none has, and the field's last code.
func strayAddresses(p *addressing.Plan) []uint64 {
	ls := []uint64{0}
	for _, f := range p.Fields {
		hi := 0
		for h := range p.Topology().Hosts {
			hi = max(hi, int(p.HostAddr(h)>>f.Shift&(1<<f.Width-1)))
		}
		codes := []uint64{}
		for v := 0; v <= hi+1; v++ {
			codes = append(codes, uint64(v))
		}
		codes = append(codes, 1<<f.Width-1)
		var next []uint64
		for _, l := range ls {
			for _, v := range codes {
				next = append(next, l|v<<f.Shift)
			}
		}
		ls = next
	}
	return ls
}

// walkStray follows a unicast frame along every path the tables allow (in
// conditional mode, under every set of paused ports) and returns the most
// inter-switch hops it took.
func walkStray(ts *Tables, sw, in int, dst addressing.MAC, hops int) (int, error) {
	c := ts.c
	if hops > c.HopBound() {
		return hops, fmt.Errorf("%s: more than %d inter-switch hops", dst, c.HopBound())
	}
	tab, err := ts.Get(sw)
	if err != nil {
		return hops, err
	}
	most := hops
	for _, r := range tab.Choices(in, dst, ethertype.Traffic) {
		if len(r.Out) != 1 || r.Out[0] == PortInPort || int(r.Out[0]) == in {
			continue // dropped (a drop rule, or OpenFlow's rule against the ingress port)
		}
		p := c.top.Switches[sw].Port(int(r.Out[0]))
		if p.Class == topology.ClassHost {
			if c.plan.HostMAC(p.Host) != dst {
				return hops, fmt.Errorf("%s delivered to %s", dst, c.top.Hosts[p.Host].Name)
			}
			continue
		}
		h, err := walkStray(ts, p.Peer.Switch, p.Peer.Port, dst, hops+1)
		if err != nil {
			return h, err
		}
		most = max(most, h)
	}
	return most, nil
}
