package run

import (
	"fmt"

	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/scenario"
)

// realtime resolves ovs.realtime for a lab on datapath dp: whether the
// traffic points run with every thread of the engines' processes under
// SCHED_FIFO (traffic.Config.Realtime), and what metrics.json's
// run.machine.realtime says about it. It tries the policy once on this
// machine, before a lab of its own is built, so that `on` where the
// kernel refuses it fails with nothing to undo. Across machines, auto is
// off: each machine's engine would have to pass the same checks, and
// only `on` asks them to (a machine that refuses fails the point).
func realtime(sc *scenario.Scenario, dp string, across bool) (on bool, say string, err error) {
	throttled := kernel.RealtimeThrottled()
	switch {
	case sc.OVS.Realtime == scenario.RealtimeOff:
		return false, "off", nil
	case sc.OVS.Realtime == scenario.RealtimeOn:
	case across:
		return false, "off (auto: a lab across machines, whose limits are not checked here)", nil
	case dp != datapath.Name:
		return false, "off (auto: ovs-vswitchd forwards the frames, and would run behind the hosts)", nil
	case !throttled:
		return false, "off (auto: kernel.sched_rt_runtime_us is -1, so a real-time thread could take a core for good)", nil
	}
	if err := kernel.RealtimePermitted(); err != nil {
		if sc.OVS.Realtime == scenario.RealtimeOn {
			return false, "", fmt.Errorf("%s: ovs.realtime: on, but %w", sc.Source, err)
		}
		return false, fmt.Sprintf("off (auto: %v)", err), nil
	}
	say = fmt.Sprintf("SCHED_FIFO %d while traffic runs", kernel.RealtimePriority)
	if !throttled {
		say += " (kernel.sched_rt_runtime_us is -1: not throttled)"
	}
	return true, say, nil
}
