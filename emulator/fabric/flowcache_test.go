package fabric

import (
	"testing"

	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/scenario"
)

// The flow cache is off exactly where a cached decision would outlive
// conditional routing's flips and an uncached frame stays in-process,
// unless the scenario says otherwise.
func TestFlowCached(t *testing.T) {
	for _, c := range []struct {
		cache    scenario.FlowCache
		mode     scenario.RoutingMode
		datapath string
		want     bool
	}{
		{"", scenario.Conditional, ovs.DatapathNetdev, false},
		{scenario.FlowCacheAuto, scenario.Conditional, ovs.DatapathNetdev, false},
		{scenario.FlowCacheAuto, scenario.Conditional, ovs.DatapathSystem, true},
		{scenario.FlowCacheAuto, scenario.Minimal, ovs.DatapathNetdev, true},
		{scenario.FlowCacheAuto, scenario.Valiant, ovs.DatapathNetdev, true},
		{scenario.FlowCacheOn, scenario.Conditional, ovs.DatapathNetdev, true},
		{scenario.FlowCacheOff, scenario.Minimal, ovs.DatapathNetdev, false},
		{scenario.FlowCacheOff, scenario.Conditional, ovs.DatapathSystem, false},
	} {
		sc := &scenario.Scenario{Routing: scenario.Routing{Mode: c.mode}, OVS: scenario.OVS{FlowCache: c.cache}}
		if got := FlowCached(sc, c.datapath); got != c.want {
			t.Errorf("flow_cache %q, %s routing, %s datapath: cached %v, want %v", c.cache, c.mode, c.datapath, got, c.want)
		}
	}
}
