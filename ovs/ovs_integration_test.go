package ovs

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/ovs/openflow"
)

// newNetNS creates a named netns and deletes it at cleanup.
func newNetNS(t *testing.T, name string) netns.NsHandle {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	_ = netns.DeleteNamed(name)
	ns, err := netns.NewNamed(name)
	if err != nil {
		t.Fatalf("netns %s: %v", name, err)
	}
	if err := netns.Set(orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ns.Close()
		_ = netns.DeleteNamed(name)
	})
	return ns
}

// veth creates name in ns `a` with its peer in ns `b`, both up.
func veth(t *testing.T, a netns.NsHandle, name string, b netns.NsHandle, peer string) {
	t.Helper()
	h, err := netlink.NewHandleAt(a)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	la := netlink.NewLinkAttrs()
	la.Name = name
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: peer, PeerNamespace: netlink.NsFd(int(b))}); err != nil {
		t.Fatalf("veth %s/%s: %v", name, peer, err)
	}
	for _, x := range []struct {
		ns   netns.NsHandle
		name string
	}{{a, name}, {b, peer}} {
		hh, err := netlink.NewHandleAt(x.ns)
		if err != nil {
			t.Fatal(err)
		}
		l, err := hh.LinkByName(x.name)
		if err == nil {
			err = hh.LinkSetUp(l)
		}
		hh.Close()
		if err != nil {
			t.Fatalf("up %s: %v", x.name, err)
		}
	}
}

func addrUp(t *testing.T, ns netns.NsHandle, dev, cidr string) {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddrAdd(l, a); err != nil {
		t.Fatalf("addr %s on %s: %v", cidr, dev, err)
	}
	if lo, err := h.LinkByName("lo"); err == nil {
		_ = h.LinkSetUp(lo)
	}
}

// TestFabricThroughOVS builds host1 - br1 - br2 - host2 on one private
// instance and on a pool of two (one bridge each, the inter-bridge veth
// crossing the two fabric namespaces), installs in_port flows from files,
// sends a frame through, stops and checks nothing is left.
func TestFabricThroughOVS(t *testing.T) {
	roottest.NeedOVS(t)
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("instances=%d", n), func(t *testing.T) { testFabric(t, n, "", false) })
	}
	// A cut link (issue 24): br1 and br2 on two emulated machines, their
	// link a VXLAN tunnel over the machines' underlay, attached with the
	// same OpenFlow port numbers and shaped like the veth it replaces.
	t.Run("cut-link", func(t *testing.T) { testFabric(t, 2, "", true) })
	t.Run("ports=pmd", func(t *testing.T) {
		sw := FindPMDSwitch()
		if sw == "" {
			t.Skipf("ethfab's ovs-vswitchd is not installed at %s (scripts/ovs/build.sh)", PMDSwitchPath)
		}
		testFabric(t, 1, sw, false)
	})
}

// tunnel joins fabric namespaces f1 and f2 by a VXLAN tunnel named l1 and
// l2 at its ends, as a cut link between two machines: each machine an
// underlay namespace, the two joined by a veth with jumbo frames, so the
// tunnel carries the links' 1,500-byte frames whole.
func tunnel(t *testing.T, id string, f1, f2 string) {
	t.Helper()
	u1, u2 := "efo-u1-"+id, "efo-u2-"+id
	a, b := newNetNS(t, u1), newNetNS(t, u2)
	veth(t, a, "ul", b, "ul")
	for _, x := range []struct {
		ns   netns.NsHandle
		name string
	}{{a, u1}, {b, u2}} {
		h, err := netlink.NewHandleAt(x.ns)
		if err != nil {
			t.Fatal(err)
		}
		l, err := h.LinkByName("ul")
		if err == nil {
			err = h.LinkSetMTU(l, 9000)
		}
		h.Close()
		if err != nil {
			t.Fatalf("%s: jumbo underlay: %v", x.name, err)
		}
	}
	addrUp(t, a, "ul", "10.212.0.1/24")
	addrUp(t, b, "ul", "10.212.0.2/24")
	ip1, ip2 := net.ParseIP("10.212.0.1"), net.ParseIP("10.212.0.2")
	for _, tn := range []kernel.Tunnel{
		{NS: f1, Name: "l1", VNI: 4242, Underlay: u1, Dev: "ul", Local: ip1, Remote: ip2},
		{NS: f2, Name: "l2", VNI: 4242, Underlay: u2, Dev: "ul", Local: ip2, Remote: ip1},
	} {
		if err := kernel.CreateTunnel(tn); err != nil {
			t.Fatal(err)
		}
	}
}

