package datapath

import (
	"slices"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/topotest"
	"github.com/ethfab/ethfab/topology"
)

type fabricCase struct {
	spec   string
	scheme addressing.Scheme
	opts   controller.Options
}

var cases = []fabricCase{
	{"dragonfly:p=2,a=4,h=2", addressing.PerGroup, controller.Options{Mode: controller.Minimal}},
	{"dragonfly:p=2,a=4,h=2", addressing.PerGroup, controller.Options{Mode: controller.Minimal, Compact: true, SourceGuard: true}},
	{"dragonfly:p=2,a=4,h=2", addressing.PerGroup, controller.Options{Mode: controller.Valiant}},
	{"dragonfly:p=2,a=3,h=2", addressing.PerGroup, controller.Options{Mode: controller.Conditional}},
	{"dragonfly:p=2,a=3,h=2", addressing.Flat, controller.Options{Mode: controller.Minimal}},
	{"flatfly:dims=3x3,t=2", addressing.PerSwitch, controller.Options{Mode: controller.Conditional}},
	{"flatfly:dims=3x3,t=2", addressing.PerSwitch, controller.Options{Mode: controller.Valiant}},
	{"clos:k=4", addressing.PerSwitch, controller.Options{Mode: controller.Minimal}},
	{"clos:k=4", addressing.PerSwitch, controller.Options{Mode: controller.Conditional}},
}

// fabric compiles a case's tables and gives every switch port a made-up
// ifindex.
func fabric(t testing.TB, c fabricCase) (*topology.Topology, *addressing.Plan, []*controller.Table, []PortRef) {
	top := buildSpec(t, c.spec)
	plan, _, tables, ports := compileOn(t, top, c.scheme, c.opts)
	return top, plan, tables, ports
}

// buildSpec is the one topology fixture (internal/topotest).
var buildSpec = topotest.Build

// compileOn is fabric on a built topology, with the controller.
func compileOn(t testing.TB, top *topology.Topology, scheme addressing.Scheme, opts controller.Options) (*addressing.Plan, *controller.Controller, []*controller.Table, []PortRef) {
	t.Helper()
	plan, err := addressing.New(top, scheme, opts.Compact)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	tables := make([]*controller.Table, len(top.Switches))
	var ports []PortRef
	for i := range top.Switches {
		if tables[i], err = ctl.Table(i); err != nil {
			t.Fatal(err)
		}
		for _, p := range top.Switches[i].Ports {
			ports = append(ports, PortRef{Switch: i, Port: p.Num, Ifindex: ifindexOf(i, p.Num), Host: p.Class == topology.ClassHost})
		}
	}
	return plan, ctl, tables, ports
}

func ifindexOf(sw, port int) uint32 { return uint32(1000 + sw*256 + port) }

// TestForwardMatchesTheController checks the datapath's lookup against
// the controller's own: for every switch, ingress port, destination (every
// host, broadcast, an unknown address), EtherType (data, DMP) and
// condition bitmask (none, each bit alone, all), the eBPF datapath's maps
// select the rule Table.LookupPaused selects, rewrite as it does and
// output where it does.
func TestForwardMatchesTheController(t *testing.T) {
	for _, c := range cases {
		top, plan, tables, ports := fabric(t, c)
		img, err := Build(tables, ports)
		if err != nil {
			t.Fatalf("%s %s: %v", c.spec, c.opts.Mode, err)
		}
		hostOn := map[[2]int]int{}
		for _, h := range top.Hosts {
			hostOn[[2]int{h.Switch, h.Port}] = h.ID
		}
		var dsts []addressing.MAC
		for h := range top.Hosts {
			dsts = append(dsts, plan.HostMAC(h))
		}
		dsts = append(dsts, controller.Broadcast, 0x0e0000000001)
		// Addresses no host has, one bit off a host's: a direct subtable
		// indexes its slots by some of a destination's bits and must miss
		// whatever the others say.
		for _, h := range []int{0, len(top.Hosts) - 1} {
			for bit := range 48 {
				dsts = append(dsts, plan.HostMAC(h)^addressing.MAC(1)<<bit)
			}
		}
		checked := 0
		for sw, tab := range tables {
			masks := []uint64{0, 1<<len(tab.CondPorts) - 1}
			for b := range tab.CondPorts {
				masks = append(masks, 1<<b)
			}
			for _, p := range top.Switches[sw].Ports {
				src := plan.HostMAC(0)
				if h, ok := hostOn[[2]int{sw, p.Num}]; ok {
					src = plan.HostMAC(h)
				}
				for _, dst := range dsts {
					for _, dl := range []uint16{ethertype.Traffic, ethertype.DMP} {
						for _, mask := range masks {
							paused := func(port int32) bool {
								i := slices.Index(tab.CondPorts, port)
								return i >= 0 && mask&(1<<i) != 0
							}
							want := tab.LookupPaused(p.Num, dst, dl, paused)
							got, ok := img.Forward(ifindexOf(sw, p.Num), src, dst, dl, 0, mask)
							if !ok {
								t.Fatalf("%s: port %d of switch %d unknown", c.spec, p.Num, sw)
							}
							if msg := differ(want, got, sw, p.Num, src, dst); msg != "" {
								t.Fatalf("%s %s switch %d port %d dst %s type %#x cond %#x: %s", c.spec, c.opts.Mode, sw, p.Num, dst, dl, mask, msg)
							}
							checked++
						}
					}
				}
			}
		}
		t.Logf("%s %s: %d frames, %d rules hashed of %d, %d actions", c.spec, c.opts.Mode, checked, len(img.rules), img.placed, len(img.Actions))
		if img.TransitHashed() {
			t.Errorf("%s %s: a frame from another switch searches a hashed subtable; every one should be direct", c.spec, c.opts.Mode)
		}
	}
}

