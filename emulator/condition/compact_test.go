package condition

import (
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/topology"
)

// The monitor of a compact lab works on the lab's own tables and
// addresses. A compact Flattened Butterfly with per-switch addressing has
// its own address layout (a sub-field per switch coordinate) and fewer
// rules, so a monitor that rebuilt a plain plan would key the sources its
// conditions decide by addresses no host has, and hold tables the
// switches do not run.
func TestMonitorOfCompactLab(t *testing.T) {
	roottest.NeedOVS(t)
	lab, comp := upYAML(t, "hrx-compact", "topology: {kind: flatfly, dims: [3, 3], t: 1}\n"+
		"addressing: {scheme: per-switch, compact: true}\nrouting: {mode: conditional}\n")
	if !lab.Compact || !comp.Plan.Compact {
		t.Fatalf("lab compact %v, plan compact %v: want both", lab.Compact, comp.Plan.Compact)
	}
	// The test can only tell the plans apart if they differ here.
	plain, err := addressing.New(comp.Top, lab.Addressing, false)
	if err != nil {
		t.Fatal(err)
	}
	differ := false
	for h := range comp.Top.Hosts {
		differ = differ || plain.HostMAC(h) != comp.Plan.HostMAC(h)
	}
	if !differ {
		t.Fatal("the plain and compact plans give the same addresses: pick a fabric where they differ")
	}

	m, err := New(lab, Options{NoReaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i, s := range lab.Switches {
		st := m.switches[s.Name]
		if st == nil {
			t.Fatalf("monitor has no switch %s", s.Name)
		}
		// s.Flows is what Up read back from the switch.
		if st.table == nil || len(st.table.Rules) != s.Flows {
			t.Errorf("%s: monitor's table has %d rules, the switch runs %d", s.Name, len(st.table.Rules), s.Flows)
		}
		for _, p := range comp.Top.Switches[i].Ports {
			if p.Class != topology.ClassHost {
				continue
			}
			// The address the host was created with (static assign).
			mac, err := addressing.ParseMAC(lab.Hosts[p.Host].MAC)
			if err != nil {
				t.Fatal(err)
			}
			var key [6]byte
			copy(key[:], mac.Bytes())
			if in, ok := st.ingress[key]; !ok || in != p.Num {
				t.Errorf("%s: host %s (%s) enters on port %d, the monitor has %d (found %v)", s.Name, lab.Hosts[p.Host].Name, mac, p.Num, in, ok)
			}
		}
	}
}
