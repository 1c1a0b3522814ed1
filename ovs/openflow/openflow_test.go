package openflow_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/ovs/openflow"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// tableCase is a switch table of one routing configuration.
type tableCase struct {
	name  string
	rules []controller.Rule
}

// cases are tables of every routing mode and rule shape the controller
// compiles: routing, compaction, Valiant, conditional and QCN-Switch
// (metadata, CNM to the controller), the source guard, assign rewrite,
// VLAN routing (push, pop, untagged members) and the learning VLAN
// bridge (learn, resubmit, register 0).
func cases(t *testing.T) []tableCase {
	t.Helper()
	type cfg struct {
		spec    string
		scheme  addressing.Scheme
		o       controller.Options
		rewrite bool
	}
	cfgs := []cfg{
		{spec: "dragonfly:p=2,a=4,h=2", scheme: addressing.PerGroup, o: controller.Options{Compact: true}},
		{spec: "dragonfly:p=2,a=4,h=2", scheme: addressing.PerGroup, o: controller.Options{Mode: controller.Valiant}},
		{spec: "dragonfly:p=2,a=4,h=2", scheme: addressing.PerGroup, o: controller.Options{Mode: controller.Conditional, SourceGuard: true}},
		{spec: "dragonfly:p=2,a=4,h=2", scheme: addressing.PerGroup, o: controller.Options{Mode: controller.QCNSwitch}},
		{spec: "flatfly:dims=3x3,t=2", scheme: addressing.PerGroup, o: controller.Options{}, rewrite: true},
		{spec: "mesh:dims=3x3", scheme: addressing.PerSwitch, o: controller.Options{Mode: controller.VLAN, VLANAssign: vlan.Fixed}},
		{spec: "mesh:dims=3x3", scheme: addressing.PerSwitch, o: controller.Options{Mode: controller.VLAN, VLANAssign: vlan.Fixed, VLANLearn: true, VLANAging: 300 * time.Second}},
	}
	var out []tableCase
	for _, c := range cfgs {
		sp, err := topology.ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		top, err := topology.Build(sp)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := addressing.New(top, c.scheme, c.o.Compact)
		if err != nil {
			t.Fatal(err)
		}
		if c.rewrite {
			c.o.Originals = make([]addressing.MAC, len(top.Hosts))
			for h := range c.o.Originals {
				c.o.Originals[h] = 0x0e0000000000 | addressing.MAC(h*7919+1)
			}
		}
		ctl, err := controller.New(plan, c.o)
		if err != nil {
			t.Fatal(err)
		}
		for _, sw := range []int{0, len(top.Switches) - 1} {
			tb, err := ctl.Table(sw)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tableCase{fmt.Sprintf("%s/%s/rewrite=%v/learn=%v/s%d", c.spec, ctl.Options().Mode, c.rewrite, c.o.VLANLearn, sw), tb.Rules})
		}
	}
	return out
}