// testFabric runs the fabric on n instances of stock ovs-vswitchd, or, with
// pmdSwitch set, on that ovs-vswitchd with PortPMD ports.
func testFabric(t *testing.T, n int, pmdSwitch string, cut bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tag := n
	if pmdSwitch != "" {
		tag = 9
	}
	if cut {
		tag = 8
	}
	id := fmt.Sprintf("%d%d", os.Getpid()%10000, tag)
	lab := "efo-t" + id
	fabBase := "efo-f" + id
	runDir := t.TempDir()
	cfg := Config{Lab: lab, RunDir: runDir, NetNS: fabBase, Datapath: DatapathNetdev}
	if pmdSwitch != "" {
		cfg.Switch, cfg.PortType, cfg.OtherConfig = pmdSwitch, PortPMD, PMDOtherConfig(nil, 1)
	}
	cfgs := PoolConfigs(cfg, n)
	fab := make([]netns.NsHandle, n)
	for k := range cfgs {
		fab[k] = newNetNS(t, cfgs[k].NetNS)
	}
	h1 := newNetNS(t, "efo-h1-"+id)
	h2 := newNetNS(t, "efo-h2-"+id)
	f1, f2 := fab[0], fab[n-1] // br1 lives in f1, br2 in f2

	veth(t, f1, "a1", h1, "eth0")
	veth(t, f2, "a2", h2, "eth0")
	if cut {
		tunnel(t, id, cfgs[0].NetNS, cfgs[n-1].NetNS)
	} else {
		veth(t, f1, "l1", f2, "l2")
	}
	addrUp(t, h1, "eth0", "10.211.0.1/24")
	addrUp(t, h2, "eth0", "10.211.0.2/24")

	pool, err := StartPool(ctx, PoolConfigs(cfg, n))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = pool.Stop() })

	ver, err := pool.Instances[0].Version()
	if err != nil || !strings.Contains(ver, ".") {
		t.Fatalf("version %q: %v", ver, err)
	}
	bridges := []Bridge{
		{Name: "br1", Ports: []Port{{Name: "a1", OFPort: 1}, {Name: "l1", OFPort: 2}}, ExternalIDs: map[string]string{"role": "leaf"}},
		{Name: "br2", Ports: []Port{{Name: "a2", OFPort: 1}, {Name: "l2", OFPort: 2}}},
	}
	if err := pool.CreateBridges(ctx, Partition(bridges, n)); err != nil {
		t.Fatalf("create bridges: %v", err)
	}

	// Read back through a fresh attachment, as `ethfab` in another process would.
	again, err := OpenPool(runDir)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	infos, err := again.Bridges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 {
		t.Fatalf("got %d bridges, want 2: %+v", len(infos), infos)
	}
	for _, bi := range infos {
		if bi.ExternalIDs[LabKey] != lab {
			t.Errorf("%s: external_ids %v lack %s=%s", bi.Name, bi.ExternalIDs, LabKey, lab)
		}
		if len(bi.Ports) != 2 {
			t.Fatalf("%s: ports %+v", bi.Name, bi.Ports)
		}
		for _, p := range bi.Ports {
			want := 1
			if strings.HasPrefix(p.Name, "l") {
				want = 2
			}
			if p.OFPort != want || p.Error != "" {
				t.Errorf("%s port %s: ofport %d error %q, want ofport %d", bi.Name, p.Name, p.OFPort, p.Error, want)
			}
		}
		if len(bi.DatapathID) != 16 {
			t.Errorf("%s: datapath id %q", bi.Name, bi.DatapathID)
		}
	}
	if infos[0].ExternalIDs["role"] != "leaf" {
		t.Errorf("br1 external_ids %v", infos[0].ExternalIDs)
	}

	// Before any flow is installed a secure-mode bridge must drop: no
	// normal-switching fallback.
	if err := sendFrame("efo-h1-"+id, "efo-h2-"+id, "efo-before-"+id); err == nil {
		t.Fatalf("a frame crossed the bridges with no flows installed (fail_mode not secure?)")
	}

	flowFile := filepath.Join(runDir, "flows.txt")
	flows := "# forward by in_port\npriority=10,in_port=1,actions=output:2\npriority=10,in_port=2,actions=output:1\npriority=0,actions=drop\n"
	if err := os.WriteFile(flowFile, []byte(flows), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range bridges {
		if err := InstallFlows(ctx, again.MgmtSocket(b.Name), flowFile); err != nil {
			t.Fatalf("install: %v", err)
		}
	}
	for _, b := range bridges {
		c, err := openflow.FlowCount(ctx, again.MgmtSocket(b.Name))
		if err != nil || c != 3 {
			t.Fatalf("%s: flow count %d, %v; want 3", b.Name, c, err)
		}
	}
	// replace-flows replaces: installing twice must not double the table.
	if err := InstallFlows(ctx, again.MgmtSocket("br1"), flowFile); err != nil {
		t.Fatal(err)
	}

	// The link between the bridges is shaped: what a switch sends must
	// pass through the port's qdisc (AF_XDP ports, for one, bypass it).
	if err := kernel.Shape(cfgs[0].NetNS, "l1", kernel.Shaping{RateBps: 10_000_000}); err != nil {
		t.Fatalf("shape l1: %v", err)
	}
	if err := sendFrame("efo-h1-"+id, "efo-h2-"+id, "efo-hello-"+id); err != nil {
		t.Fatalf("frame through br1-br2: %v", err)
	}
	if st, err := kernel.Stats(cfgs[0].NetNS, "l1"); err != nil || st.Kind != "tbf" || st.Packets == 0 {
		t.Fatalf("l1's qdisc after a frame crossed: %+v, %v; want tbf with the frame counted", st, err)
	}
	// Rule counters come from the datapath flows, which revalidators read
	// every ~500 ms: poll.
	var fwd uint64
	var dumped []Flow
	for deadline := time.Now().Add(5 * time.Second); fwd == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		dumped, err = DumpFlows(ctx, again.MgmtSocket("br1"))
		if err != nil {
			t.Fatal(err)
		}
		if len(dumped) != 3 {
			t.Fatalf("br1 dump: %d flows, want 3: %+v", len(dumped), dumped)
		}
		for _, f := range dumped {
			if f.Match == "in_port=1" && f.Priority == 10 && f.Actions == "output:2" {
				fwd = f.Packets
			}
		}
	}
	if fwd == 0 {
		t.Errorf("br1 in_port=1 rule counted no packets after a frame: %+v", dumped)
	}
	stats, err := PortStats(ctx, again.MgmtSocket("br2"))
	if err != nil {
		t.Fatal(err)
	}
	var rx uint64
	for _, s := range stats {
		if s.Port == "2" {
			rx = s.RxPackets
		}
	}
	if rx == 0 {
		t.Errorf("br2 port 2 received nothing: %+v", stats)
	}

	// Stop and check nothing is left.
	var pids []int
	for _, in := range pool.Instances {
		for _, f := range []string{dbPid, switchPid} {
			pid := readPid(in.cfg.path(f))
			if pid <= 0 {
				t.Fatalf("no pid in %s", in.cfg.path(f))
			}
			pids = append(pids, pid)
		}
	}
	stop := pool.Stop
	if n > 1 {
		// The paced teardown: one instance after the other, each once
		// the kernel's workers settled (here always; see PaceSockets).
		old := PaceSockets
		PaceSockets = 0
		defer func() { PaceSockets = old }()
		stop = func() error { return StopPoolRunDir(runDir) }
	}
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := StopPoolRunDir(runDir); err != nil { // idempotent
		t.Fatalf("second stop: %v", err)
	}
	// Gone, not merely past its last syscall: a daemon still exiting has an
	// empty command line while the kernel closes its sockets.
	for _, pid := range pids {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(st)
		if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && s[i+2] != 'Z' && strings.Contains(s, "(ovs") {
			t.Errorf("daemon pid %d still there after Stop: %s", pid, s[:i+3])
		}
	}
	socks, _ := filepath.Glob(filepath.Join(runDir, "*", "*.mgmt"))
	ctls, _ := filepath.Glob(filepath.Join(runDir, "*", "*.ctl"))
	dbs, _ := filepath.Glob(filepath.Join(runDir, "*", "*.sock"))
	if left := append(append(socks, ctls...), dbs...); len(left) > 0 {
		t.Errorf("sockets left: %v", left)
	}
	if _, err := Open(cfgs[0].RunDir); err == nil {
		t.Errorf("Open succeeded on a stopped instance")
	}
	for _, c := range cfgs {
		if err := netns.DeleteNamed(c.NetNS); err != nil {
			t.Errorf("netns del %s: %v", c.NetNS, err)
		}
		if _, err := os.Stat(filepath.Join("/run/netns", c.NetNS)); err == nil {
			t.Errorf("netns %s still there", c.NetNS)
		}
	}
}

