package kernel

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// VethEnd is one end of a veth pair. NS "" is the namespace of the calling
// process. MAC "" lets the kernel pick one; MTU 0 keeps the default (1500).
type VethEnd struct {
	NS, Name, MAC string
	MTU           int
	// Index, if not 0, is the ifindex the end is created with; the pair
	// fails if its namespace already has it. Set it on both ends or on
	// neither: the kernel honours a peer's only with the first end's.
	Index int
	// Promisc: the end is born promiscuous. Open vSwitch turns every port
	// it attaches promiscuous and reads its flags back unless it already
	// is: an ioctl, a link notification to every listener in the
	// namespace and OVS's reaction to it, per port.
	Promisc bool
}

// Veth is a veth pair to create.
type Veth struct{ A, B VethEnd }

// vethBatch is how many requests go out in one sendmsg.
const vethBatch = 64

// CreateVeths creates the pairs with both ends born in their namespaces
// (never moved afterwards), MACs and MTUs set, and both ends up, on
// `workers` pipelined netlink sockets (<= 0 means 1).
//
// The kernel can bring only the first end of a new veth up in the create
// request (opening the peer fails with ENOTCONN before the pair is linked),
// so each pair costs a create plus an "up" for the peer, addressed by name
// from a socket inside the peer's namespace. Pairs are oriented so that
// peers fall in the namespaces holding the most ends, which keeps the
// number of sockets (and namespace switches) small.
//
// On error some pairs may exist; the caller removes them by deleting the
// namespaces (ends in the process's own namespace must be deleted by name).
func CreateVeths(pairs []Veth, workers int) error {
	if len(pairs) == 0 {
		return nil
	}
	ends := map[string]int{}
	for i, p := range pairs {
		for _, e := range []VethEnd{p.A, p.B} {
			if err := checkEnd(e); err != nil {
				return fmt.Errorf("veth %d (%s/%s): %w", i, p.A.Name, p.B.Name, err)
			}
			ends[e.NS]++
		}
	}
	// Namespaces with several ends (a fabric's) stay open for the whole
	// call; those with one (a host's) are opened by the job that needs
	// them. Opening every namespace at once held 16,762 of this VM's
	// 20,000 descriptors for a 16,512-host lab; opening the fabric's too
	// per job (a namespace file costs ~0.45 ms to open among 16,762) took
	// its veth step from 63-71 s to 76-78 s; this way 67.9-71.8 s.
	shared := map[string]int{}
	defer func() {
		for _, fd := range shared {
			unix.Close(fd)
		}
	}()
	for ns, n := range ends {
		if n < 2 || ns == "" {
			continue
		}
		fd, err := unix.Open(nsPath(ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open netns %s: %w", ns, err)
		}
		shared[ns] = fd
	}

	// Orient, then group by the peer's namespace.
	groups := map[string][]Veth{}
	var order []string
	for _, p := range pairs {
		if ends[p.A.NS] > ends[p.B.NS] {
			p.A, p.B = p.B, p.A
		}
		if _, ok := groups[p.B.NS]; !ok {
			order = append(order, p.B.NS)
		}
		groups[p.B.NS] = append(groups[p.B.NS], p)
	}
	if workers <= 0 {
		// One: the kernel serialises veth creation on RTNL, and a second
		// sender mostly spins on it against the link-watch work each new
		// veth queues. DF(8,16,8)'s 40,248 pairs took 70.7-75.4 s on two
		// workers and 63.0-71.8 s on one; DF(4,8,4)'s 2,508 took the same
		// (1.1-1.2 s) either way.
		workers = 1
	}
	// Split large groups so every worker has a share.
	type job struct {
		ns    string
		pairs []Veth
	}
	chunk := max(vethBatch, (len(pairs)+workers-1)/workers)
	jobs := make(chan job)
	go func() {
		for _, ns := range order {
			g := groups[ns]
			for lo := 0; lo < len(g); lo += chunk {
				jobs <- job{ns, g[lo:min(lo+chunk, len(g))]}
			}
		}
		close(jobs)
	}()

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var c *rtconn
				err := InNamespace(j.ns, func() (err error) {
					c, err = newRtconn()
					return err
				})
				if err != nil {
					fail(fmt.Errorf("netlink socket in netns %q: %w", j.ns, err))
					continue
				}
				fds, release, err := openNamespaces(j.pairs, shared)
				if err != nil {
					c.Close()
					fail(err)
					continue
				}
				reqs := make([]*nl.NetlinkRequest, 0, 2*len(j.pairs))
				for _, p := range j.pairs {
					reqs = append(reqs, vethRequest(p, fds), upRequest(p.B))
				}
				res := c.execAcked(reqs, vethBatch)
				c.Close()
				release()
				for i, p := range j.pairs {
					if err := errors.Join(res[2*i], res[2*i+1]); err != nil {
						fail(fmt.Errorf("create veth %s:%s <-> %s:%s: %w",
							p.A.NS, p.A.Name, p.B.NS, p.B.Name, err))
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 10 {
		errs = append(errs[:10], fmt.Errorf("... and %d more veth errors", len(errs)-10))
	}
	return errors.Join(errs...)
}

// openNamespaces gives the descriptors of the namespaces the pairs' ends
// go to, for one job's requests: those in shared, and the others opened
// for the job, which release closes.
func openNamespaces(pairs []Veth, shared map[string]int) (fds map[string]int, release func(), err error) {
	fds = map[string]int{}
	var own []int
	release = func() {
		for _, fd := range own {
			unix.Close(fd)
		}
	}
	for _, p := range pairs {
		for _, ns := range []string{p.A.NS, p.B.NS} {
			if _, ok := fds[ns]; ok || ns == "" {
				continue
			}
			if fd, ok := shared[ns]; ok {
				fds[ns] = fd
				continue
			}
			fd, err := unix.Open(nsPath(ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				release()
				return nil, nil, fmt.Errorf("open netns %s: %w", ns, err)
			}
			fds[ns] = fd
			own = append(own, fd)
		}
	}
	return fds, release, nil
}

// upRequest sets IFF_UP on an interface named in the socket's namespace.
func upRequest(e VethEnd) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Flags, msg.Change = e.flags(), e.flags()
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(e.Name)))
	return req
}

// flags are the end's interface flags once up.
func (e VethEnd) flags() uint32 {
	if e.Promisc {
		return unix.IFF_UP | unix.IFF_PROMISC
	}
	return unix.IFF_UP
}

func checkEnd(e VethEnd) error {
	if e.Name == "" || len(e.Name) >= unix.IFNAMSIZ {
		return fmt.Errorf("interface name %q must be 1..%d bytes", e.Name, unix.IFNAMSIZ-1)
	}
	if e.MAC != "" {
		if _, err := net.ParseMAC(e.MAC); err != nil {
			return fmt.Errorf("interface %s: %w", e.Name, err)
		}
	}
	if e.MTU < 0 || e.MTU > 65535 {
		return fmt.Errorf("interface %s: MTU %d out of range", e.Name, e.MTU)
	}
	if e.Index < 0 || e.Index == 1 || e.Index > math.MaxInt32 {
		return fmt.Errorf("interface %s: ifindex %d out of range (2..2^31-1; 1 is lo)", e.Name, e.Index)
	}
	return nil
}

// vethRequest builds the RTM_NEWLINK message for a pair, A up at once. A
// peer without a namespace fd is born in the sending socket's namespace.
func vethRequest(p Veth, fds map[string]int) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Flags, msg.Change = p.A.flags(), p.A.flags()
	msg.Index = int32(p.A.Index)
	req.AddData(msg)
	for _, a := range endAttrs(p.A, fds) {
		req.AddData(a)
	}
	linkInfo := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	linkInfo.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("veth"))
	data := linkInfo.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	peer := data.AddRtAttr(nl.VETH_INFO_PEER, nil)
	nl.NewIfInfomsgChild(peer, unix.AF_UNSPEC).Index = int32(p.B.Index)
	for _, a := range endAttrs(p.B, fds) {
		peer.AddChild(a)
	}
	req.AddData(linkInfo)
	return req
}

