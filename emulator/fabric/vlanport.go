package fabric

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// vlanPortObject is bpf/vlanport.c compiled (make bpf).
//
//go:embed vlanport.bpf.o
var vlanPortObject []byte

// vlanPorts loads bpf/vlanport.c's programs, once per VLAN ID the push
// carries. The filters they are attached by hold them; Close lets go of
// the loader's references.
type vlanPorts struct {
	spec  *ebpf.CollectionSpec
	byVID map[int]*ebpf.Collection
}

func newVLANPorts() (*vlanPorts, error) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(vlanPortObject))
	if err != nil {
		return nil, fmt.Errorf("tagged ports object: %w", err)
	}
	return &vlanPorts{spec: spec, byVID: map[int]*ebpf.Collection{}}, nil
}

func (v *vlanPorts) load(vid int) (*ebpf.Collection, error) {
	if c, ok := v.byVID[vid]; ok {
		return c, nil
	}
	s := v.spec.Copy()
	if err := s.Variables["vid"].Set(uint16(vid)); err != nil {
		return nil, err
	}
	c, err := ebpf.NewCollection(s)
	if err != nil {
		return nil, fmt.Errorf("loading the tagged port programs: %w", err)
	}
	v.byVID[vid] = c
	return c, nil
}

func (v *vlanPorts) Close() {
	for _, c := range v.byVID {
		c.Close()
	}
}

// hostLink is the link of a host.
func (l *Lab) hostLink(host string) *Link {
	for i := range l.Links {
		if l.Links[i].B.Node == host {
			return &l.Links[i]
		}
	}
	return nil
}

// tagHostPorts gives the tagged hosts (routing.vlan.tagged_hosts) their
// 802.1Q interfaces, on the host's end of its link: every frame it sends
// leaves tagged with its port's VLAN (the PVID the assignment gave that
// port), the tag in the skb as a VLAN interface puts it, and the link's
// tbf charges its 4 bytes (kernel.ChargeQueuedLength); and, the first time (first),
// every tagged frame it receives reaches its stack untagged, whatever its
// VLAN: frames come in the VLAN they crossed the fabric in (the source's,
// with the fixed assignment), as to a host with an interface in every
// VLAN (seed 002's learning procedure gives its hosts one per VLAN).
//
// A host tagged again (its port's VLAN changed with the paths,
// Lab.Reroute) has its push program replaced; the filters hold the
// programs, and go with the interfaces. The kernel has no 8021q module
// here; a VLAN interface would do the host's part on one that has.
func tagHostPorts(l *Lab, top *topology.Topology, a *vlan.Assignment, hosts []int, first bool) error {
	vp, err := newVLANPorts()
	if err != nil {
		return err
	}
	defer vp.Close()
	for _, h := range hosts {
		host := &top.Hosts[h]
		vid := a.Switches[host.Switch].PVID[host.Port-1]
		link := l.hostLink(host.Name)
		if link == nil || vid == 0 {
			return fmt.Errorf("host %s: no link or no VLAN to tag its port with", host.Name)
		}
		c, err := vp.load(vid)
		if err != nil {
			return err
		}
		end := link.B
		idx, err := kernel.LinkIndexes(end.NetNS, []string{end.Iface})
		if err != nil {
			return err
		}
		if first {
			if sh := link.Shape; sh != nil && (sh.RateBps > 0 || sh.NeedsNetem()) {
				root := "tbf"
				if sh.NeedsNetem() {
					root = "netem"
				}
				if err := kernel.ChargeQueuedLength(end.NetNS, end.Iface, root, 4); err != nil {
					return err
				}
				if err := kernel.DisableSegmentation(end.NetNS, end.Iface); err != nil {
					return err
				}
			}
			if err := kernel.AttachIngress(end.NetNS, idx, c.Programs["ethfab_vlan_pop"].FD(), "ethfab_vlan_pop"); err != nil {
				return err
			}
		} else if err := kernel.DetachEgressFirst(end.NetNS, idx[0], "ethfab_vlan_push"); err != nil {
			return err
		}
		// First on the egress: the traffic engine's send stamp
		// (hostagent/traffic) comes after it, on the wire's side of the
		// host's VLAN interface, as a NIC stamps frames its driver tagged.
		if err := kernel.AttachEgressFirst(end.NetNS, idx[0], c.Programs["ethfab_vlan_push"], "ethfab_vlan_push"); err != nil {
			return err
		}
	}
	return nil
}

// takeTaggedFrames makes the switch's ends of the hosts' links free the
// 802.1Q-tagged frames they receive, once Open vSwitch's packet socket
// (userspace datapath) has them: with no VLAN device for them the kernel
// would count each as dropped on the host link, outside the modelled
// queues (every frame a tagged host sends; every learning broadcast:
// TestVLANTaggedHosts without this, 200 of 200).
func takeTaggedFrames(l *Lab, hosts []string) error {
	vp, err := newVLANPorts()
	if err != nil {
		return err
	}
	defer vp.Close()
	c, err := vp.load(0)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		link := l.hostLink(h)
		if link == nil {
			return fmt.Errorf("host %s: no link", h)
		}
		idx, err := kernel.LinkIndexes(link.A.NetNS, []string{link.A.Iface})
		if err != nil {
			return err
		}
		if err := kernel.AttachIngress(link.A.NetNS, idx, c.Programs["ethfab_vlan_taken"].FD(), "ethfab_vlan_taken"); err != nil {
			return err
		}
	}
	return nil
}

// hostIDs resolves host names.
func hostIDs(top *topology.Topology, names []string) ([]int, error) {
	id := map[string]int{}
	for _, h := range top.Hosts {
		id[h.Name] = h.ID
	}
	out := make([]int, 0, len(names))
	for _, n := range names {
		h, ok := id[n]
		if !ok {
			return nil, fmt.Errorf("%s has no host %s", top.Spec, n)
		}
		out = append(out, h)
	}
	return out, nil
}

// hostNames is hostIDs the other way.
func hostNames(top *topology.Topology, ids []int) []string {
	var out []string
	for _, h := range ids {
		out = append(out, top.Hosts[h].Name)
	}
	return out
}
