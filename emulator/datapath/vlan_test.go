package datapath

import (
	"fmt"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// vlanCases are seed 002's topologies under both assignments, with tagged
// host ports and with links off.
var vlanCases = []struct {
	spec   string
	assign vlan.Method
	tagged []int    // host IDs on tagged ports
	off    []string // switch pairs "a:b" whose links are off
}{
	{"mesh:dims=4x4", vlan.Fixed, nil, nil},
	{"mesh:dims=4x4", vlan.Renamed, nil, nil},
	{"mesh:dims=3x3,t=2", vlan.Fixed, []int{0, 5, 17}, nil},
	{"mesh:dims=3x3,t=2", vlan.Renamed, []int{0, 5, 17}, []string{"s1-1:s1-0"}},
	{"mesh:dims=3x3", vlan.Fixed, nil, []string{"s1-1:s1-0"}},
	{"torus:dims=4x4,links=2", vlan.Renamed, nil, nil},
	{"torus:dims=3x3,links=2", vlan.Fixed, []int{1, 4}, nil},
	{"torus:dims=4x4,links=2", vlan.Renamed, nil, []string{"s0-0:s1-0"}},
	{"fattree:u=2,d=4,r=2", vlan.Fixed, []int{0, 9}, nil},
	{"fattree:u=2,d=4,r=2", vlan.Renamed, nil, nil},
	{"ring:n=4,t=2,links=2", vlan.Renamed, nil, nil},
	{"myriclos:n=16", vlan.Fixed, nil, nil},
}

// vlanImage compiles a case's tables as the controller does for a lab
// and translates them; off is the links off, resolved.
func vlanImage(t *testing.T, spec string, m vlan.Method, tagged []int, offNames []string) (*topology.Topology, *addressing.Plan, *vlan.Assignment, vlan.Off, *Image) {
	t.Helper()
	top := buildSpec(t, spec)
	off, err := vlan.OffByName(top, splitPairs(offNames))
	if err != nil {
		t.Fatal(err)
	}
	plan, ctl, tables, ports := compileOn(t, top, addressing.Flat,
		controller.Options{Mode: controller.VLAN, VLANAssign: m, VLANOff: off, VLANTagged: tagged})
	img, err := Build(tables, ports)
	if err != nil {
		t.Fatalf("%s %s: %v", spec, m, err)
	}
	return top, plan, ctl.VLANAssignment(), off, img
}

// wire says where a frame sent out of a switch port arrives: the far
// end's switch port, or a host (host >= 0).
type wire struct {
	sw, port, host int
}

func wires(top *topology.Topology) map[uint32]wire {
	w := map[uint32]wire{}
	for _, l := range top.Links {
		if l.Host >= 0 {
			w[ifindexOf(l.A.Switch, l.A.Port)] = wire{host: l.Host}
			continue
		}
		w[ifindexOf(l.A.Switch, l.A.Port)] = wire{sw: l.B.Switch, port: l.B.Port, host: -1}
		w[ifindexOf(l.B.Switch, l.B.Port)] = wire{sw: l.A.Switch, port: l.A.Port, host: -1}
	}
	return w
}

// TestVLANImageDeliversEveryPair runs the eBPF datapath's lookup (Forward,
// the program's algorithm on its maps) on frames between every ordered
// host pair, hop by hop over the topology's links, tags as the program
// writes them: each frame reaches its host along seed 002's path for the
// pair (the assignment's, around the links off), switch by switch and
// port by port, untagged on an untagged host's port and tagged on a
// tagged one's. A broadcast from every host reaches every other host
// exactly once in its VLAN (fixed) or at least once and terminates
// (renamed).
func TestVLANImageDeliversEveryPair(t *testing.T) {
	for _, c := range vlanCases {
		name := fmt.Sprintf("%s %s tagged %v off %v", c.spec, c.assign, c.tagged, c.off)
		top, plan, a, off, img := vlanImage(t, c.spec, c.assign, c.tagged, c.off)
		path := vlan.OffPaths(top, c.assign, vlan.Dateline, off)
		w := wires(top)
		// A host's frames enter its switch tagged with its port's VLAN
		// if the port is tagged, untagged otherwise.
		entry := func(h int) uint16 {
			hs := top.Hosts[h]
			if a.TaggedHosts[h] {
				return VLANPresent | uint16(a.Switches[hs.Switch].PVID[hs.Port-1])
			}
			return 0
		}
		pairs := 0
		for _, src := range top.Hosts {
			for _, dst := range top.Hosts {
				if src.ID == dst.ID {
					continue
				}
				want, err := path(src.Switch, src.Port, dst.Switch)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				sw, in, tci := src.Switch, src.Port, entry(src.ID)
				for hop := 0; ; hop++ {
					if hop >= len(want) {
						t.Fatalf("%s: %s -> %s: past the path's %d switches at %s", name, src.Name, dst.Name, len(want), top.Switches[sw].Name)
					}
					d, _ := img.Forward(ifindexOf(sw, in), plan.HostMAC(src.ID), plan.HostMAC(dst.ID), ethertype.Traffic, tci, 0)
					if len(d.Out) != 1 {
						t.Fatalf("%s: %s -> %s at %s (in port %d, tci %#x): %d outputs, want 1", name, src.Name, dst.Name, top.Switches[sw].Name, in, tci, len(d.Out))
					}
					h := want[hop]
					next := w[d.Out[0]]
					out := int(d.Out[0]) - int(ifindexOf(sw, 0))
					if h.Switch != sw || h.In != in || (h.Out != 0 && h.Out != out) {
						t.Fatalf("%s: %s -> %s: hop %d at %s in %d out %d; the path's is %s in %d out %d", name, src.Name, dst.Name, hop,
							top.Switches[sw].Name, in, out, top.Switches[h.Switch].Name, h.In, h.Out)
					}
					if next.host >= 0 {
						if next.host != dst.ID || hop != len(want)-1 {
							t.Fatalf("%s: %s -> %s delivered to host %d after %d switches", name, src.Name, dst.Name, next.host, hop+1)
						}
						if (d.OutTCI[0] != 0) != a.TaggedHosts[dst.ID] {
							t.Fatalf("%s: %s -> %s arrives with tci %#x; tagged port: %v", name, src.Name, dst.Name, d.OutTCI[0], a.TaggedHosts[dst.ID])
						}
						break
					}
					sw, in, tci = next.sw, next.port, d.OutTCI[0]
				}
				pairs++
			}
		}
		floods := 0
		for _, src := range top.Hosts {
			got, copies := map[int]int{}, 0
			type frame struct {
				sw, in int
				tci    uint16
			}
			queue := []frame{{src.Switch, src.Port, entry(src.ID)}}
			for len(queue) > 0 {
				f := queue[0]
				queue = queue[1:]
				if copies++; copies > 1<<20 { // vlan.Verify's bound
					t.Fatalf("%s: a broadcast from %s is still flooding after %d copies", name, src.Name, copies)
				}
				d, _ := img.Forward(ifindexOf(f.sw, f.in), plan.HostMAC(src.ID), controller.Broadcast, ethertype.Traffic, f.tci, 0)
				for i, o := range d.Out {
					if n := w[o]; n.host >= 0 {
						got[n.host]++
						if (d.OutTCI[i] != 0) != a.TaggedHosts[n.host] {
							t.Fatalf("%s: a broadcast from %s reaches %s with tci %#x", name, src.Name, top.Hosts[n.host].Name, d.OutTCI[i])
						}
					} else {
						queue = append(queue, frame{n.sw, n.port, d.OutTCI[i]})
					}
				}
			}
			floods += copies
			for _, h := range top.Hosts {
				if h.ID != src.ID && (got[h.ID] == 0 || c.assign == vlan.Fixed && got[h.ID] != 1) {
					t.Fatalf("%s: a broadcast from %s reached %s %d times", name, src.Name, h.Name, got[h.ID])
				}
			}
		}
		t.Logf("%s: %d pairs on their paths, %d broadcast copies, %d rules", name, pairs, floods, len(img.rules))
	}
}

func splitPairs(names []string) [][2]string {
	var pairs [][2]string
	for _, o := range names {
		for i := range o {
			if o[i] == ':' {
				pairs = append(pairs, [2]string{o[:i], o[i+1:]})
			}
		}
	}
	return pairs
}
