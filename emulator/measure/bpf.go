package measure

import (
	"context"
	"fmt"

	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs/openflow"
	"github.com/ethfab/ethfab/topology"
)

// switches reads every switch's counters: from the bridges on Open
// vSwitch; on the eBPF datapath, the rule kinds from its counters map and
// the ports from their own devices (a switch port is its veth end: what
// the device received, the switch received): lnk's counters, read now
// when nil.
func (s *Sampler) switches(ctx context.Context, lnk map[string]map[int]kernel.LinkStats) ([]switchCounters, error) {
	if s.bpf == nil {
		return s.readSwitches(ctx)
	}
	cs, err := s.bpf.ReadCounters()
	if err != nil {
		return nil, err
	}
	cs, err = s.ownCounters(cs)
	if err != nil {
		return nil, err
	}
	if lnk == nil {
		if lnk, err = s.linkStats(false); err != nil {
			return nil, err
		}
	}
	out := make([]switchCounters, len(cs))
	for i, c := range cs {
		sc := &out[i]
		sc.ports = map[int]openflow.PortStat{}
		for k := 0; k < numKinds; k++ {
			sc.kindPackets[k], sc.kindBytes[k] = c[k].Packets, c[k].Bytes
		}
		sc.hostBcast = c[datapath.SlotHostBroadcast].Packets
	}
	for _, e := range s.ends {
		st, ok := lnk[e.ns][e.ifindex]
		if !ok {
			continue // deleted under the run: report says so
		}
		out[e.sw].ports[e.port] = openflow.PortStat{RxPackets: st.RxPackets, RxBytes: st.RxBytes, RxDrops: st.RxDropped,
			TxPackets: st.TxPackets, TxBytes: st.TxBytes, TxDrops: st.TxDropped}
	}
	return out, nil
}

// lost is what the datapath itself dropped (datapathLost on Open vSwitch;
// on the eBPF datapath, the frames its program could not forward).
func (s *Sampler) lost(ctx context.Context) (uint64, error) {
	if s.bpf == nil {
		return datapathLost(ctx, s.lab.OVS.Instances, s.lab.OVS.Datapath)
	}
	cs, err := s.bpf.ReadCounters()
	if err != nil {
		return 0, err
	}
	if cs, err = s.ownCounters(cs); err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range cs {
		n += c[datapath.SlotDropped].Packets
	}
	return n, nil
}

// ownCounters are the lab's switches' counters, in the lab's order (see
// counterIndex).
func (s *Sampler) ownCounters(cs []datapath.Counters) ([]datapath.Counters, error) {
	if s.counterAt == nil {
		if len(cs) != len(s.lab.Switches) {
			return nil, fmt.Errorf("the datapath counts %d switches, the lab has %d", len(cs), len(s.lab.Switches))
		}
		return cs, nil
	}
	out := make([]datapath.Counters, len(s.counterAt))
	for i, k := range s.counterAt {
		if k >= len(cs) {
			return nil, fmt.Errorf("the datapath counts %d switches, switch %s is its %d", len(cs), s.lab.Switches[i].Name, k)
		}
		out[i] = cs[k]
	}
	return out, nil
}

// counterIndex is where each of the lab's switches sits in the datapath's
// counters: nil when they are the lab's own order; a part of a lab across
// machines has only its own switches, which the datapath numbers as the
// whole fabric does (found by name in the topology, once).
func counterIndex(lab *fabric.Lab, top *topology.Topology) ([]int, error) {
	if lab.Part == nil {
		return nil, nil
	}
	if top == nil {
		return nil, fmt.Errorf("lab %s is a part of lab %s: its sampler needs the topology", lab.Lab, lab.Part.Lab)
	}
	at := make(map[string]int, len(top.Switches))
	for i, sw := range top.Switches {
		at[sw.Name] = i
	}
	out := make([]int, len(lab.Switches))
	for i, sw := range lab.Switches {
		k, ok := at[sw.Name]
		if !ok {
			return nil, fmt.Errorf("switch %s is not in %s", sw.Name, top.Spec)
		}
		out[i] = k
	}
	return out, nil
}
