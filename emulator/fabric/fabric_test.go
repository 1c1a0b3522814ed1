package fabric

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/hostagent/vlanlearn"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/ovs/openflow"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/switchprofile"
)

// upYAML brings a lab up from a scenario's text and takes it down when
// the test ends.
func upYAML(t *testing.T, name, body string) *Lab {
	t.Helper()
	sc, err := scenario.Parse(name+".yaml", []byte("name: "+name+"\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(name) })
	lab, err := Up(context.Background(), sc, UpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return lab
}

func scenarioFor(t *testing.T, name, topo string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse(name+".yaml", []byte("name: "+name+"\ntopology: "+topo+"\nlinks: {host: {rate: 50mbit}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A small Dragonfly, Flattened Butterfly, Clos, torus, M-tree, Myrinet-Clos,
// fat tree, XGFT and custom fabric come up on real OVS; the
// flow count of every bridge equals the controller's table; hosts reach
// each other with real ICMP through the fabric; down leaves nothing (the
// Dragonfly's paced, its namespaces let go two at a time).
func TestUpPingDown(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	for _, c := range []struct{ name, topo string }{
		{"eft-df", "{kind: dragonfly, p: 1, a: 2, h: 1}"},
		{"eft-fb", "{kind: flatfly, dims: [3, 2], t: 1}"},
		{"eft-clos", "{kind: clos, k: 4, pods: 2}"},
		// Seed 002's topologies, routed on shortest paths.
		{"eft-tor", "{kind: torus, dims: [3, 3], links: 2}"},
		{"eft-mt", "{kind: mtree, dims: [3, 2]}"},
		{"eft-mc", "{kind: myriclos, n: 2}"},
		{"eft-ft", "{kind: fattree, u: 2, d: 4, r: 2}"},
		// Seed 003's: an XGFT routed d-mod-m, a hand-drawn fabric.
		{"eft-xg", "{kind: xgft, h: 2, m: [2, 3], w: [1, 2]}"},
		{"eft-cu", "{kind: custom, switches: [A, B, C, D], links: [[A, B], [B, C], [A, D], [D, C]], hosts: {A: 1, C: 2}}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := scenarioFor(t, c.name, c.topo)
			t.Cleanup(func() { Down(c.name) })
			lab, err := Up(context.Background(), sc, UpOptions{})
			if err != nil {
				t.Fatal(err)
			}
			comp, err := Compile(sc)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range lab.Switches {
				n, err := openflow.FlowCount(context.Background(), s.Mgmt)
				if err != nil || n != len(comp.Tables[i].Rules) {
					t.Errorf("%s: %d flows (%v), controller compiled %d", s.Name, n, err, len(comp.Tables[i].Rules))
				}
			}
			// Every host pings the last host and the last pings every host.
			last := lab.Hosts[len(lab.Hosts)-1]
			for _, h := range lab.Hosts[:len(lab.Hosts)-1] {
				for _, p := range [][2]Host{{h, last}, {last, h}} {
					out, err := exec.Command("ip", "netns", "exec", p[0].NetNS, "ping", "-c", "1", "-W", "3", p[1].IP).CombinedOutput()
					if err != nil {
						t.Errorf("%s -> %s: %v\n%s", p[0].Name, p[1].Name, err, out)
					}
				}
			}
			runDir := lab.OVS.RunDir
			if c.name == "eft-df" {
				old := PaceNamespaces
				PaceNamespaces = 2
				defer func() { PaceNamespaces = old }()
			}
			if err := Down(c.name); err != nil {
				t.Fatal(err)
			}
			if err := Down(c.name); !errors.Is(err, ErrNoLab) {
				t.Fatalf("second down: %v, want ErrNoLab", err)
			}
			left, _ := kernel.ListNamespaces(c.name + "-")
			if len(left) != 0 {
				t.Errorf("namespaces left: %v", left)
			}
			if _, err := os.Stat(filepath.Dir(runDir)); !os.IsNotExist(err) {
				t.Errorf("lab directory left: %v", err)
			}
			ps, _ := exec.Command("ps", "-eo", "args").Output()
			if strings.Contains(string(ps), runDir) {
				t.Errorf("daemons of %s still running", runDir)
			}
		})
	}
}

// A bad scenario fails before anything is built.
func TestRequiredImpairmentFailsBeforeBuilding(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	if kernel.Probe().Netem {
		t.Skip("this kernel has netem")
	}
	sc, err := scenario.Parse("eft-bad.yaml", []byte("name: eft-bad\ntopology: {kind: dragonfly, p: 1, a: 2, h: 1}\nlinks: {host: {rate: 10mbit, delay: 1ms}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Up(context.Background(), sc, UpOptions{}); err == nil || !strings.Contains(err.Error(), "netem") {
		t.Fatalf("want a netem error, got %v", err)
	}
	if _, err := os.Stat(LabDir("eft-bad")); !os.IsNotExist(err) {
		t.Errorf("lab directory exists after a refused scenario")
	}
	if left, _ := kernel.ListNamespaces("eft-bad-"); len(left) != 0 {
		t.Errorf("namespaces made: %v", left)
	}
}

// The broadcast check on real Open vSwitch: every host's broadcast reaches
// every other host once; a switch that reflects a host's broadcast is
// caught (the source hears it back, no one else gets it), and so is one
// that sends a broadcast to a host twice.
func TestBroadcastCheck(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	const name = "eft-bc"
	l := upYAML(t, name, "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\nlinks: {host: {rate: 50mbit}}\n")
	n := len(l.Hosts)
	check := func() *BroadcastReport {
		t.Helper()
		b, err := Broadcast(context.Background(), l, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if b := check(); !b.OK() || b.Delivered != n*(n-1) {
		t.Fatalf("clean fabric: %+v", b)
	}
	mgmt := map[string]string{}
	for _, s := range l.Switches {
		mgmt[s.Name] = s.Mgmt
	}
	ofctl := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ovs-ofctl", append([]string{"-O", "OpenFlow13"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ovs-ofctl %v: %v\n%s", args, err, out)
		}
	}
	h0, h1 := l.Hosts[0], l.Hosts[1]
	reflect := fmt.Sprintf("priority=65535,in_port=%d,dl_dst=ff:ff:ff:ff:ff:ff", h0.Port)
	ofctl("add-flow", mgmt[h0.Switch], reflect+",actions=in_port")
	b := check()
	if len(b.Returned) != 1 || b.Returned[0] != h0.Name || len(b.Missing) != n-1 || len(b.Duplicated) != 0 {
		t.Errorf("%s's switch reflecting its broadcast: returned %v, missing %v, duplicated %v", h0.Name, b.Returned, b.Missing, b.Duplicated)
	}
	ofctl("--strict", "del-flows", mgmt[h0.Switch], reflect)
	twice := fmt.Sprintf("priority=65535,dl_src=%s,dl_dst=ff:ff:ff:ff:ff:ff", h0.MAC)
	ofctl("add-flow", mgmt[h1.Switch], fmt.Sprintf("%s,actions=output:%d,output:%d", twice, h1.Port, h1.Port))
	b = check()
	if len(b.Duplicated) != 1 || b.Duplicated[0] != (Unreachable{h0.Name, h1.Name}) || len(b.Returned) != 0 {
		t.Errorf("%s's broadcast sent twice to %s: duplicated %v, returned %v", h0.Name, h1.Name, b.Duplicated, b.Returned)
	}
}

// assign rewrite: hosts keep their original MACs, the access switches
// translate, and every pair is still reached through the fabric, with
// frames addressed to pseudo-MACs.
func TestRewriteReachesEveryPair(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	const name = "eft-rw"
	l := upYAML(t, name, "topology: {kind: dragonfly, p: 2, a: 2, h: 1}\naddressing: {assign: rewrite}\nlinks: {host: {rate: 50mbit}}\n")
	for _, h := range l.Hosts {
		out, err := exec.Command("ip", "-n", h.NetNS, "-br", "link", "show", HostIface).Output()
		if err != nil || !strings.Contains(string(out), h.MAC) || h.MAC == h.PseudoMAC || !strings.HasPrefix(h.MAC, "0e:") {
			t.Errorf("%s: want its original MAC %s on %s, pseudo-MAC %s: %s %v", h.Name, h.MAC, HostIface, h.PseudoMAC, out, err)
		}
	}
	r, err := Ping(context.Background(), l, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reached != r.Pairs || r.Pairs != len(l.Hosts)*(len(l.Hosts)-1) {
		t.Fatalf("%d of %d pairs reached: %v", r.Reached, r.Pairs, r.Unreachable)
	}
}

// Switch-tagged VLAN routing (seed 002) on real Open vSwitch: every pair
// is reached, by the traffic engine's frames and by ICMP after ARP's
// broadcast; the renamed assignment's frames cross the switches untagged
// (every inter-switch port classifies untagged frames), the fixed one's
// tagged (the trunks' tagged-VLAN rules carry them) — read from the
// bridges' own flow counters.
func TestVLANRouting(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	for _, c := range []struct{ name, topo, assign string }{
		{"eft-vr", "{kind: mesh, dims: [3, 2]}", "renamed"},
		{"eft-vf", "{kind: mesh, dims: [3, 2]}", "fixed"},
		{"eft-vt", "{kind: fattree, u: 2, d: 4, r: 2}", "renamed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lab := upYAML(t, c.name, "topology: "+c.topo+"\nrouting: {mode: vlan, vlan: {assign: "+c.assign+"}}\nlinks: {host: {rate: 50mbit}}\n")
			r, err := Ping(context.Background(), lab, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if r.Reached != r.Pairs || r.Pairs != len(lab.Hosts)*(len(lab.Hosts)-1) {
				t.Fatalf("%d of %d pairs reached: %v", r.Reached, r.Pairs, r.Unreachable)
			}
			first, last := lab.Hosts[0], lab.Hosts[len(lab.Hosts)-1]
			if out, err := exec.Command("ip", "netns", "exec", first.NetNS, "ping", "-c", "2", "-W", "3", last.IP).CombinedOutput(); err != nil {
				t.Fatalf("ICMP %s -> %s: %v\n%s", first.Name, last.Name, err, out)
			}
			// Frames into table 0 on inter-switch ports: tagged (fixed) or
			// untagged (renamed).
			var tagged, untagged uint64
			for _, s := range lab.Switches {
				flows, err := ovs.DumpFlows(context.Background(), s.Mgmt)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range flows {
					if f.Table != 0 || !strings.Contains(f.Match, "in_port") {
						continue
					}
					switch {
					case strings.Contains(f.Match, "dl_vlan="):
						tagged += f.Packets
					case strings.Contains(f.Actions, "push_vlan") && !hostPort(lab, s.Name, f.Match):
						untagged += f.Packets
					}
				}
			}
			if (c.assign == "fixed") != (tagged > 0) || (c.assign == "renamed") != (untagged > 0) {
				t.Errorf("%s: %d frames entered switches tagged, %d untagged on inter-switch ports", c.assign, tagged, untagged)
			}
		})
	}
}

// hostPort says whether a table-0 match names a host port of the switch.
func hostPort(lab *Lab, sw, match string) bool {
	for _, h := range lab.Hosts {
		if h.Switch == sw && strings.Contains(match+",", fmt.Sprintf("in_port=%d,", h.Port)) {
			return true
		}
	}
	return false
}

// A link turned off cuts exactly the pairs whose paths cross it; turned
// on after its hold, every pair is reached again. On ring:n=4 the link
// s0-s1 carries s0->s1, s1->s0, s0->s2 (ties go forward) and s3->s1.
func TestLinkOffOn(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	const name = "eft-lk"
	sc := scenarioFor(t, name, "{kind: ring, n: 4}")
	t.Cleanup(func() { Down(name) })
	lab, err := Up(context.Background(), sc, UpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.SwitchLinks("s0", "s2"); !errors.Is(err, ErrNoSuchLink) {
		t.Errorf("s0-s2: %v, want ErrNoSuchLink", err)
	}
	links, err := lab.SwitchLinks("s1", "s0")
	if err != nil || len(links) != 1 {
		t.Fatalf("s1-s0: %v, %v", links, err)
	}
	if _, err := SwitchLink(context.Background(), lab, "s1", "s0", false, 0, false); err != nil {
		t.Fatal(err)
	}
	// The state records the link off: its two switches lose a port each.
	if l, err := Load(name); err != nil || len(l.LinksOff) != 1 {
		t.Errorf("lab state: %v, %v", l.LinksOff, err)
	} else if sp, err := l.PortSpeeds(); err != nil || count(sp["s0"], switchprofile.Off) != 1 || count(sp["s1"], switchprofile.Off) != 1 || count(sp["s2"], switchprofile.Off) != 0 {
		t.Errorf("port speeds %v, %v: want s0 and s1 with a port off", sp, err)
	}
	r, err := Ping(context.Background(), lab, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	var cut []string
	for _, u := range r.Unreachable {
		cut = append(cut, u.Src+">"+u.Dst)
	}
	slices.Sort(cut)
	if want := []string{"s0h0>s1h0", "s0h0>s2h0", "s1h0>s0h0", "s3h0>s1h0"}; !slices.Equal(cut, want) {
		t.Errorf("link off: unreachable %v, want %v", cut, want)
	}
	t0 := time.Now()
	if _, err := SwitchLink(context.Background(), lab, "s0", "s1", true, 300*time.Millisecond, false); err != nil {
		t.Fatal(err)
	}
	if l, _ := Load(name); len(l.LinksOff) != 0 {
		t.Errorf("lab state after on: %v", l.LinksOff)
	}
	if held := time.Since(t0); held < 300*time.Millisecond {
		t.Errorf("on after %v, hold 300ms", held)
	}
	if r, err := Ping(context.Background(), lab, 0, 1); err != nil || r.Reached != r.Pairs {
		t.Fatalf("link on: %d of %d pairs, %v", r.Reached, r.Pairs, err)
	}

	// A speed change: both ends' tbf at a tenth of the rate after the
	// carrier was down for the hold (seed 002's multispeed regulation).
	_, built, err := lab.LinkRate("s0", "s1")
	if err != nil || built == 0 {
		t.Fatalf("built rate %d, %v", built, err)
	}
	t0 = time.Now()
	if _, err := SetLinkRate(context.Background(), lab, "s1", "s0", built/10, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if held := time.Since(t0); held < 300*time.Millisecond {
		t.Errorf("rate changed after %v, hold 300ms", held)
	}
	for _, e := range []LinkEnd{links[0].A, links[0].B} {
		out, _ := exec.Command("ip", "netns", "exec", e.NetNS, "tc", "qdisc", "show", "dev", e.Iface).CombinedOutput()
		if want := "rate " + strings.ToLower(rate.Format(built/10)); !strings.Contains(strings.ToLower(string(out)), want) {
			t.Errorf("%s: %s, want %s", e.Iface, out, want)
		}
	}
	l, err := Load(name)
	if err != nil || len(l.LinkRates) != 1 || l.LinkRates[0].RateBps != built/10 {
		t.Fatalf("lab state after the rate change: %+v, %v", l.LinkRates, err)
	}
	if sp, err := l.PortSpeeds(); err != nil || count(sp["s0"], switchprofile.Speed100) != 1 || count(sp["s2"], switchprofile.Speed100) != 0 {
		t.Errorf("port speeds %v, %v: want s0 with a 100M port", sp, err)
	}
	if r, err := Ping(context.Background(), lab, 0, 1); err != nil || r.Reached != r.Pairs {
		t.Errorf("at a tenth of the rate: %d of %d pairs, %v", r.Reached, r.Pairs, err)
	}
	if _, err := SetLinkRate(context.Background(), lab, "s0", "s1", built, 0); err != nil {
		t.Fatal(err)
	}
	if l, _ := Load(name); len(l.LinkRates) != 0 {
		t.Errorf("lab state back at the built rate: %+v", l.LinkRates)
	}
}

func count[T comparable](xs []T, v T) int {
	n := 0
	for _, x := range xs {
		if x == v {
			n++
		}
	}
	return n
}

// Seed 002's safe order (spec check C.7-11): with the paths moved around
// the link before it goes off and back after it comes on, a ping every
// 100 ms between hosts whose path crosses the link loses at most one
// probe per operation, and every pair stays reachable while it is off;
// the unsafe order cuts the pairs whose paths cross it. On a 3x3 mesh
// with renamed VLANs (north-last around the link; none lost in 5 of 5
// runs since Reroute orders the switches, one per operation before), on
// a 4x4 torus (round the ring the other way), and
// on a (2,4,2) fat tree with the fixed assignment, a leaf's up link off
// (each leaf's tree repaired, vlan.OffPaths; t0s2's path to t0s0 moves
// from t1s0 to t1s1, and lost 8 probes at each change before the new
// tables kept the old routes below theirs).
func TestLinkSafeOrder(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	for _, c := range []struct {
		name, yaml, a, b, src, dst string
	}{
		{"eft-ls", "topology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan}\nlinks: {host: {rate: 50mbit}}\n",
			"s1-1", "s2-1", "s1-1h0", "s2-1h0"},
		{"eft-lf", "topology: {kind: fattree, u: 2, d: 4, r: 2}\nrouting: {mode: vlan, vlan: {assign: fixed}}\nlinks: {host: {rate: 50mbit}}\n",
			"t0s0", "t1s0", "t0s2h0", "t0s0h0"},
		// The same on the eBPF datapath: new tables into its spare bank,
		// each switch moved by one map write (datapath.Reroute).
		{"eft-lse", "topology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan}\novs: {datapath: ebpf}\nlinks: {host: {rate: 50mbit}}\n",
			"s1-1", "s2-1", "s1-1h0", "s2-1h0"},
		{"eft-lfe", "topology: {kind: fattree, u: 2, d: 4, r: 2}\nrouting: {mode: vlan, vlan: {assign: fixed}}\novs: {datapath: ebpf}\nlinks: {host: {rate: 50mbit}}\n",
			"t0s0", "t1s0", "t0s2h0", "t0s0h0"},
		// A 4x4 torus with two links between neighbours: the ring with
		// the link off becomes a line, s1-1's frames for s2-1 go round it
		// the other way (vlan.OffPaths).
		{"eft-lte", "topology: {kind: torus, dims: [4, 4], links: 2}\nrouting: {mode: vlan}\novs: {datapath: ebpf}\nlinks: {host: {rate: 50mbit}}\n",
			"s1-1", "s2-1", "s1-1h0", "s2-1h0"},
		// The lines path set (each ring two lines, one per lane), fixed
		// VLANs, on a 5x5 torus.
		{"eft-ltl", "topology: {kind: torus, dims: [5, 5], links: 2}\nrouting: {mode: vlan, vlan: {assign: fixed, torus: lines}}\novs: {datapath: ebpf}\nlinks: {host: {rate: 50mbit}}\n",
			"s1-1", "s2-1", "s1-1h0", "s2-1h0"},
	} {
		t.Run(c.name, func(t *testing.T) { linkSafeOrder(t, c.name, c.yaml, c.a, c.b, c.src, c.dst) })
	}
}

func linkSafeOrder(t *testing.T, name, yaml, swA, swB, src, dst string) {
	lab := upYAML(t, name, yaml)
	a, b := lab.Host(src), lab.Host(dst)
	if a == nil || b == nil {
		t.Fatalf("no host %s or %s", src, dst)
	}
	ping := exec.Command("ip", "netns", "exec", a.NetNS, "ping", "-n", "-i", "0.1", "-c", "40", "-W", "1", b.IP)
	var out strings.Builder
	ping.Stdout = &out
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := SwitchLink(context.Background(), lab, swA, swB, false, 0, true); err != nil {
		t.Fatal(err)
	}
	if l, err := Load(name); err != nil || len(l.VLANOff) != 1 {
		t.Errorf("lab state after off: %v, %v", l.VLANOff, err)
	}
	r, err := Ping(context.Background(), lab, 0, 1)
	if err != nil || r.Reached != r.Pairs {
		t.Errorf("safe order, link off: %d of %d pairs reached (%v), %v", r.Reached, r.Pairs, r.Unreachable, err)
	}
	if _, err := SwitchLink(context.Background(), lab, swA, swB, true, 500*time.Millisecond, true); err != nil {
		t.Fatal(err)
	}
	if err := ping.Wait(); err != nil {
		t.Logf("ping: %v", err)
	}
	var sent, got int
	if i := strings.Index(out.String(), " packets transmitted"); i < 0 {
		t.Fatalf("ping said:\n%s", out.String())
	} else if _, err := fmt.Sscanf(out.String()[strings.LastIndex(out.String()[:i], "\n")+1:], "%d packets transmitted, %d received", &sent, &got); err != nil {
		t.Fatalf("ping said:\n%s", out.String())
	}
	t.Logf("safe order: %d of %d probes from %s to %s answered", got, sent, src, dst)
	if sent != 40 || sent-got > 2 {
		t.Errorf("safe order: %d of %d probes answered (at most 1 lost per operation)", got, sent)
	}
	if l, _ := Load(name); len(l.VLANOff) != 0 {
		t.Errorf("lab state after on: %v", l.VLANOff)
	}
	links, err := lab.SwitchLinks(swA, swB)
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.SetLinks(context.Background(), links, false, 0); err != nil {
		t.Fatal(err)
	}
	if r, err := Ping(context.Background(), lab, 0, 1); err != nil || r.Reached == r.Pairs {
		t.Errorf("unsafe order, link off: %d of %d pairs reached, %v", r.Reached, r.Pairs, err)
	}
}

// Learning switches under the fixed assignment (routing.vlan.macs learn,
// seed 002 §3.3): every pair is reached, flooding where the destination
// was never seen in the frame's VLAN; after every host's learning
// broadcast in every VLAN (hostagent/vlanlearn), every switch holds every
// host in every VLAN it carries, and an all-pairs ping floods nothing.
func TestVLANLearning(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	lab := upYAML(t, "eft-vl", "topology: {kind: mesh, dims: [3, 2]}\n"+
		"routing: {mode: vlan, vlan: {assign: fixed, macs: learn}}\nlinks: {host: {rate: 50mbit}}\n")
	floods := func() (n uint64, learned []int) {
		for _, s := range lab.Switches {
			flows, err := ovs.DumpFlows(context.Background(), s.Mgmt)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for _, f := range flows {
				if kind, ok := controller.KindOfCookie(f.Cookie); ok && kind == controller.KindVLANFlood {
					n += f.Packets
				}
				if f.Table == controller.LearnTable {
					k++
				}
			}
			learned = append(learned, k)
		}
		return n, learned
	}
	if r, err := Ping(context.Background(), lab, 0, 1); err != nil || r.Reached != r.Pairs {
		t.Fatalf("learning, no broadcasts: %d of %d pairs, %v", r.Reached, r.Pairs, err)
	}
	before, _ := floods()
	if before == 0 {
		t.Errorf("no unknown unicast flooded without the learning broadcasts")
	}
	vids := lab.compiled.Ctl.VLANAssignment().VIDs()
	var hosts []vlanlearn.Host
	for _, h := range lab.Hosts {
		mac, _ := net.ParseMAC(h.MAC)
		hosts = append(hosts, vlanlearn.Host{Name: h.Name, NetNS: h.NetNS, Iface: h.Iface, MAC: mac})
	}
	if n, err := vlanlearn.Broadcast(hosts, vids); err != nil || n != len(hosts)*len(vids) {
		t.Fatalf("%d broadcasts, %v", n, err)
	}
	// Every switch of a mesh carries every fixed VLAN: it learns every
	// host in each (the floods take milliseconds; wait on the tables).
	want := len(hosts) * len(vids)
	var learned []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, learned = floods(); slices.Min(learned) >= want {
			break
		}
	}
	if slices.Min(learned) < want {
		t.Fatalf("entries learned per switch %v, want %d each", learned, want)
	}
	mid, _ := floods()
	if r, err := Ping(context.Background(), lab, 0, 1); err != nil || r.Reached != r.Pairs {
		t.Fatalf("after the broadcasts: %d of %d pairs, %v", r.Reached, r.Pairs, err)
	}
	if after, _ := floods(); after != mid {
		t.Errorf("all pairs pinged after the learning broadcasts flooded %d frames, want 0 (before them: %d)", after-mid, before)
	}
}

// Up and Down expedite RCU grace periods for their own work
// (ExpediteRCU, expediteRCU) and leave the machine's switch as they found
// it, with nothing left in the journal.
func TestUpDownLeaveGracePeriodsAsFound(t *testing.T) {
	roottest.NeedOVS(t)
	before, err := readSetting(rcuSetting.path)
	if err != nil {
		t.Skipf("no %s: %v", rcuSetting.path, err)
	}
	check := func(when string) {
		t.Helper()
		if v, _ := readSetting(rcuSetting.path); v != before {
			t.Errorf("%s: rcu_expedited %s, was %s", when, v, before)
		}
		if j, err := readJournal(); err != nil {
			t.Error(err)
		} else if v, ok := j[rcuSetting.name]; ok {
			t.Errorf("%s: the journal still holds rcu_expedited %s", when, v)
		}
	}
	lab := upYAML(t, "efrcu", "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n")
	check("after up")
	if err := Down(lab.Lab); err != nil {
		t.Fatal(err)
	}
	check("after down")
}
