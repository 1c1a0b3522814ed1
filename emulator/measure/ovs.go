package measure

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
)

// switchCounters is one bridge's OpenFlow counters at one moment.
type switchCounters struct {
	kindPackets [kindSlots]uint64
	kindBytes   [kindSlots]uint64
	// hostBcast counts broadcast-rule frames that entered on a host port:
	// they are injected but not unicast data.
	hostBcast uint64
	ports     map[int]ovs.PortStat // by OpenFlow port number
}

// kindSlots bounds the rule kinds (controller.Kinds has 12; a test keeps
// it within the bound, since cookies of kinds beyond it are not counted).
const kindSlots = 16

var numKinds = min(len(controller.Kinds()), kindSlots)

var inPortRe = regexp.MustCompile(`(?:^|,)in_port=(\d+)`)

// readSwitch dumps one bridge's flows and ports. hostPorts says which
// OpenFlow ports face hosts.
func readSwitch(ctx context.Context, mgmt string, hostPorts map[int]bool) (switchCounters, error) {
	c := switchCounters{ports: map[int]ovs.PortStat{}}
	flows, err := ovs.DumpFlows(ctx, mgmt)
	if err != nil {
		return c, err
	}
	for _, f := range flows {
		k, ok := controller.KindOfCookie(f.Cookie)
		if !ok || int(k) >= kindSlots {
			continue
		}
		c.kindPackets[k] += f.Packets
		c.kindBytes[k] += f.Bytes
		if k == controller.KindBroadcast {
			if m := inPortRe.FindStringSubmatch(f.Match); m != nil {
				if p, _ := strconv.Atoi(m[1]); hostPorts[p] {
					c.hostBcast += f.Packets
				}
			}
		}
	}
	ps, err := ovs.PortStats(ctx, mgmt)
	if err != nil {
		return c, err
	}
	for _, p := range ps {
		if n, err := strconv.Atoi(p.Port); err == nil {
			c.ports[n] = p
		}
	}
	return c, nil
}

// readSwitches reads every switch with at most parallel ovs-ofctl at a
// time.
func readSwitches(ctx context.Context, mgmt []string, hostPorts []map[int]bool, parallel int) ([]switchCounters, error) {
	out := make([]switchCounters, len(mgmt))
	errs := make([]error, len(mgmt))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range mgmt {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = readSwitch(ctx, mgmt[i], hostPorts[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("switch counters %s: %w", mgmt[i], err)
		}
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