func endAttrs(e VethEnd, fds map[string]int) []*nl.RtAttr {
	attrs := []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(e.Name))}
	if e.MTU > 0 {
		attrs = append(attrs, nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(e.MTU))))
	}
	if e.MAC != "" {
		mac, _ := net.ParseMAC(e.MAC) // validated by checkEnd
		attrs = append(attrs, nl.NewRtAttr(unix.IFLA_ADDRESS, []byte(mac)))
	}
	if fd, ok := fds[e.NS]; ok {
		attrs = append(attrs, nl.NewRtAttr(unix.IFLA_NET_NS_FD, nl.Uint32Attr(uint32(fd))))
	}
	return attrs
}

// handleAt opens a netlink handle inside a named namespace ("" = the
// process's namespace).
func handleAt(ns string) (*netlink.Handle, error) {
	if ns == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("netlink handle: %w", err)
		}
		return h, nil
	}
	nsh, err := netns.GetFromPath(nsPath(ns))
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", ns, err)
	}
	defer nsh.Close()
	h, err := netlink.NewHandleAt(nsh, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink handle in netns %s: %w", ns, err)
	}
	return h, nil
}

// SetAddr adds (or replaces) an IP address in CIDR notation on an
// interface, e.g. SetAddr("lab-h1", "eth0", "10.0.0.1/24").
func SetAddr(ns, ifname, cidr string) error {
	addr, err := netlink.ParseAddr(cidr)
	if err != nil {
		return fmt.Errorf("address %q: %w", cidr, err)
	}
	return withLink(ns, ifname, "add "+cidr, func(h *netlink.Handle, l netlink.Link) error { return h.AddrReplace(l, addr) })
}

