package fabric

import (
	"context"
	"os/exec"
	"testing"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/scenario"
)

// The eBPF datapath forwards a Dragonfly, a Flattened Butterfly and a Clos
// under every routing mode with no Open vSwitch: every ordered pair's
// frame arrives (ethfab ping, raw frames), at the first try, twice (the
// second time from the flow cache), also with assign rewrite (table 0
// then table 1 at every access switch), and real ICMP crosses the fabric
// (ARP's broadcast, then unicast both ways); the switches' counters in the
// maps saw the rule kinds the mode uses; down leaves no namespace. Some
// labs have their switches in several namespaces (ovs.instances, which
// large fabrics get by default), linked across them.
func TestEBPFDatapathReachesEveryPair(t *testing.T) {
	roottest.Need(t, "ping")
	for _, c := range []struct {
		name, topo, mode, kind, addressing string
		namespaces                         int
		cache                              string // ovs.flow_cache
	}{
		{"ebpf-df-min", "{kind: dragonfly, p: 2, a: 3, h: 2}", "minimal", "routing", "", 1, "auto"},
		{"ebpf-df-val", "{kind: dragonfly, p: 2, a: 3, h: 2}", "valiant", "valiant", "", 3, "on"},
		{"ebpf-df-cond", "{kind: dragonfly, p: 2, a: 3, h: 2}", "conditional", "conditional", "", 1, "on"},
		// Hosts keep their original MACs; the access switches rewrite
		// source and destination (table 0, then table 1).
		{"ebpf-df-rw", "{kind: dragonfly, p: 2, a: 3, h: 2}", "minimal", "rewrite", "addressing: {assign: rewrite}\n", 1, "auto"},
		{"ebpf-fb", "{kind: flatfly, dims: [3, 2], t: 1}", "minimal", "routing", "", 1, "auto"},
		{"ebpf-clos", "{kind: clos, k: 4, pods: 2}", "minimal", "uplink", "", 2, "on"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := scenario.Parse(c.name+".yaml", []byte("name: "+c.name+"\ntopology: "+c.topo+"\n"+c.addressing+
				"routing: {mode: "+c.mode+"}\nlinks: {host: {rate: 50mbit}}\novs: {datapath: ebpf, flow_cache: "+c.cache+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { Down(c.name) })
			lab, err := Up(context.Background(), sc, UpOptions{Instances: c.namespaces})
			if err != nil {
				t.Fatal(err)
			}
			if lab.BPF == nil || lab.OVS.Datapath != datapath.Name || len(lab.OVS.Instances) != 0 {
				t.Fatalf("lab state: bpf %v, datapath %q, %d ovs instances", lab.BPF, lab.OVS.Datapath, len(lab.OVS.Instances))
			}
			fabs := map[string]bool{}
			for _, s := range lab.Switches {
				fabs[s.NetNS] = true
			}
			if len(fabs) != c.namespaces {
				t.Fatalf("switches in %d namespaces, want %d", len(fabs), c.namespaces)
			}
			// Twice: where the flow cache is on (auto leaves it off
			// here: every transit lookup is a slot), the second round's
			// frames are decided by it, from whichever CPU sends them.
			for round := range 2 {
				r, err := Ping(context.Background(), lab, 0, int64(round))
				if err != nil {
					t.Fatal(err)
				}
				if r.Reached != r.Pairs || r.Seconds > 5 {
					t.Fatalf("ping round %d: %d of %d pairs reached in %.1fs (first try takes 0.1s); unreachable %v", round, r.Reached, r.Pairs, r.Seconds, r.Unreachable)
				}
			}
			// A broadcast from every host reaches every other host once.
			b, err := Broadcast(context.Background(), lab, len(lab.Hosts), 1)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(lab.Hosts); !b.OK() || b.Sources != n || b.Expected != n*(n-1) || b.Delivered != b.Expected {
				t.Fatalf("broadcasts: %+v", b)
			}
			// ICMP needs ARP, whose replies go to the asker's original MAC,
			// which no switch routes under assign rewrite (PortLand
			// answers ARP from its fabric manager; ethfab has none).
			if c.addressing == "" {
				first, last := lab.Hosts[0], lab.Hosts[len(lab.Hosts)-1]
				if out, err := exec.Command("ip", "netns", "exec", first.NetNS, "ping", "-c", "1", "-W", "3", last.IP).CombinedOutput(); err != nil {
					t.Fatalf("ICMP %s -> %s: %v\n%s", first.Name, last.Name, err, out)
				}
			}
			cs, err := datapath.ReadCounters(*lab.BPF)
			if err != nil {
				t.Fatal(err)
			}
			var byKind [datapath.KindSlots]uint64
			for _, sw := range cs {
				for k := range sw {
					byKind[k] += sw[k].Packets
				}
			}
			var want controller.Kind
			for _, k := range controller.Kinds() {
				if k.String() == c.kind {
					want = k
				}
			}
			if byKind[want] == 0 {
				t.Errorf("no frame met a %s rule: %v", c.kind, byKind)
			}
			if byKind[datapath.SlotDropped] != 0 {
				t.Errorf("the datapath dropped %d frames it could not forward", byKind[datapath.SlotDropped])
			}
			if err := Down(c.name); err != nil {
				t.Fatal(err)
			}
			if left, _ := kernel.ListNamespaces(c.name + "-"); len(left) != 0 {
				t.Errorf("namespaces left: %v", left)
			}
		})
	}
}
