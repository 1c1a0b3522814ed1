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

// tagHostPorts gives the tagged hosts (routing.vlan.tagged_hosts) their
// 802.1Q interfaces: on the host's end of its link, every frame it sends
// leaves tagged with its port's VLAN (the PVID the assignment gave that
// port), the tag in the frame's bytes before the link's tbf, which
// charges it (kernel.ChargeQueuedLength), and every tagged frame it
// receives reaches its stack untagged, whatever its VLAN: frames come in
// the VLAN they crossed the fabric in (the source's, with the fixed
// assignment), as to a host with an interface in every VLAN (seed 002's
// learning procedure gives its hosts one per VLAN); on the switch's
// end (userspace datapath only, whose switch reads the port through a
// packet socket) the kernel stops counting the tagged frames it has no
// VLAN device for as dropped, after Open vSwitch has taken them.
//
// A host that is tagged again (its port's VLAN changed with the paths,
// Lab.Reroute) has its push program replaced; the filters hold the
// programs, and go with the interfaces. The kernel has no 8021q module
// here; a VLAN interface would do the host's part on one that has.
func tagHostPorts(l *Lab, top *topology.Topology, a *vlan.Assignment, hosts []int, userspace bool) error {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(vlanPortObject))
	if err != nil {
		return fmt.Errorf("tagged ports object: %w", err)
	}
	progs := map[int]*ebpf.Collection{} // by VLAN ID
	defer func() {
		for _, c := range progs {
			c.Close()
		}
	}()
	load := func(vid int) (*ebpf.Collection, error) {
		if c, ok := progs[vid]; ok {
			return c, nil
		}
		s := spec.Copy()
		if err := s.Variables["vid"].Set(uint16(vid)); err != nil {
			return nil, err
		}
		c, err := ebpf.NewCollection(s)
		if err != nil {
			return nil, fmt.Errorf("loading the tagged port programs: %w", err)
		}
		progs[vid] = c
		return c, nil
	}
	for _, h := range hosts {
		host := &top.Hosts[h]
		vid := a.Switches[host.Switch].PVID[host.Port-1]
		var link *Link
		for i := range l.Links {
			if l.Links[i].B.Node == host.Name {
				link = &l.Links[i]
			}
		}
		if link == nil || vid == 0 {
			return fmt.Errorf("host %s: no link or no VLAN to tag its port with", host.Name)
		}
		c, err := load(vid)
		if err != nil {
			return err
		}
		hostEnd, swEnd := link.B, link.A
		if sh := link.Shape; sh != nil && (sh.RateBps > 0 || sh.NeedsNetem()) {
			root := "tbf"
			if sh.NeedsNetem() {
				root = "netem"
			}
			if err := kernel.ChargeQueuedLength(hostEnd.NetNS, hostEnd.Iface, root); err != nil {
				return err
			}
		}
		idx, err := kernel.LinkIndexes(hostEnd.NetNS, []string{hostEnd.Iface})
		if err != nil {
			return err
		}
		// Again after a path change: the new push replaces the old one.
		_ = kernel.DetachEgressAfter(hostEnd.NetNS, idx[0])
		if err := kernel.AttachEgressAfter(hostEnd.NetNS, idx, c.Programs["ethfab_vlan_push"].FD(), "ethfab_vlan_push"); err != nil {
			return err
		}
		if err := kernel.AttachIngress(hostEnd.NetNS, idx, c.Programs["ethfab_vlan_pop"].FD(), "ethfab_vlan_pop"); err != nil && !kernel.FilterExists(err) {
			return err
		}
		if userspace {
			sidx, err := kernel.LinkIndexes(swEnd.NetNS, []string{swEnd.Iface})
			if err != nil {
				return err
			}
			if err := kernel.AttachIngress(swEnd.NetNS, sidx, c.Programs["ethfab_vlan_taken"].FD(), "ethfab_vlan_taken"); err != nil && !kernel.FilterExists(err) {
				return err
			}
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
