package kernel

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Tunnel is one machine's end of a cut link (a link whose switches run on
// two machines): a VXLAN netdev born in the switch's fabric namespace,
// whose UDP socket lives in the underlay's namespace, on the interface
// that joins the machines. To the switch it is a port like a veth end: it
// takes tbf and its qdisc statistics, and keeps the port's OpenFlow
// number (the caller attaches it).
type Tunnel struct {
	NS   string // the fabric namespace the device is born in
	Name string
	MAC  string // "" lets the kernel pick one
	MTU  int    // the emulated link's (0: 1500)
	// Index, if not 0, is the ifindex the device is created with (the
	// eBPF datapath indexes its ports by ifindex).
	Index int
	VNI   uint32 // the cut link's VXLAN network identifier, 1..2^24-1
	// Underlay is the namespace of the machines' network ("" the
	// process's) and Dev its interface there; Local and Remote are this
	// machine's and the far machine's addresses on it; Port the UDP port
	// (0: 4789, IANA's).
	Underlay, Dev string
	Local, Remote net.IP
	Port          int
}

// VXLANOverhead is what VXLAN adds to a frame on the underlay: outer
// Ethernet 14 (not in the MTU), IPv4 20, UDP 8, VXLAN 8, and the inner
// Ethernet header 14 that the emulated link's MTU does not count.
const VXLANOverhead = 20 + 8 + 8 + 14

// CheckTunnelMTU says whether an underlay of MTU underlay carries the
// emulated link's frames of MTU link whole: a VXLAN packet is never
// fragmented (the kernel drops what does not fit), so a link MTU the
// underlay cannot carry would lose every full-size frame.
func CheckTunnelMTU(link, underlay int) error {
	if link == 0 {
		link = 1500
	}
	if need := link + VXLANOverhead; underlay < need {
		return fmt.Errorf("the underlay's MTU %d is below %d: a link MTU of %d needs %d bytes of VXLAN headers on top (raise the underlay's MTU, e.g. jumbo frames, or lower the links')", underlay, need, link, VXLANOverhead)
	}
	return nil
}

// CreateTunnel makes the VXLAN device: created from the underlay's
// namespace, where its UDP socket binds to Local on Dev, and born
// directly in the fabric namespace (IFLA_NET_NS_FD), then brought up.
// The underlay interface's MTU is checked against the link's first.
func CreateTunnel(t Tunnel) error {
	if t.VNI == 0 || t.VNI >= 1<<24 {
		return fmt.Errorf("tunnel %s: VNI %d: want 1 to %d", t.Name, t.VNI, 1<<24-1)
	}
	if t.Local.To4() == nil || t.Remote.To4() == nil {
		return fmt.Errorf("tunnel %s: local %v and remote %v: want IPv4 underlay addresses", t.Name, t.Local, t.Remote)
	}
	// The same checks as a veth end's: name, MAC, MTU.
	if err := checkEnd(VethEnd{NS: t.NS, Name: t.Name, MAC: t.MAC, MTU: t.MTU}); err != nil {
		return fmt.Errorf("tunnel: %w", err)
	}
	u, err := handleAt(t.Underlay)
	if err != nil {
		return err
	}
	defer u.Close()
	dev, err := u.LinkByName(t.Dev)
	if err != nil {
		return fmt.Errorf("tunnel %s: underlay interface %s in netns %q: %w", t.Name, t.Dev, t.Underlay, err)
	}
	if err := CheckTunnelMTU(t.MTU, dev.Attrs().MTU); err != nil {
		return fmt.Errorf("tunnel %s on %s: %w", t.Name, t.Dev, err)
	}
	fab, err := netns.GetFromPath(nsPath(t.NS))
	if err != nil {
		return fmt.Errorf("tunnel %s: open netns %s: %w", t.Name, t.NS, err)
	}
	defer fab.Close()
	port := t.Port
	if port == 0 {
		port = 4789
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = t.Name
	attrs.MTU = t.MTU
	if attrs.MTU == 0 {
		attrs.MTU = 1500
	}
	attrs.Namespace = netlink.NsFd(int(fab))
	attrs.Index = t.Index
	if t.MAC != "" {
		if attrs.HardwareAddr, err = net.ParseMAC(t.MAC); err != nil {
			return fmt.Errorf("tunnel %s: MAC %q: %w", t.Name, t.MAC, err)
		}
	}
	// No learning: the far end is the one remote, and a cut link is a
	// point-to-point cable, so every frame goes there whatever its
	// destination (the switch decides where frames go, not the tunnel).
	vx := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: int(t.VNI), VtepDevIndex: dev.Attrs().Index,
		SrcAddr: t.Local, Group: t.Remote, Port: port, Learning: false, TTL: 64}
	if err := u.LinkAdd(vx); err != nil {
		return fmt.Errorf("tunnel %s (VNI %d, %v -> %v on %s): %w", t.Name, t.VNI, t.Local, t.Remote, t.Dev, err)
	}
	return SetLinkUp(t.NS, t.Name, true)
}

// RouteTo is the interface in namespace ns ("" the process's) that the
// route to dst leaves by, and the source address the kernel would give a
// packet sent there: where a machine's tunnels towards dst go out.
func RouteTo(ns string, dst net.IP) (dev string, src net.IP, err error) {
	h, err := handleAt(ns)
	if err != nil {
		return "", nil, err
	}
	defer h.Close()
	rs, err := h.RouteGet(dst)
	if err != nil {
		return "", nil, fmt.Errorf("route to %v in netns %q: %w", dst, ns, err)
	}
	if len(rs) == 0 {
		return "", nil, fmt.Errorf("no route to %v in netns %q", dst, ns)
	}
	l, err := h.LinkByIndex(rs[0].LinkIndex)
	if err != nil {
		return "", nil, fmt.Errorf("route to %v in netns %q: interface %d: %w", dst, ns, rs[0].LinkIndex, err)
	}
	return l.Attrs().Name, rs[0].Src, nil
}

// AddrAndMTU says whether interface dev in namespace ns has address ip,
// and what its MTU is.
func AddrAndMTU(ns, dev string, ip net.IP) (has bool, mtu int, err error) {
	h, err := handleAt(ns)
	if err != nil {
		return false, 0, err
	}
	defer h.Close()
	l, err := h.LinkByName(dev)
	if err != nil {
		return false, 0, fmt.Errorf("interface %s in netns %q: %w", dev, ns, err)
	}
	as, err := h.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return false, 0, fmt.Errorf("addresses of %s in netns %q: %w", dev, ns, err)
	}
	for _, a := range as {
		if a.IP.Equal(ip) {
			return true, l.Attrs().MTU, nil
		}
	}
	return false, l.Attrs().MTU, nil
}
