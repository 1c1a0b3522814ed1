package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/resources"
	"github.com/ethfab/ethfab/partition"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// The JSON names scripts depend on.
func TestJSONNames(t *testing.T) {
	sp, _ := topology.ParseSpec("dragonfly:p=2,a=4,h=2")
	r, err := Run(Options{Topology: sp, Scheme: addressing.PerGroup, Mode: controller.Minimal, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"switches", "hosts", "links", "diameter"} {
		if _, ok := m[k].(float64); !ok {
			t.Errorf("missing number %s", k)
		}
	}
	rules := m["rules"].(map[string]any)
	for _, kind := range []string{"routing", "dmp", "broadcast", "total"} {
		s, ok := rules[kind].(map[string]any)
		if !ok {
			t.Fatalf("rules.%s missing", kind)
		}
		for _, f := range []string{"min", "mean", "max"} {
			if _, ok := s[f].(float64); !ok {
				t.Errorf("rules.%s.%s missing", kind, f)
			}
		}
	}
	v := m["verify"].(map[string]any)
	if v["pairs_checked"].(float64) != 72*71 || v["failures"].(float64) != 0 {
		t.Errorf("verify = %v", v)
	}
	if m["switches"].(float64) != 36 || m["hosts"].(float64) != 72 || m["diameter"].(float64) != 3 {
		t.Errorf("sizes %v %v %v", m["switches"], m["hosts"], m["diameter"])
	}
	if r.Equation1 == nil || *r.Equation1 != 13 || r.Rules["routing"].Max != 13 {
		t.Errorf("Eq. 1 = %v, routing %+v", r.Equation1, r.Rules["routing"])
	}
}

// With the source guard, as up installs it: its rules are counted apart
// (T guard and T+2 admit rules per access switch), the walk checks it,
// and the routing rules are still Eq. 1's.
func TestSourceGuardCounted(t *testing.T) {
	sp, _ := topology.ParseSpec("dragonfly:p=2,a=4,h=2")
	r, err := Run(Options{Topology: sp, Scheme: addressing.PerGroup, Mode: controller.Minimal, Verify: true, SourceGuard: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	var m struct {
		SourceGuard bool `json:"source_guard"`
		Rules       map[string]struct{ Min, Max int }
		Verify      map[string]any
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if !m.SourceGuard || m.Rules["guard"].Max != 2 || m.Rules["admit"].Max != 4 || m.Rules["routing"].Max != *r.Equation1 {
		t.Errorf("source_guard %v, rules %+v, Eq. 1 %d", m.SourceGuard, m.Rules, *r.Equation1)
	}
	if gf, ok := m.Verify["guard_failures"].(float64); !ok || gf != 0 || r.Verify.Failed() {
		t.Errorf("verify %v", m.Verify)
	}
}

// Seed 000 Table I: hosts per access switch and network size for P-port switches.
func TestSweepShapesFollowTableI(t *testing.T) {
	for _, p := range SweepPorts {
		for _, st := range SweepTopologies {
			sp := st.Spec(p).Normalize()
			if err := sp.Validate(); err != nil {
				t.Fatalf("%s P=%d: %v", st.Name, p, err)
			}
			top, err := topology.Build(sp)
			if err != nil {
				t.Fatal(err)
			}
			for _, sw := range top.Switches {
				if len(sw.Ports) > p {
					t.Fatalf("%s P=%d: %s uses %d ports", st.Name, p, sw.Name, len(sw.Ports))
				}
			}
			if p != 96 || sp.Kind == topology.FlatFly && len(sp.Dims) == 4 {
				continue
			}
			// Scalability column of Table I at P=96.
			want := map[string]int{"3-level Folded-Clos": 96 * 96 * 96 / 4, "2D Flattened Butterfly": 32 * 32 * 32,
				"3D Flattened Butterfly": 24 * 24 * 24 * 24, "Dragonfly": 24 * 48 * (48*24 + 1)}[st.Name]
			if len(top.Hosts) != want {
				t.Errorf("%s P=96: %d hosts, want %d", st.Name, len(top.Hosts), want)
			}
		}
	}
}

// --vlan-assign: seed 002's counts, walked, and refused off its topologies.
func TestVLANPlan(t *testing.T) {
	sp, _ := topology.ParseSpec("mesh:dims=4x4")
	r, err := Run(Options{Topology: sp, Scheme: addressing.PerSwitch, Mode: controller.Minimal, VLAN: vlan.Fixed, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	v := r.VLAN
	if v == nil || v.VLANs != 4 || v.Table3 == nil || !v.Table3.Matches || v.HostLimit["8000"] != 2000 || v.Verify == nil || v.Verify.Failures+v.Verify.BroadcastFailures != 0 {
		t.Fatalf("4x4 mesh, fixed: %+v", v)
	}
	if r.AvgPathSwitches == nil || *r.AvgPathSwitches != 3.5 || r.SwitchLinks != 24 {
		t.Errorf("4x4 mesh: %d links, Avg.H %v; Table 11: 24, 3.50", r.SwitchLinks, r.AvgPathSwitches)
	}
	var b strings.Builder
	r.WriteText(&b)
	if !strings.Contains(b.String(), "Table 3: k^(n-1) = 4, matches") {
		t.Errorf("text report:\n%s", b.String())
	}
	df, _ := topology.ParseSpec("dragonfly:p=1,a=2,h=1")
	if _, err := Run(Options{Topology: df, Scheme: addressing.PerGroup, Mode: controller.Minimal, VLAN: vlan.Renamed}); err == nil {
		t.Error("VLANs on a Dragonfly: accepted")
	}

	// --link-off: the paths around a link (north-last here: Table 3's
	// "1-link deactivation" row, n = 2 renamed VLANs), walked; a link
	// along the second dimension has no row; links that do not exist, or
	// whose loss cuts the fabric, refused.
	r, err = Run(Options{Topology: sp, Scheme: addressing.PerSwitch, Mode: controller.VLAN, Verify: true, LinksOff: [][2]string{{"s2-2", "s1-2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if v := r.VLAN; v.VLANs != 2 || v.Table3 == nil || *v.Table3 != (Table3Row{"n", 2, true, true}) || !slices.Equal(v.LinksOff, []string{"s1-2-s2-2"}) || v.Verify.Failures+v.Verify.BroadcastFailures != 0 {
		t.Errorf("4x4 mesh, renamed, s1-2-s2-2 off: %d VLANs, Table 3 %v, links off %v, %+v", v.VLANs, v.Table3, v.LinksOff, v.Verify)
	}
	b.Reset()
	r.WriteText(&b)
	if !strings.Contains(b.String(), "around the links off s1-2-s2-2; Table 3 with 1 link off: n = 2, matches") {
		t.Errorf("text report:\n%s", b.String())
	}
	if r, err = Run(Options{Topology: sp, Scheme: addressing.PerSwitch, Mode: controller.VLAN, LinksOff: [][2]string{{"s1-2", "s1-3"}}}); err != nil || r.VLAN.Table3 != nil {
		t.Errorf("4x4 mesh, s1-2-s1-3 off: %v, Table 3 %v", err, r.VLAN.Table3)
	}
	// --vlan-torus lines: Table 3's torus count at k = 6 too (12, where
	// the shortest paths need 18), walked; refused off a two-link torus.
	t66, _ := topology.ParseSpec("torus:dims=6x6,links=2")
	r, err = Run(Options{Topology: t66, Scheme: addressing.PerSwitch, Mode: controller.VLAN, VLAN: vlan.Fixed, VLANTorus: vlan.Lines, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := r.VLAN; v.VLANs != 12 || v.Torus != vlan.Lines || v.Table3 == nil || !v.Table3.Matches || v.Verify.Failures+v.Verify.BroadcastFailures+v.Verify.Duplicates != 0 {
		t.Errorf("6x6 torus, fixed, lines: %d VLANs, torus %q, Table 3 %v, %+v", v.VLANs, v.Torus, v.Table3, v.Verify)
	}
	if _, err := Run(Options{Topology: sp, Scheme: addressing.PerSwitch, Mode: controller.VLAN, VLANTorus: vlan.Lines}); err == nil || !strings.Contains(err.Error(), "tori with two links") {
		t.Errorf("lines on a mesh: %v", err)
	}
	mt, _ := topology.ParseSpec("mtree:dims=4x4")
	for _, c := range []struct {
		sp   topology.Spec
		off  [2]string
		mode controller.Mode
		want string
	}{
		{sp, [2]string{"s1-2", "s3-2"}, controller.VLAN, "no link joins them"},
		{sp, [2]string{"s1-2", "s9-9"}, controller.VLAN, "has no switch s9-9"},
		{sp, [2]string{"s1-2", "s2-2"}, controller.Minimal, "VLAN paths only"},
		{mt, [2]string{"s0-0", "s1-0"}, controller.VLAN, "s0-0 cannot reach s1-0"},
	} {
		if _, err := Run(Options{Topology: c.sp, Scheme: addressing.PerSwitch, Mode: c.mode, LinksOff: [][2]string{c.off}}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, %v off, %s: %v, want %q", c.sp, c.off, c.mode, err, c.want)
		}
	}
}

// --machines: the report names every switch's machine, counts the cut by
// class, and its text lists each machine's groups as ranges.
func TestPartitionPlan(t *testing.T) {
	sp, _ := topology.ParseSpec("dragonfly:p=4,a=8,h=4")
	ms, err := partition.ParseMachines("2")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(Options{Topology: sp, Scheme: addressing.PerGroup, Mode: controller.Minimal, Machines: ms})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Partition
	if p == nil || p.Method != "groups" || len(p.Switches) != 264 || p.Switches["g16s7"] != "m0" || p.Switches["g17s0"] != "m1" ||
		p.CutLinks != 272 || p.CutByClass["global"] != 272 || p.CutByClass["local"] != 0 {
		t.Fatalf("partition %+v", p)
	}
	b, _ := json.Marshal(r)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	jp, _ := m["partition"].(map[string]any)
	for _, k := range []string{"method", "unit", "machines", "cut_links", "cut_by_class", "links_by_class", "imbalance", "switches", "estimates"} {
		if _, ok := jp[k]; !ok {
			t.Errorf("partition JSON lacks %s", k)
		}
	}
	// Each machine's estimate: its hosts, and its veth pairs (its host
	// links and the links inside it) with half its tunnels costing less
	// than the whole fabric's.
	whole := resources.ForLab(sp, resources.EBPF)
	for k, e := range p.Estimates {
		sh := p.Machines[k]
		if e.Hosts != sh.Hosts || e.VethPairs != sh.Hosts+sh.Links || e.MemoryMiB <= 0 || e.MemoryMiB >= whole.MemoryMiB || e.UpSeconds >= whole.UpSeconds {
			t.Errorf("%s: estimate %+v, share %+v, the whole fabric %+v", sh.Machine.Name, e, sh, whole)
		}
	}
	var text strings.Builder
	r.WriteText(&text)
	for _, want := range []string{"across 2 machines (whole groups", "g0-g16 (17)", "g17-g32 (16)", "272 of 528 global, 0 of 924 local"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	forty, _ := partition.ParseMachines("40")
	if _, err := Run(Options{Topology: sp, Scheme: addressing.PerGroup, Mode: controller.Minimal, Machines: forty}); err == nil ||
		!strings.Contains(err.Error(), "--machines: dragonfly:p=4,a=8,h=4,g=33 has 33 groups: at most 33 machines, not 40") {
		t.Errorf("40 machines for 33 groups: %v", err)
	}
}

func FuzzParseFlows(f *testing.F) {
	for _, s := range []string{"", "A1h0:B1h0", "A1h0:B1h0,A2h0:B2h0", "a:b:c", ":", "a:", ",", "a:b,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flows, err := ParseFlows(s)
		if err != nil {
			return
		}
		for _, fl := range flows {
			if fl[0] == "" || fl[1] == "" || strings.Contains(fl[0], ",") || strings.Contains(fl[1], ":") {
				t.Fatalf("%q gave %q", s, fl)
			}
		}
		if s != "" && len(flows) != strings.Count(s, ",")+1 {
			t.Fatalf("%q gave %d flows", s, len(flows))
		}
	})
}

// `plan --flows` on seed 003's topology 3: the max-min shares the checks
// use, and the QCN model's flow 2 (behind two congestion points) least.
// Hosts that do not exist and fabrics without eligible ports are refused.
func TestFlowsReport(t *testing.T) {
	const t3 = "custom:switches=A1+A2+A3+P+Q+R+B1+B2+B3+M1+N1+M2+N2+O2+M3+N3,links=A1-P+A2-P+A3-Q+P-Q+Q-R+Q-B1+R-B2+R-B3+A1-M1+M1-N1+N1-B1+A2-M2+M2-N2+N2-O2+O2-B2+A3-M3+M3-N3+N3-B3,hosts=A1:1+A2:1+A3:1+B1:1+B2:1+B3:1"
	run := func(spec, flows string) (*Report, error) {
		sp, err := topology.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		fl, err := ParseFlows(flows)
		if err != nil {
			t.Fatal(err)
		}
		return Run(Options{Topology: sp, Scheme: addressing.Flat, Mode: controller.Shortest, Flows: fl})
	}
	r, err := run(t3, "A1h0:B1h0,A2h0:B2h0,A3h0:B3h0")
	if err != nil {
		t.Fatal(err)
	}
	f := r.Flows
	if f == nil || len(f.Flows) != 3 || f.StaticMean != 0.5 || f.AdaptiveMeanMax != 1 || f.QCNModel == nil {
		t.Fatalf("%+v", f)
	}
	if got := strings.Join(f.Flows[1].StaticPath, "-"); got != "A2-P-Q-R-B2" {
		t.Errorf("flow 2's static path %s, want A2-P-Q-R-B2", got)
	}
	if m := f.Flows; *m[1].QCNModelTimed >= min(*m[0].QCNModelTimed, *m[2].QCNModelTimed) || *m[1].QCNModelTimed <= *m[1].QCNModel {
		t.Errorf("QCN model shares on time %.3f / %.3f / %.3f: want flow 2 least, and above its %.3f by bytes", *m[0].QCNModelTimed, *m[1].QCNModelTimed, *m[2].QCNModelTimed, *m[1].QCNModel)
	}
	if m := f.Flows; *m[1].QCNModel >= min(*m[0].QCNModel, *m[2].QCNModel) {
		t.Errorf("QCN model shares %.3f / %.3f / %.3f: want flow 2 least", *m[0].QCNModel, *m[1].QCNModel, *m[2].QCNModel)
	}
	var b strings.Builder
	r.WriteText(&b)
	if !strings.Contains(b.String(), "A2h0 -> B2h0: static 0.500 via A2-P-Q-R-B2; adaptive 1.000 via A2-M2-N2-O2-B2") {
		t.Errorf("text:\n%s", b.String())
	}
	// Two flows into one host meet at its port, which has no congestion
	// point (nor has a lab's): the model says where it loses them.
	r, err = run("custom:switches=A+B+C,links=A-B+B-C+A-C,hosts=A:1+B:1+C:1", "Ah0:Ch0,Bh0:Ch0")
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Flows.QCNModel; m == nil || m.LostAtHosts == 0 || m.LostAtHosts != m.Lost {
		t.Errorf("two flows into Ch0: model %+v, want every loss at the host's port", m)
	}
	if _, err := run(t3, "A1h0:Z9h0"); err == nil || !strings.Contains(err.Error(), `no host "Z9h0"`) {
		t.Errorf("unknown host: %v", err)
	}
	if _, err := run("mesh:dims=2x2", "a:b"); err == nil || !strings.Contains(err.Error(), "custom or xgft") {
		t.Errorf("mesh: %v", err)
	}
}
