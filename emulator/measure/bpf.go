package measure

import (
	"context"
	"fmt"

	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/ovs/openflow"
)

// switches reads every switch's counters: from the bridges on Open
// vSwitch; on the eBPF datapath, the rule kinds from its counters map and
// the ports from their own devices (a switch port is its veth end: what
// the device received, the switch received).
func (s *Sampler) switches(ctx context.Context) ([]switchCounters, error) {
	if s.bpf == nil {
		return s.readSwitches(ctx)
	}
	cs, err := s.bpf.ReadCounters()
	if err != nil {
		return nil, err
	}
	if len(cs) != len(s.lab.Switches) {
		return nil, fmt.Errorf("the datapath counts %d switches, the lab has %d", len(cs), len(s.lab.Switches))
	}
	lnk, err := s.linkStats()
	if err != nil {
		return nil, err
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
		st, ok := lnk[e.ns][e.iface]
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
	var n uint64
	for _, c := range cs {
		n += c[datapath.SlotDropped].Packets
	}
	return n, nil
}
