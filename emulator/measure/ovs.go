package measure

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/fanout"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/ovs/openflow"
)

// switchCounters is one bridge's OpenFlow counters at one moment.
type switchCounters struct {
	kindPackets [kindSlots]uint64
	kindBytes   [kindSlots]uint64
	// hostBcast counts broadcast-rule frames that entered on a host port:
	// they are injected but not unicast data.
	hostBcast uint64
	ports     map[int]openflow.PortStat // by OpenFlow port number
}

// kindSlots bounds the rule kinds (controller.Kinds has 12; a test keeps
// it within the bound, since cookies of kinds beyond it are not counted).
const kindSlots = 16

var numKinds = min(len(controller.Kinds()), kindSlots)

// readSwitch reads one bridge's flow and port counters over its OpenFlow
// connection. hostPorts says which OpenFlow ports face hosts.
func readSwitch(ctx context.Context, c *openflow.Conn, hostPorts map[int]bool) (switchCounters, error) {
	sc := switchCounters{ports: map[int]openflow.PortStat{}}
	flows, err := c.Flows(ctx)
	if err != nil {
		return sc, err
	}
	for _, f := range flows {
		k, ok := controller.KindOfCookie(f.Cookie)
		if !ok || int(k) >= kindSlots {
			continue
		}
		sc.kindPackets[k] += f.Packets
		sc.kindBytes[k] += f.Bytes
		if k == controller.KindBroadcast {
			if p, ok := f.InPort(); ok && hostPorts[int(p)] {
				sc.hostBcast += f.Packets
			}
		}
	}
	ps, err := c.PortStats(ctx)
	if err != nil {
		return sc, err
	}
	for _, p := range ps {
		if p.Port < openflow.PortInPort { // a switch port, not LOCAL
			sc.ports[int(p.Port)] = p
		}
	}
	return sc, nil
}

// readSwitches reads every switch, at most parallel at a time, each over
// the sampler's connection to its bridge (made on first use, kept until
// Close): two requests, where forking ovs-ofctl twice per bridge made a
// read of DF(4,8,4)'s 264 bridges too dear for the timeline.
func (s *Sampler) readSwitches(ctx context.Context) ([]switchCounters, error) {
	// A rule's counters are credited from the datapath's flow cache once
	// per revalidation round, a port's as frames pass: read right after
	// the traffic, the rules lagged the ports (TestMPIPhaseOnDragonfly:
	// 4,919 of 5,495 injected frames on valiant rules, in 2 of 8 runs,
	// once the reads no longer took an ovs-ofctl fork per bridge). A
	// full round first, on every instance.
	err := fanout.Each(len(s.lab.OVS.Instances), 0, func(k int) error {
		_, err := ovs.Appctl(ctx, s.lab.OVS.Instances[k].RunDir, "revalidator/wait")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("switch counters: %w", err)
	}
	if s.conns == nil {
		s.conns = make([]*openflow.Conn, len(s.mgmt))
	}
	out := make([]switchCounters, len(s.mgmt))
	err = fanout.Each(len(s.mgmt), s.opt.Parallel, func(i int) error {
		if s.conns[i] == nil {
			c, err := openflow.Dial(s.mgmt[i])
			if err != nil {
				return fmt.Errorf("switch counters %s: %w", s.mgmt[i], err)
			}
			s.conns[i] = c
		}
		var err error
		if out[i], err = readSwitch(ctx, s.conns[i], s.hostPorts[i]); err != nil {
			return fmt.Errorf("switch counters %s: %w", s.mgmt[i], err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var lostRe = regexp.MustCompile(`\blost:(\d+)`)

// upcallDropCounter counts the frames the userspace datapath dropped
// because their upcall failed.
const upcallDropCounter = "datapath_drop_upcall_error"

// datapathLost sums, over every vswitchd instance, the frames the switch
// process dropped. The kernel datapath's "lost" counts frames its handler
// threads had no room for. The userspace datapath reads every port
// through a packet socket, which drops what arrives while its receive
// buffer is full (the forwarding thread fell behind); it handles upcalls
// in that thread and counts as "lost" every upcall that did not install a
// flow, which without a flow cache (ovs.Config.Uncached) is every frame,
// forwarded all the same, so its failed upcalls are read from a coverage
// counter. Coverage counters reach the total about once a second, so a
// drop at the very end of a phase may be counted with the next one.
func datapathLost(ctx context.Context, insts []fabric.OVSRef, datapath string) (uint64, error) {
	var total uint64
	for _, in := range insts {
		d := in.RunDir
		if datapath == ovs.DatapathNetdev {
			n, err := switchSocketDrops(in)
			if err != nil {
				return 0, err
			}
			total += n
			out, err := ovs.Appctl(ctx, d, "coverage/read-counter", upcallDropCounter)
			if err != nil {
				return 0, err
			}
			v, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("coverage counter %s in %s: %q", upcallDropCounter, d, out)
			}
			total += v
			continue
		}
		out, err := ovs.Appctl(ctx, d, "dpctl/show")
		if err != nil {
			return 0, err
		}
		for _, m := range lostRe.FindAllStringSubmatch(out, -1) {
			v, _ := strconv.ParseUint(m[1], 10, 64)
			total += v
		}
	}
	return total, nil
}

// switchSocketDrops sums the receive drops of the packet sockets an
// instance's ovs-vswitchd holds in its namespace.
func switchSocketDrops(in fabric.OVSRef) (uint64, error) {
	mine, err := ovs.SwitchSockets(in.RunDir)
	if err != nil {
		return 0, err
	}
	socks, err := kernel.PacketSockets(in.NetNS)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, s := range socks {
		if mine[s.Inode] {
			n += uint64(s.Drops)
		}
	}
	return n, nil
}
