package fabric

import (
	"testing"

	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/scenario"
)

// The flow cache is off exactly where a cached decision would outlive
// conditional routing's flips and an uncached frame stays in-process, or
// (eBPF) where the host pairs' flows do not fit it or every transit
// lookup is a direct slot, unless the scenario says otherwise.
func TestFlowCached(t *testing.T) {
	const (
		df232 = "{kind: dragonfly, p: 2, a: 3, h: 2}" // 42 hosts
		df484 = "{kind: dragonfly, p: 4, a: 8, h: 4}" // 1,056
		clos  = "{kind: clos, k: 4}"
		mesh  = "{kind: mesh, dims: [3, 3]}"
	)
	for _, c := range []struct {
		topo, routing, cache, datapath string
		want                           bool
	}{
		// Every transit lookup a slot: the pipeline is the cheaper.
		{df232, "minimal", "auto", datapath.Name, false},
		{df232, "valiant", "auto", datapath.Name, false},
		{df232, "conditional", "auto", datapath.Name, false},
		{clos, "minimal", "auto", datapath.Name, false},
		// 802.1Q tags are matched in the hash.
		{mesh, "vlan", "auto", datapath.Name, true},
		// Past 128 hosts the flows do not fit.
		{df484, "valiant", "auto", datapath.Name, false},
		{df484, "minimal", "on", datapath.Name, true},
		{mesh, "vlan", "off", datapath.Name, false},
		{df232, "conditional", "", ovs.DatapathNetdev, false},
		{df232, "conditional", "auto", ovs.DatapathNetdev, false},
		{df232, "conditional", "auto", ovs.DatapathSystem, true},
		{df232, "minimal", "auto", ovs.DatapathNetdev, true},
		{df232, "valiant", "auto", ovs.DatapathNetdev, true},
		{df232, "conditional", "on", ovs.DatapathNetdev, true},
		{df232, "minimal", "off", ovs.DatapathNetdev, false},
		{df232, "conditional", "off", ovs.DatapathSystem, false},
	} {
		body := "name: fc\ntopology: " + c.topo + "\nrouting: {mode: " + c.routing + "}\n"
		if c.cache != "" {
			body += "ovs: {flow_cache: " + c.cache + "}\n"
		}
		sc, err := scenario.Parse("fc.yaml", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		comp, err := Compile(sc)
		if err != nil {
			t.Fatal(err)
		}
		if got := FlowCached(sc, c.datapath, comp.Top, comp.Tables); got != c.want {
			t.Errorf("%s, %s routing, flow_cache %q, %s datapath: cached %v, want %v", c.topo, c.routing, c.cache, c.datapath, got, c.want)
		}
	}
}
