package fabric

import (
	"testing"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/scenario"
)

// The flow cache is off exactly where a cached decision would outlive
// conditional routing's flips and an uncached frame stays in-process,
// unless the scenario says otherwise.
func TestFlowCached(t *testing.T) {
	for _, c := range []struct {
		cache    scenario.FlowCache
		mode     controller.Mode
		datapath string
		want     bool
	}{
		{"", controller.Conditional, ovs.DatapathNetdev, false},
		{scenario.FlowCacheAuto, controller.Conditional, ovs.DatapathNetdev, false},
		{scenario.FlowCacheAuto, controller.Conditional, ovs.DatapathSystem, true},
		{scenario.FlowCacheAuto, controller.Minimal, ovs.DatapathNetdev, true},
		{scenario.FlowCacheAuto, controller.Valiant, ovs.DatapathNetdev, true},
		{scenario.FlowCacheOn, controller.Conditional, ovs.DatapathNetdev, true},
		{scenario.FlowCacheOff, controller.Minimal, ovs.DatapathNetdev, false},
		{scenario.FlowCacheOff, controller.Conditional, ovs.DatapathSystem, false},
	} {
		sc := &scenario.Scenario{Routing: scenario.Routing{Mode: c.mode}, OVS: scenario.OVS{FlowCache: c.cache}}
		if got := FlowCached(sc, c.datapath); got != c.want {
			t.Errorf("flow_cache %q, %s routing, %s datapath: cached %v, want %v", c.cache, c.mode, c.datapath, got, c.want)
		}
	}
}