// bridges starts a private Open vSwitch in its own namespace with the
// named port-less bridges.
func bridges(t *testing.T, names ...string) *ovs.Instance {
	t.Helper()
	roottest.NeedOVS(t)
	id := fmt.Sprintf("eof%d", os.Getpid()%100000)
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	_ = netns.DeleteNamed(id)
	ns, err := netns.NewNamed(id)
	if err != nil {
		t.Fatal(err)
	}
	netns.Set(orig)
	orig.Close()
	runtime.UnlockOSThread()
	t.Cleanup(func() { ns.Close(); netns.DeleteNamed(id) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in, err := ovs.Start(ctx, ovs.Config{Lab: id, RunDir: t.TempDir(), NetNS: id, Datapath: ovs.DatapathNetdev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Stop() })
	var bs []ovs.Bridge
	for _, n := range names {
		// "bridge:port" gives the bridge one port, a veth made here.
		br, port, ok := strings.Cut(n, ":")
		b := ovs.Bridge{Name: br}
		if ok {
			if out, err := exec.Command("ip", "-n", id, "link", "add", port, "type", "veth", "peer", "name", port+"x").CombinedOutput(); err != nil {
				t.Fatalf("veth %s: %v: %s", port, err, out)
			}
			b.Ports = []ovs.Port{{Name: port, OFPort: 1}}
		}
		bs = append(bs, b)
	}
	if err := in.CreateBridges(ctx, bs); err != nil {
		t.Fatal(err)
	}
	return in
}

func dial(t *testing.T, in *ovs.Instance, bridge string) *openflow.Conn {
	t.Helper()
	c, err := openflow.Dial(in.MgmtSocket(bridge))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// canonical lists a bridge's flows in a form that two encodings of the
// same table share: table, priority, cookie, sorted match fields,
// instructions.
func canonical(t *testing.T, c *openflow.Conn) []string {
	t.Helper()
	flows, err := c.Flows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range flows {
		var fields []string
		for m := f.Match; len(m) >= 4; {
			n := 4 + int(m[3])
			fields = append(fields, fmt.Sprintf("%x", m[:n]))
			m = m[n:]
		}
		slices.Sort(fields)
		out = append(out, fmt.Sprintf("table=%d prio=%d cookie=%#x match=%s instr=%x", f.Table, f.Priority, f.Cookie, strings.Join(fields, ","), f.Instructions))
	}
	slices.Sort(out)
	return out
}

// Every table the controller compiles, sent as binary flow mods in one
// bundle, is flow for flow what ovs-ofctl installs from its text form,
// and reads back as the compiled rules; a second table replaces the
// first; a rule the switch rejects leaves the table as it was.
func TestReplaceMatchesOfctl(t *testing.T) {
	in := bridges(t, "ofbin", "oftext", "ofports:ofp0", "ofload")
	bin, text, load := dial(t, in, "ofbin"), dial(t, in, "oftext"), dial(t, in, "ofload")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cs := cases(t)
	for k, c := range cs {
		if err := bin.Replace(ctx, c.rules); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var b strings.Builder
		for i := range c.rules {
			b.WriteString(c.rules[i].OpenFlow() + "\n")
		}
		f := filepath.Join(dir, fmt.Sprint(k))
		if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := ovs.InstallFlows(ctx, in.MgmtSocket("oftext"), f); err != nil {
			t.Fatalf("%s: ovs-ofctl: %v", c.name, err)
		}
		got, want := canonical(t, bin), canonical(t, text)
		if !slices.Equal(got, want) {
			for i := range max(len(got), len(want)) {
				g, w := "", ""
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Errorf("%s: flow %d:\n binary %s\n ofctl  %s", c.name, i, g, w)
					break
				}
			}
			t.Fatalf("%s: %d flows from binary, %d from ovs-ofctl", c.name, len(got), len(want))
		}
		n, err := bin.Verify(ctx, c.rules, nil)
		if err != nil || n != len(c.rules) {
			t.Fatalf("%s: verify: %d flows, %v", c.name, n, err)
		}
		// Load, up's one-write install, makes the same table over the
		// one before, and reads it back.
		if n, err := load.Load(ctx, c.rules, nil); err != nil || n != len(c.rules) {
			t.Fatalf("%s: load: %d flows read back, %v", c.name, n, err)
		}
		if got := canonical(t, load); !slices.Equal(got, want) {
			t.Fatalf("%s: load made %d flows, ovs-ofctl %d, or others", c.name, len(got), len(want))
		}
	}

	// Port counters, as ovs-ofctl reads them.
	ps, err := dial(t, in, "ofports").PortStats(ctx)
	if err != nil || !slices.ContainsFunc(ps, func(p openflow.PortStat) bool { return p.Port == 1 }) {
		text, _ := ovs.PortStats(ctx, in.MgmtSocket("ofports"))
		t.Fatalf("port stats %+v, %v: want port 1 (ovs-ofctl: %+v)", ps, err, text)
	}
	// InPort reads the switch's encoding of in_port.
	flows, err := bin.Flows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	withPort := 0
	for _, f := range flows {
		if p, ok := f.InPort(); ok {
			if p == 0 || p > 64 {
				t.Errorf("flow in_port %d", p)
			}
			withPort++
		}
	}
	if withPort == 0 {
		t.Errorf("none of %d flows of %s matches an in_port", len(flows), cs[len(cs)-1].name)
	}

	// A rule the switch refuses (a goto to an earlier table) fails the
	// whole bundle: the last table stays, intact.
	last := cs[len(cs)-1].rules
	bad := append(slices.Clone(cs[0].rules), controller.Rule{Table: 3, Priority: 7, Goto: 1})
	err = bin.Replace(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("rule %d", len(bad)-1)) {
		t.Fatalf("a goto backwards: %v, want the switch's rejection naming rule %d", err, len(bad)-1)
	}
	if n, err := bin.Verify(ctx, last, nil); err != nil || n != len(last) {
		t.Fatalf("after a rejected bundle: %d flows, %v", n, err)
	}
	// Load reports the rejection too, naming the rule (the bridge, with
	// no port, is for its caller to remove).
	if _, err := load.Load(ctx, bad, nil); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("rule %d", len(bad)-1)) {
		t.Fatalf("load with a goto backwards: %v, want the switch's rejection naming rule %d", err, len(bad)-1)
	}
	// Verify names what differs.
	short := last[:len(last)-1]
	if _, err := bin.Verify(ctx, short, nil); err == nil || !strings.Contains(err.Error(), "did not compile") {
		t.Fatalf("verify against a table missing a rule: %v", err)
	}
}
