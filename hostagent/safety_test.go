package hostagent

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/ether"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/scenario"
)

// probe is one frame host A sends in the safety test.
type probe struct {
	what      string
	dst, src  string
	etherType uint16
	tag       uint32 // DMP txid or, for others, bytes 18..21: finds it again
}

// raw builds the probe by hand rather than with the dmp package, so a
// forged reply (type 2) is possible and nothing here depends on it.
func (p probe) raw(t *testing.T) []byte {
	t.Helper()
	dst, err := ether.ParseMAC(p.dst)
	if err != nil {
		t.Fatal(err)
	}
	src, err := ether.ParseMAC(p.src)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 60)
	copy(b[0:6], dst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], p.etherType)
	b[14], b[15] = 1, 1 // DMP version 1, request
	if p.what == "forged reply" {
		b[15] = 2
	}
	binary.BigEndian.PutUint32(b[18:], p.tag)
	return b
}

func tagOf(raw []byte) uint32 {
	if len(raw) < 22 {
		return 0
	}
	return binary.BigEndian.Uint32(raw[18:22])
}

// A host can neither obtain nor impose another host's address. The DMP
// rule matches only in_port and EtherType and bounces out of the ingress
// port, so whatever addresses a DMP frame carries, it goes back to its
// sender with the sender's own pseudo-MAC; and original MACs have no route,
// so no unicast reaches a host at its original address.
//
// The probes run twice. Before DMP is the state that matters for imposing:
// every host still has its original MAC and is about to wait for its
// reply, so a frame that reached B at that address could hand B a false
// one. After DMP is the state that matters for obtaining: A asks with B's
// live pseudo-MAC as its source. B is a host on A's switch, C one on
// another switch; tcpdump watches all three, so the verdict is not the
// agent's own parser's.
func TestSafetyDMPCannotCrossHosts(t *testing.T) {
	roottest.NeedOVS(t)
	needTcpdump(t)
	sets := []string{"topology.p", "2", "topology.a", "2", "topology.h", "1"}
	lab, eps := upDMPLab(t, "hchk2", sets...)
	a := lab.Hosts[0]
	var b, c *fabric.Host
	for i := range lab.Hosts[1:] {
		h := &lab.Hosts[1+i]
		switch {
		case b == nil && h.Switch == a.Switch:
			b = h
		case c == nil && h.Switch != a.Switch:
			c = h
		}
	}
	if b == nil || c == nil {
		t.Fatalf("need a host on %s's switch and one elsewhere", a.Name)
	}
	t.Run("addresses", func(t *testing.T) { checkPseudoMACs(t, lab, sets) })
	sock, err := packet.OpenEtherTypes(a.NetNS, a.Iface, 0, ethertype.DMP)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()

	probes := func(aMAC string, first uint32) []probe {
		ps := []probe{}
		for _, v := range []*fabric.Host{b, c} {
			ps = append(ps,
				probe{what: "DMP to victim's original MAC", dst: v.MAC, src: aMAC, etherType: ethertype.DMP},
				probe{what: "DMP as victim (steal)", dst: v.MAC, src: v.MAC, etherType: ethertype.DMP},
				probe{what: "DMP as victim's pseudo-MAC (steal)", dst: v.PseudoMAC, src: v.PseudoMAC, etherType: ethertype.DMP},
				probe{what: "forged reply", dst: v.MAC, src: v.PseudoMAC, etherType: ethertype.DMP},
				probe{what: "DMP to victim's pseudo-MAC", dst: v.PseudoMAC, src: aMAC, etherType: ethertype.DMP},
				probe{what: "unicast to victim's original MAC", dst: v.MAC, src: aMAC, etherType: ethertype.Traffic},
				// The one probe that must arrive: proves the capture at
				// the victim works. From A's pseudo-MAC, the one source
				// the guard on A's port admits for data (before DMP, A's
				// own original MAC is no address the fabric knows).
				probe{what: "control", dst: v.PseudoMAC, src: a.PseudoMAC, etherType: ethertype.Traffic},
			)
		}
		for i := range ps {
			ps[i].tag = first + uint32(i)
		}
		return ps
	}
	round := func(t *testing.T, aMAC string, first uint32) {
		capA := startCapture(t, a.NetNS, a.Iface, "-Q", "in")
		capB := startCapture(t, b.NetNS, b.Iface)
		capC := startCapture(t, c.NetNS, c.Iface)
		ps := probes(aMAC, first)
		for _, p := range ps {
			if err := sock.Send(p.raw(t)); err != nil {
				t.Fatalf("send %s: %v", p.what, err)
			}
		}
		// The userspace datapath answers in well under a millisecond;
		// half a second is ample for anything that is going to arrive.
		time.Sleep(500 * time.Millisecond)
		byTag := map[uint32]probe{}
		for _, p := range ps {
			byTag[p.tag] = p
		}
		for _, v := range []struct {
			h   *fabric.Host
			cap *capture
		}{{b, capB}, {c, capC}} {
			control := 0
			for _, f := range v.cap.frames(t) {
				if f.src == "" {
					continue
				}
				p, ours := byTag[tagOf(f.raw)]
				switch {
				case f.etherType == ethertype.DMP:
					t.Errorf("%s received a DMP frame (%s): %s", v.h.Name, p.what, f.line)
				case f.dst == v.h.MAC:
					t.Errorf("%s received a frame for its original MAC (%s): %s", v.h.Name, p.what, f.line)
				case ours && p.what == "control" && f.dst == v.h.PseudoMAC:
					control++
				}
			}
			if control != 1 {
				t.Errorf("%s received the control frame %d times, want once: the capture proves nothing", v.h.Name, control)
			}
		}
		bounced := map[uint32]int{}
		for _, f := range capA.frames(t) {
			if f.etherType != ethertype.DMP {
				continue
			}
			p, ours := byTag[tagOf(f.raw)]
			if f.src != a.PseudoMAC {
				t.Errorf("%s received a DMP frame from %s, not its own pseudo-MAC %s (%s): %s", a.Name, f.src, a.PseudoMAC, p.what, f.line)
			}
			if ours {
				bounced[p.tag]++
			}
		}
		for _, p := range ps {
			if p.etherType == ethertype.DMP && bounced[p.tag] != 1 {
				t.Errorf("%q (%s -> %s) came back to %s %d times, want once with %s", p.what, p.src, p.dst, a.Name, bounced[p.tag], a.PseudoMAC)
			}
		}
	}

	t.Run("before-dmp", func(t *testing.T) {
		if got := ipLinkMAC(t, a.NetNS, a.Iface); got != a.MAC {
			t.Fatalf("%s has %s before DMP, want %s", a.Name, got, a.MAC)
		}
		round(t, a.MAC, 1000)
	})
	f, err := OpenFleet(eps, Options{DMP: true, DMPBackoff: dmp.Backoff{Timeout: 10 * time.Second}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rs, err := f.Run(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.MACAfter != lab.Hosts[i].PseudoMAC {
			t.Fatalf("%s: DMP gave %s, want %s", r.Name, r.MACAfter, lab.Hosts[i].PseudoMAC)
		}
	}
	t.Run("after-dmp", func(t *testing.T) { round(t, a.PseudoMAC, 2000) })
}

// checkPseudoMACs: every pseudo-MAC in the lab is unique, is what the
// addressing plan assigns, and falls under its own access switch's prefix
// and under no other switch's.
func checkPseudoMACs(t *testing.T, lab *fabric.Lab, sets []string) {
	sc, err := scenario.Load("../scenarios/dragonfly-small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(sets); i += 2 {
		if err := sc.Set(sets[i], sets[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	sc.Addressing.Assign = addressing.AssignDMP
	comp, err := fabric.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	top := comp.Top
	if len(top.Hosts) != len(lab.Hosts) {
		t.Fatalf("plan has %d hosts, lab %d", len(top.Hosts), len(lab.Hosts))
	}
	swID := map[string]int{}
	for i, s := range top.Switches {
		swID[s.Name] = i
	}
	seen := map[string]string{}
	perSwitch := map[string]int{}
	for _, h := range lab.Hosts {
		if other, dup := seen[h.PseudoMAC]; dup {
			t.Errorf("%s and %s share pseudo-MAC %s", other, h.Name, h.PseudoMAC)
		}
		seen[h.PseudoMAC] = h.Name
		perSwitch[h.Switch]++
		m, err := addressing.ParseMAC(h.PseudoMAC)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := addressing.FromMAC(m)
		if !ok {
			t.Errorf("%s: %s is not a locally administered unicast address", h.Name, h.PseudoMAC)
			continue
		}
		sw, ok := swID[h.Switch]
		if !ok {
			t.Fatalf("%s: switch %s not in the plan", h.Name, h.Switch)
		}
		if got := comp.Plan.HostMAC(top.Switches[sw].Port(h.Port).Host); got != m {
			t.Errorf("%s on %s port %d has %s, plan says %s", h.Name, h.Switch, h.Port, h.PseudoMAC, got)
		}
		for i, s := range top.Switches {
			if !comp.Plan.HasSwitchPrefix(i) {
				continue
			}
			pre := comp.Plan.SwitchPrefix(i)
			if in := pre.Contains(l); in != (s.Name == h.Switch) {
				t.Errorf("%s (%s, on %s): under %s's prefix %#x/%d: %v", h.Name, h.PseudoMAC, h.Switch, s.Name, pre.Value, pre.Len, in)
			}
		}
	}
	shared := 0
	for _, n := range perSwitch {
		if n > 1 {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("no switch has two hosts: the prefix check proves nothing")
	}
	t.Logf("%d hosts, %d distinct pseudo-MACs, %d switches with several hosts", len(lab.Hosts), len(seen), shared)
}
