package fabric

import (
	"testing"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/scenario"
)

// The flow cache is off exactly where a cached decision would outlive
// conditional routing's flips and an uncached frame stays in-process, or
// (eBPF) where the host pairs' flows do not fit it, unless the scenario
// says otherwise.
func TestFlowCached(t *testing.T) {
	for _, c := range []struct {
		cache    scenario.FlowCache
		mode     controller.Mode
		datapath string
		want     bool
		hosts    int
	}{
		{scenario.FlowCacheAuto, controller.Conditional, datapath.Name, true, 42},
		{scenario.FlowCacheAuto, controller.Minimal, datapath.Name, true, 128},
		{scenario.FlowCacheAuto, controller.Minimal, datapath.Name, false, 129},
		{scenario.FlowCacheAuto, controller.Valiant, datapath.Name, false, 1056},
		{scenario.FlowCacheOn, controller.Minimal, datapath.Name, true, 1056},
		{scenario.FlowCacheOff, controller.Minimal, datapath.Name, false, 42},
		{"", controller.Conditional, ovs.DatapathNetdev, false, 0},
		{scenario.FlowCacheAuto, controller.Conditional, ovs.DatapathNetdev, false, 0},
		{scenario.FlowCacheAuto, controller.Conditional, ovs.DatapathSystem, true, 0},
		{scenario.FlowCacheAuto, controller.Minimal, ovs.DatapathNetdev, true, 0},
		{scenario.FlowCacheAuto, controller.Valiant, ovs.DatapathNetdev, true, 0},
		{scenario.FlowCacheOn, controller.Conditional, ovs.DatapathNetdev, true, 0},
		{scenario.FlowCacheOff, controller.Minimal, ovs.DatapathNetdev, false, 0},
		{scenario.FlowCacheOff, controller.Conditional, ovs.DatapathSystem, false, 0},
	} {
		sc := &scenario.Scenario{Routing: scenario.Routing{Mode: c.mode}, OVS: scenario.OVS{FlowCache: c.cache}}
		if got := FlowCached(sc, c.datapath, c.hosts); got != c.want {
			t.Errorf("flow_cache %q, %s routing, %s datapath, %d hosts: cached %v, want %v", c.cache, c.mode, c.datapath, c.hosts, got, c.want)
		}
	}
}
