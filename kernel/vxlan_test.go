package kernel

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/internal/roottest"
)

// A cut link between two emulated machines: each machine is an underlay
// namespace (the two joined by a veth, as two hosts by a cable) and a
// fabric namespace, where the tunnel's device is born while its UDP
// socket stays in the underlay. Frames cross both ways, the device takes
// tbf and counts what it sent, the inner MTU a 1,500-byte underlay carries
// is 1,450, and a link MTU it cannot carry is refused before anything is
// made.
func TestTunnelBetweenMachines(t *testing.T) {
	roottest.Need(t)
	roottest.Need(t, "ip", "ping")
	u0, u1, f0, f1 := testPrefix+"u0", testPrefix+"u1", testPrefix+"f0", testPrefix+"f1"
	makeNamespaces(t, u0, u1, f0, f1)
	if err := CreateVeths([]Veth{{A: VethEnd{NS: u0, Name: "ul"}, B: VethEnd{NS: u1, Name: "ul"}}}, 1); err != nil {
		t.Fatal(err)
	}
	for ns, cidr := range map[string]string{u0: "10.203.0.1/24", u1: "10.203.0.2/24"} {
		if err := SetAddr(ns, "ul", cidr); err != nil {
			t.Fatal(err)
		}
	}
	a, b := net.ParseIP("10.203.0.1"), net.ParseIP("10.203.0.2")
	mk := func(fab, under string, local, remote net.IP, mtu int) error {
		return CreateTunnel(Tunnel{NS: fab, Name: "cut7", MTU: mtu, VNI: 7007, Underlay: under, Dev: "ul", Local: local, Remote: remote})
	}
	// The link's MTU 1,500 does not fit a 1,500-byte underlay.
	if err := mk(f0, u0, a, b, 1500); err == nil || !strings.Contains(err.Error(), "the underlay's MTU 1500 is below 1550") {
		t.Fatalf("link MTU 1500 over a 1500 underlay: %v", err)
	}
	if err := mk(f0, u0, a, b, 1450); err != nil {
		t.Fatal(err)
	}
	if err := mk(f1, u1, b, a, 1450); err != nil {
		t.Fatal(err)
	}
	// Born in the fabric namespace, its socket in the underlay's: the
	// underlay has no such device, the fabric no underlay.
	if l := linkIn(t, f0, "cut7"); l.Type() != "vxlan" || l.Attrs().MTU != 1450 || l.Attrs().OperState.String() == "down" {
		t.Fatalf("tunnel in the fabric namespace: %s, MTU %d, %s", l.Type(), l.Attrs().MTU, l.Attrs().OperState)
	}
	if h, err := handleAt(u0); err == nil {
		if _, err := h.LinkByName("cut7"); err == nil {
			t.Error("the tunnel's device is in the underlay's namespace too")
		}
		h.Close()
	}
	if err := Shape(f0, "cut7", Shaping{RateBps: 10_000_000}); err != nil {
		t.Fatal(err)
	}
	for ns, cidr := range map[string]string{f0: "10.204.0.1/24", f1: "10.204.0.2/24"} {
		if err := SetAddr(ns, "cut7", cidr); err != nil {
			t.Fatal(err)
		}
	}
	// Full-size frames (1,450 bytes of IP) both ways, unfragmented.
	inNS(t, f0, "ping", "-c", "5", "-i", "0.2", "-W", "2", "-M", "do", "-s", "1422", "10.204.0.2")
	inNS(t, f1, "ping", "-c", "3", "-i", "0.2", "-W", "2", "10.204.0.1")
	st, err := Stats(f0, "cut7")
	if err != nil || st.Kind != "tbf" || st.Packets < 5 {
		t.Fatalf("the tunnel's qdisc: %+v, %v; want tbf with the pings counted", st, err)
	}
	// One byte more than the inner MTU does not go.
	out, err := exec.Command("ip", "netns", "exec", f0, "ping", "-c", "1", "-W", "1", "-M", "do", "-s", "1423", "10.204.0.2").CombinedOutput()
	if err == nil {
		t.Errorf("a 1,451-byte packet crossed a 1,450 MTU: %s", out)
	}
	// Bad tunnels say what is wrong, and make nothing.
	for _, c := range []struct {
		t    Tunnel
		want string
	}{
		{Tunnel{NS: f0, Name: "cutx", VNI: 0, Underlay: u0, Dev: "ul", Local: a, Remote: b}, "VNI 0"},
		{Tunnel{NS: f0, Name: "cutx", VNI: 1 << 24, Underlay: u0, Dev: "ul", Local: a, Remote: b}, "VNI 16777216"},
		{Tunnel{NS: f0, Name: "cutx", VNI: 9, Underlay: u0, Dev: "nope", Local: a, Remote: b, MTU: 1400}, "underlay interface nope"},
		{Tunnel{NS: f0, Name: "cutx", VNI: 9, Underlay: u0, Dev: "ul", Local: net.ParseIP("fe80::1"), Remote: b, MTU: 1400}, "want IPv4"},
		{Tunnel{NS: f0, Name: "a-name-far-too-long", VNI: 9, Underlay: u0, Dev: "ul", Local: a, Remote: b, MTU: 1400}, "must be 1..15 bytes"},
	} {
		if err := CreateTunnel(c.t); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.t, err, c.want)
		}
	}
	if h, err := handleAt(f0); err == nil {
		if _, err := h.LinkByName("cutx"); err == nil {
			t.Error("a refused tunnel left a device behind")
		}
		h.Close()
	}
}
