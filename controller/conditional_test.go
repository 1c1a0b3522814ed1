package controller

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
)

// Seed 000 §V-D, Fig. 10a: a Dragonfly access switch keeps Eq. 1's rules,
// the remote-group ones conditional, plus T alternatives.
func TestConditionalDragonflyCounts(t *testing.T) {
	for _, c := range []struct {
		spec    string
		G, A, T int
		H       int
	}{
		{"dragonfly:p=2,a=4,h=2", 9, 4, 2, 2},
		{"dragonfly:p=4,a=8,h=4", 33, 8, 4, 4},
	} {
		ctl := compile(t, c.spec, addressing.PerGroup, Options{Mode: Conditional})
		for _, sw := range []int{0, 5} {
			tab, err := ctl.Table(sw)
			if err != nil {
				t.Fatal(err)
			}
			got := [...]int{tab.Count(KindRouting), tab.Count(KindConditional), tab.Count(KindAlternative), tab.Count(KindCondition)}
			want := [...]int{c.T + c.A - 1, c.G - 1, c.T, c.A - 1 + c.H + 1}
			if got != want {
				t.Errorf("%s switch %d: routing/conditional/alternative/condition = %v, want %v", c.spec, sw, got, want)
			}
			if len(tab.CondPorts) != c.A-1+c.H {
				t.Errorf("%s: %d condition ports, want %d", c.spec, len(tab.CondPorts), c.A-1+c.H)
			}
		}
	}
}

// §V-C: on a per-group Flattened Butterfly minimal multipath costs no
// rules: the own-row switch rules, group bits wildcarded, are the
// alternatives; Fig. 10b adds the T non-minimal ones.
func TestConditionalFlatFlyCounts(t *testing.T) {
	ctl := compile(t, "flatfly:dims=4x4,t=3", addressing.PerGroup, Options{Mode: Conditional})
	tab, err := ctl.Table(5)
	if err != nil {
		t.Fatal(err)
	}
	// Eq. 1 = (G-1) + (S-1) + T = 3 + 3 + 3.
	if n := tab.Count(KindRouting) + tab.Count(KindConditional) + tab.Count(KindAlternative) - 3; n != 9 {
		t.Errorf("%d routing rules besides the 3 non-minimal ones, want Eq. 1's 9", n)
	}
	if n := tab.Count(KindConditional); n != 3 {
		t.Errorf("%d conditional rules, want G-1 = 3", n)
	}
}

// §V-C: a Clos switch has one default per ingress port and k-1
// alternatives, the last of them unconditional.
func TestConditionalClosUplinks(t *testing.T) {
	ctl := compile(t, "clos:k=6", addressing.PerGroup, Options{Mode: Conditional})
	tab, err := ctl.Table(0) // an edge switch: 3 hosts, 3 uplinks
	if err != nil {
		t.Fatal(err)
	}
	if got := [2]int{tab.Count(KindConditional), tab.Count(KindAlternative)}; got != [2]int{3, 6} {
		t.Fatalf("conditional/alternative = %v, want [3 6]", got)
	}
	host := ctl.Plan().HostMAC(len(ctl.top.Hosts) - 1)
	r := tab.Lookup(1, host, ethertype.Traffic)
	if r.Kind != KindConditional {
		t.Fatalf("default is a %s rule", r.Kind)
	}
	// Pause every uplink: the frame still climbs, on the last alternative.
	all := tab.LookupPaused(1, host, ethertype.Traffic, func(int32) bool { return true })
	if all == nil || all.Kind != KindAlternative || all.Cond != 0 || all.Out[0] == r.Out[0] {
		t.Fatalf("with every uplink paused: %+v", all)
	}
	if n := len(tab.Choices(1, host, ethertype.Traffic)); n != 3 {
		t.Fatalf("%d uplink choices, want 3", n)
	}
}

// Pausing the default's port diverts injected frames to the host's
// alternative, and only them: transit frames do not load the conditions.
func TestConditionalPauseDiverts(t *testing.T) {
	ctl := compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, Options{Mode: Conditional})
	tab, _ := ctl.Table(0)
	dst := ctl.Plan().HostMAC(len(ctl.top.Hosts) - 1) // in the last group
	def := tab.Lookup(1, dst, ethertype.Traffic)
	if def == nil || def.Kind != KindConditional {
		t.Fatalf("default: %+v", def)
	}
	paused := func(p int32) bool { return p == def.Cond }
	alt := tab.LookupPaused(1, dst, ethertype.Traffic, paused)
	if alt == nil || alt.Kind != KindAlternative || alt.Out[0] == def.Out[0] {
		t.Fatalf("paused: %+v, default out %v", alt, def.Out)
	}
	if tr := tab.LookupPaused(3, dst, ethertype.Traffic, paused); tr != def {
		t.Fatalf("a transit frame left the default: %+v", tr)
	}
	if got := tab.LookupPaused(1, dst, ethertype.Traffic, func(int32) bool { return false }); got != def {
		t.Fatalf("nothing paused: %+v", got)
	}
}