// withLink runs fn on a named link inside a namespace, wrapping errors
// with where and what.
func withLink(ns, ifname, what string, fn func(*netlink.Handle, netlink.Link) error) error {
	h, err := handleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("netns %q link %s: %w", ns, ifname, err)
	}
	if err := fn(h, link); err != nil {
		return fmt.Errorf("netns %q link %s: %s: %w", ns, ifname, what, err)
	}
	return nil
}

// WaitOperUp waits until an interface's operational state is up, at most
// timeout. A veth whose peer has just come up has carrier, but its queue
// discipline is activated (dev_activate) only when the kernel's link
// watch work runs, asynchronously, which is also what sets the
// operational state: until then the device's transmit queue drops
// everything given to it.
func WaitOperUp(ns, ifname string, timeout time.Duration) error {
	h, err := handleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	deadline := time.Now().Add(timeout)
	for {
		link, err := h.LinkByName(ifname)
		if err != nil {
			return fmt.Errorf("netns %q link %s: %w", ns, ifname, err)
		}
		st := link.Attrs().OperState
		if st == netlink.OperUp || st == netlink.OperUnknown {
			return nil // unknown: a device that keeps no state (a VXLAN tunnel)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns %q link %s: operational state %s %v after it was set up", ns, ifname, st, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// SetMAC sets an interface's MAC address.
func SetMAC(ns, ifname, mac string) error {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return fmt.Errorf("MAC %q: %w", mac, err)
	}
	return withLink(ns, ifname, "set MAC "+mac, func(h *netlink.Handle, l netlink.Link) error { return h.LinkSetHardwareAddr(l, hw) })
}

// txChecksumFeature is what `ethtool -K IF tx off` turns off on a veth.
const txChecksumFeature = "tx-checksum-ip-generic"

// DisableTxChecksum turns tx checksum offload off on the named interfaces
// of one namespace. A veth otherwise hands checksum-less TCP segments to
// the OVS userspace datapath, which forwards them unchecksummed and the
// receiver drops them.
func DisableTxChecksum(ns string, ifnames ...string) error {
	return withEthtool(ns, func(s ethtoolSock) error {
		for _, ifn := range ifnames {
			f, err := s.features(ifn)
			if err == nil {
				err = s.setFeatures(ifn, f, map[string]bool{txChecksumFeature: false})
			}
			if err != nil {
				return fmt.Errorf("netns %q link %s: %s off: %w", ns, ifn, txChecksumFeature, err)
			}
		}
		return nil
	})
}

// DisableSegmentation turns an interface's TCP and generic segmentation
// offloads off, so every frame reaches its qdisc as it goes on the wire
// (ChargeQueuedLength's size table charges a frame its bare length).
func DisableSegmentation(ns, ifname string) error {
	return withEthtool(ns, func(s ethtoolSock) error {
		f, err := s.features(ifname)
		if err != nil {
			return fmt.Errorf("netns %q link %s: ethtool features: %w", ns, ifname, err)
		}
		off := map[string]bool{}
		for i, name := range f.names { // the kernel's TCP segmentation offloads vary: tx-tcp6-, -ecn-, -mangleid-, -accecn-
			if f.active[i] && (name == "tx-generic-segmentation" || strings.HasPrefix(name, "tx-tcp") && strings.HasSuffix(name, "-segmentation")) {
				off[name] = false
			}
		}
		if len(off) == 0 {
			return nil
		}
		if err := s.setFeatures(ifname, f, off); err != nil {
			return fmt.Errorf("netns %q link %s: segmentation offloads off: %w", ns, ifname, err)
		}
		return nil
	})
}

// TxChecksumOn reports whether tx checksum offload is on for an interface.
func TxChecksumOn(ns, ifname string) (bool, error) {
	var on bool
	err := withEthtool(ns, func(s ethtoolSock) error {
		f, err := s.features(ifname)
		if err != nil {
			return fmt.Errorf("netns %q link %s: ethtool features: %w", ns, ifname, err)
		}
		v, ok := f.has(txChecksumFeature)
		if !ok {
			return fmt.Errorf("netns %q link %s: no feature %s", ns, ifname, txChecksumFeature)
		}
		on = v
		return nil
	})
	return on, err
}

// SetLinkUp brings an interface up or down (a veth's peer then sees its
// carrier come and go).
func SetLinkUp(ns, ifname string, up bool) error {
	if up {
		return withLink(ns, ifname, "set up", func(h *netlink.Handle, l netlink.Link) error { return h.LinkSetUp(l) })
	}
	return withLink(ns, ifname, "set down", func(h *netlink.Handle, l netlink.Link) error { return h.LinkSetDown(l) })
}
