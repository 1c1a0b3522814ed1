package measure

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/ethfab/ethfab/emulator/controller"
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

// kindSlots bounds the rule kinds (controller.Kinds has 7); cookies of
// kinds beyond it are not counted.
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

// datapathLost sums the "lost" upcalls (frames the datapath dropped for
// want of handler capacity) of every vswitchd instance.
func datapathLost(ctx context.Context, runDirs []string) (uint64, error) {
	var total uint64
	for _, d := range runDirs {
		out, err := exec.CommandContext(ctx, "ovs-appctl", "-t", filepath.Join(d, "ovs-vswitchd.ctl"), "dpctl/show").Output()
		if err != nil {
			return 0, fmt.Errorf("ovs-appctl dpctl/show in %s: %w", d, err)
		}
		for _, m := range lostRe.FindAllStringSubmatch(string(out), -1) {
			v, _ := strconv.ParseUint(m[1], 10, 64)
			total += v
		}
	}
	return total, nil
}
