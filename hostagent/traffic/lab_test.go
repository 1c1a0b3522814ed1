package traffic

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/topology"
)

// testLab is n host namespaces whose eth0 plug into a Linux bridge inside a
// namespace of its own: the smallest fabric the engine can drive. Each
// host's eth0 may be shaped (tbf) to emulate its host link.
type testLab struct {
	hosts []Host
	topo  *topology.Topology
	ns    []string
}

// newLab builds a lab over the hosts of a topology spec (for the patterns'
// sake; the switches are all one bridge) and removes it when t ends.
func newLab(t testing.TB, spec string, shapeBps uint64) *testLab {
	t.Helper()
	roottest.Need(t)
	s, err := topology.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	n := len(topo.Hosts)
	prefix := fmt.Sprintf("htrf%d", os.Getpid())
	br := prefix + "-br"
	names := []string{br}
	for i := 0; i < n; i++ {
		names = append(names, fmt.Sprintf("%s-h%d", prefix, i))
	}
	created, err := kernel.CreateNamespaces(names)
	t.Cleanup(func() {
		if err := kernel.DeleteNamespaces(created); err != nil {
			t.Errorf("delete namespaces: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var pairs []kernel.Veth
	for i := 0; i < n; i++ {
		pairs = append(pairs, kernel.Veth{
			A: kernel.VethEnd{NS: names[i+1], Name: "eth0", MAC: fmt.Sprintf("02:00:00:00:%02x:%02x", i>>8, i&0xff)},
			B: kernel.VethEnd{NS: br, Name: fmt.Sprintf("p%d", i)},
		})
	}
	if err := kernel.CreateVeths(pairs, 2); err != nil {
		t.Fatal(err)
	}
	err = kernel.InNamespace(br, func() error {
		b := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
		if err := netlink.LinkAdd(b); err != nil {
			return fmt.Errorf("add bridge: %w", err)
		}
		for i := 0; i < n; i++ {
			l, err := netlink.LinkByName(fmt.Sprintf("p%d", i))
			if err != nil {
				return err
			}
			if err := netlink.LinkSetMaster(l, b); err != nil {
				return fmt.Errorf("enslave p%d: %w", i, err)
			}
		}
		return netlink.LinkSetUp(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &testLab{topo: topo, ns: names}
	for i, h := range topo.Hosts {
		if shapeBps > 0 {
			if err := kernel.Shape(names[i+1], "eth0", kernel.Shaping{RateBps: shapeBps}); err != nil {
				t.Fatal(err)
			}
		}
		l.hosts = append(l.hosts, Host{
			Name: h.Name, NetNS: names[i+1], Iface: "eth0",
			Switch: h.Switch, Group: topo.Switches[h.Switch].Group,
		})
	}
	return l
}

// debugTC prints a host's qdisc (when a test fails and -v is on).
func debugTC(t testing.TB, ns string) {
	out, _ := exec.Command("ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", "eth0").CombinedOutput()
	t.Logf("%s:\n%s", ns, out)
}