// The walk must follow the alternatives: a broken alternative, which
// nothing uses while no port is paused, must fail it.
func TestConditionalWalkCoversAlternatives(t *testing.T) {
	for _, spec := range []string{"dragonfly:p=2,a=4,h=2", "clos:k=4", "flatfly:dims=3x3,t=2", "qcn-switch dragonfly:p=2,a=4,h=2"} {
		mode := Conditional
		if s, ok := strings.CutPrefix(spec, "qcn-switch "); ok {
			spec, mode = s, QCNSwitch // its CNM rules' output:CONTROLLER
		}
		ctl := compile(t, spec, addressing.PerGroup, Options{Mode: mode})
		ts := NewTables(ctl)
		r, err := Verify(ts, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Failures != 0 || r.Paths <= r.PairsChecked {
			t.Fatalf("%s: %d failures, %d paths for %d pairs: %+v", spec, r.Failures, r.Paths, r.PairsChecked, r.Examples)
		}
		tab, _ := ts.Get(0)
		for i := range tab.Rules {
			if tab.Rules[i].Kind == KindAlternative {
				tab.Rules[i].Out = []int32{1} // a host port
			}
		}
		if r, _ := Verify(ts, VerifyOptions{}); r.Failures == 0 {
			t.Fatalf("%s: broken alternatives passed the walk", spec)
		}
	}
}

// On a Dragonfly every path, detours included, must climb the channel
// order of the 2-level CoS plan; a detour through a second non-minimal
// global hop would not.
func TestDragonflyCoSOrder(t *testing.T) {
	ctl := compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, Options{Mode: Conditional})
	if cos := ctl.CoS(); cos.Levels != 2 {
		t.Fatalf("%d CoS levels, want 2", cos.Levels)
	}
	alt := &Rule{Kind: KindAlternative}
	min := &Rule{Kind: KindConditional}
	seq := []struct {
		class topology.LinkClass
		r     *Rule
	}{{topology.ClassGlobal, alt}, {topology.ClassLocal, min}, {topology.ClassGlobal, min}, {topology.ClassLocal, min}}
	last, level := -1, 0
	for _, h := range seq {
		var rank int
		rank, level = dfChannelRank(h.class, h.r, level)
		if rank <= last {
			t.Fatalf("G L G L does not ascend at %v", h)
		}
		last = rank
	}
	if rank, _ := dfChannelRank(topology.ClassGlobal, alt, level); rank > last {
		t.Fatal("a second detour after the minimal global hop ascends")
	}
}

func TestConditionalRefusesRewrite(t *testing.T) {
	sp, _ := topology.ParseSpec("dragonfly:p=1,a=2,h=1")
	top, _ := topology.Build(sp)
	plan, _ := addressing.New(top, addressing.PerGroup, false)
	if _, err := New(plan, Options{Mode: Conditional, Originals: make([]addressing.MAC, len(top.Hosts))}); err == nil {
		t.Fatal("conditional + rewrite accepted")
	}
}

// Open vSwitch must read every conditional table as written.
func TestConditionalOpenFlowParses(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("needs ovs-ofctl")
	}
	for _, spec := range []string{"dragonfly:p=2,a=4,h=2", "clos:k=4", "flatfly:dims=3x3,t=2"} {
		ctl := compile(t, spec, addressing.PerGroup, Options{Mode: Conditional})
		tab, _ := ctl.Table(1)
		f := filepath.Join(t.TempDir(), "t.flows")
		if err := os.WriteFile(f, []byte(tab.OpenFlow()), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ovs-ofctl", "-O", "OpenFlow13", "parse-flows", f).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", spec, err, out)
		}
		if n := strings.Count(string(out), "OFPT_FLOW_MOD"); n != len(tab.Rules) {
			t.Fatalf("%s: ovs-ofctl read %d flows of %d", spec, n, len(tab.Rules))
		}
	}
}

// QCN-Switch (spec §0.5): table 0 of every switch hands CNMs for its own
// hosts to its logic (output:CONTROLLER, 128 bytes) and on to routing,
// above the transit pass-through; no other frame, and no other mode, meets
// the rule. Flat addressing has no switch prefix: one rule per host.
func TestQCNSwitchInterceptRules(t *testing.T) {
	for _, c := range []struct {
		spec   string
		scheme addressing.Scheme
	}{{"dragonfly:p=2,a=4,h=2", addressing.PerGroup}, {"flatfly:dims=3x3,t=2", addressing.PerGroup}, {"dragonfly:p=2,a=4,h=2", addressing.Flat}} {
		ctl := compile(t, c.spec, c.scheme, Options{Mode: QCNSwitch})
		plan := ctl.Plan()
		top := plan.Topology()
		for sw := range top.Switches {
			tab, err := ctl.Table(sw)
			if err != nil {
				t.Fatal(err)
			}
			var rules []*Rule
			for i := range tab.Rules {
				if r := &tab.Rules[i]; r.Kind == KindCNM {
					rules = append(rules, r)
					if r.Table != TableCondition || r.Priority <= prioPassThrough || r.Controller != CNMMaxLen || r.Goto != TableRouting ||
						r.Match.DlType != ethertype.CNM || r.Match.InPort != 0 || len(r.Out) != 0 {
						t.Fatalf("%s switch %d: CNM rule %s", c.spec, sw, r.OpenFlow())
					}
					if !strings.Contains(r.OpenFlow(), "actions=controller(max_len=128),goto_table:1") {
						t.Errorf("rendered %s", r.OpenFlow())
					}
				}
			}
			if len(rules) == 0 {
				t.Fatalf("%s switch %d: no CNM rule", c.spec, sw)
			}
			// Every own host's address meets a CNM rule, no other host's.
			for h := range top.Hosts {
				mac := plan.HostMAC(h)
				hit := false
				for _, r := range rules {
					hit = hit || r.Match.Matches(0, mac, ethertype.CNM)
				}
				if own := top.Hosts[h].Switch == sw; hit != own {
					t.Fatalf("%s switch %d: host %d (own %v) meets the CNM rules: %v", c.spec, sw, h, own, hit)
				}
			}
		}
		if n := compile(t, c.spec, c.scheme, Options{Mode: Conditional}); func() int {
			tab, _ := n.Table(0)
			return tab.Count(KindCNM)
		}() != 0 {
			t.Errorf("%s: conditional mode has CNM rules", c.spec)
		}
	}
}