// sendFrame sends one DMP-typed Ethernet frame from eth0 of namespace
// from to eth0's MAC in namespace to and reports whether it arrived
// within 2 s.
func sendFrame(from, to, payload string) error {
	rx, err := packet.OpenEtherTypes(to, "eth0", 0, ethertype.DMP)
	if err != nil {
		return err
	}
	defer rx.Close()
	tx, err := packet.OpenEtherTypes(from, "eth0", 0, ethertype.DMP)
	if err != nil {
		return err
	}
	defer tx.Close()
	dstMAC, err := rx.MAC()
	if err != nil {
		return err
	}
	srcMAC, err := tx.MAC()
	if err != nil {
		return err
	}
	frame := append(append(append([]byte{}, dstMAC[:]...), srcMAC[:]...), ethertype.DMP>>8, ethertype.DMP&0xff)
	frame = append(frame, payload...)
	for len(frame) < 60 {
		frame = append(frame, 0)
	}
	if err := tx.Send(frame); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	rx.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 2048)
	for {
		n, err := rx.Recv(buf)
		if err != nil {
			return fmt.Errorf("no frame received: %w", err)
		}
		if strings.Contains(string(buf[:n]), payload) {
			return nil
		}
	}
}

func TestSocketPathLimit(t *testing.T) {
	long := "/tmp/" + strings.Repeat("x", 100)
	err := (&Config{Lab: "l", RunDir: long}).normalize()
	if err == nil || !strings.Contains(err.Error(), "unix socket path") {
		t.Fatalf("normalize(%d-byte run dir) = %v, want a socket path error", len(long), err)
	}
	if err := (&Config{Lab: "l", RunDir: "/tmp/efo"}).normalize(); err != nil {
		t.Fatal(err)
	}
}