func differ(want *controller.Rule, got Decision, sw, inPort int, src, dst addressing.MAC) string {
	if want == nil {
		if got.Rule != nil && got.Rule.NOut > 0 {
			return "the controller has no rule; the datapath forwards"
		}
		return ""
	}
	if got.Rule == nil {
		return "the datapath has no rule for " + want.OpenFlow()
	}
	if controller.Kind(got.Rule.Kind) != want.Kind {
		return "datapath rule kind " + controller.Kind(got.Rule.Kind).String() + ", controller's " + want.OpenFlow()
	}
	wantSrc, wantDst := src, dst
	if want.SetSrc != 0 {
		wantSrc = want.SetSrc
	}
	if want.SetDst != 0 {
		wantDst = want.SetDst
	}
	if got.Src != wantSrc || got.Dst != wantDst {
		return "rewrites differ from " + want.OpenFlow()
	}
	var out []uint32
	for _, o := range want.Out {
		switch {
		case o == controller.PortInPort:
			out = append(out, ifindexOf(sw, inPort))
		case int(o) != inPort:
			out = append(out, ifindexOf(sw, int(o)))
		}
	}
	if !slices.Equal(out, got.Out) {
		return "outputs differ from " + want.OpenFlow()
	}
	return ""
}

// A rule left out because an equal match of higher priority shadows it
// takes no action entry with it: a later rule with that action (a drop,
// which rules share) must not find another rule's outputs there.
func TestShadowedRuleLeavesNoAction(t *testing.T) {
	_, _, tables, ports := fabric(t, cases[0])
	p := top0Ports(t, ports)
	tables[0] = &controller.Table{Rules: []controller.Rule{
		{Kind: controller.KindRouting, Priority: 20, Match: controller.Match{InPort: p[0]}, Out: []int32{int32(p[1])}},
		{Kind: controller.KindRouting, Priority: 10, Match: controller.Match{InPort: p[0]}}, // shadowed drop
		{Kind: controller.KindRouting, Priority: 10, Match: controller.Match{InPort: p[1]}, Out: []int32{int32(p[0])}},
		{Kind: controller.KindRouting, Priority: 10, Match: controller.Match{InPort: p[2]}}, // drop
	}}
	img, err := Build(tables, ports)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   int
		want []uint32
	}{{p[0], []uint32{ifindexOf(0, p[1])}}, {p[1], []uint32{ifindexOf(0, p[0])}}, {p[2], nil}} {
		d, _ := img.Forward(ifindexOf(0, c.in), 0x020000000001, 0x020000000002, ethertype.Traffic, 0, 0)
		if !slices.Equal(d.Out, c.want) {
			t.Errorf("in port %d: out %v, want %v", c.in, d.Out, c.want)
		}
	}
}

// top0Ports is three port numbers of switch 0.
func top0Ports(t *testing.T, ports []PortRef) []int {
	var p []int
	for _, r := range ports {
		if r.Switch == 0 && len(p) < 3 {
			p = append(p, r.Port)
		}
	}
	if len(p) < 3 {
		t.Fatalf("switch 0 has %d ports", len(p))
	}
	return p
}

// TestBuildRefuses: what the program cannot hold is an error naming the
// switch and rule, not a silently different datapath.
func TestBuildRefuses(t *testing.T) {
	_, _, tables, ports := fabric(t, cases[0])
	bad := *tables[0]
	bad.Rules = append([]controller.Rule{{Kind: controller.KindRouting, Priority: 1, Out: []int32{99}}}, bad.Rules...)
	tables[0] = &bad
	if _, err := Build(tables, ports); err == nil {
		t.Fatal("a rule output to a port with no device was accepted")
	}
	tables[0].Rules[0] = controller.Rule{Kind: controller.KindRouting, Priority: 1, Goto: 1, Out: []int32{1}}
	if _, err := Build(tables, ports); err == nil {
		t.Fatal("outputs with goto_table were accepted")
	}
	if _, err := Build(tables, append(ports, ports[0])); err == nil {
		t.Fatal("an ifindex given twice was accepted")
	}
	// Two rules of one priority that a frame can match both of, with
	// different outputs: which one wins would be the datapath's whim.
	tables[0].Rules[0] = controller.Rule{Kind: controller.KindRouting, Table: 1, Priority: 7, Match: controller.Match{Dst: 0x020000000000, DstMask: 0xff0000000000}, Out: []int32{1}}
	tables[0].Rules = append(tables[0].Rules, controller.Rule{Kind: controller.KindRouting, Table: 1, Priority: 7, Match: controller.Match{InPort: 2}, Out: []int32{2}})
	if _, err := Build(tables, ports); err == nil || !strings.Contains(err.Error(), "priority 7") {
		t.Fatalf("overlapping rules of equal priority: %v", err)
	}
}
