package hostagent

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/ether"
	"github.com/ethfab/ethfab/hostagent/omx"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/ovs"
)

// guardDrops reads the packets the source guard of host h's access
// switch dropped from h's port.
func guardDrops(t *testing.T, lab *fabric.Lab, h fabric.Host) uint64 {
	t.Helper()
	for _, s := range lab.Switches {
		if s.Name != h.Switch {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		flows, err := ovs.DumpFlows(ctx, s.Mgmt)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range flows {
			if f.Cookie == controller.KindGuard.Cookie() && f.Match == fmt.Sprintf("in_port=%d", h.Port) {
				return f.Packets
			}
		}
		t.Fatalf("%s has no guard rule for %s's port %d", s.Name, h.Name, h.Port)
	}
	t.Fatalf("no switch %s", h.Switch)
	return 0
}

// waitFor polls cond until it holds or 10 s pass; what names the wait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A host that sends as another host (a spoofed source MAC) has its frames dropped at
// its own access switch and counted on the guard rule of its port, while
// DMP, announcements, connects and its own traffic pass: on a real lab
// with assign dmp, so the DMP requests from the hosts' original MACs
// cross the guard too.
func TestFabricSourceGuard(t *testing.T) {
	lab, eps := upDMPLab(t, "hgrd1", "topology.p", "1", "topology.a", "2", "topology.h", "1")
	n := len(eps)
	f, err := OpenFleet(eps, Options{
		DMP: true, DMPBackoff: dmp.Backoff{Timeout: 10 * time.Second},
		Announce: true, Schedule: omx.Schedule{Burst: 3, BurstInterval: 200 * time.Millisecond, Interval: time.Hour},
		Connect: true, ConnectInterval: 200 * time.Millisecond,
		ExpectPeers: n - 1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := f.Run(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.MACAfter != lab.Hosts[i].PseudoMAC || r.Peers != n-1 || r.Connect.Succeeded != n-1 {
			t.Fatalf("%s behind the guard: MAC %s (want %s), %d peers, %d connected (want %d)", r.Name, r.MACAfter, lab.Hosts[i].PseudoMAC, r.Peers, r.Connect.Succeeded, n-1)
		}
	}

	// The spoofer a sends as b, to c and to everyone, then as itself.
	a, b, c := lab.Hosts[0], lab.Hosts[1], lab.Hosts[n-1]
	before := guardDrops(t, lab, a)
	var got [2]atomic.Int64 // frames heard from the spoofer, by kind
	const spoofed, own = 0, 1
	const magic = 0x67756172 // "guar"
	var wg sync.WaitGroup
	var socks []*packet.Socket
	defer func() {
		for _, s := range socks {
			s.Close()
		}
		wg.Wait()
	}()
	for _, h := range lab.Hosts[1:] {
		s, err := packet.OpenEtherTypes(h.NetNS, h.Iface, 0, ethertype.Traffic)
		if err != nil {
			t.Fatal(err)
		}
		socks = append(socks, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 128)
			for {
				k, err := s.Recv(buf)
				if s.Closed() {
					return
				}
				if err == nil && k >= 19 && binary.BigEndian.Uint32(buf[14:]) == magic && buf[18] <= own {
					got[buf[18]].Add(1)
				}
			}
		}()
	}
	sock, err := packet.OpenEtherTypes(a.NetNS, a.Iface, 0, ethertype.Traffic)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	frame := func(src, dst string, kind byte) []byte {
		fr := make([]byte, 60)
		d, err := ether.ParseMAC(dst)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ether.ParseMAC(src)
		if err != nil {
			t.Fatal(err)
		}
		ether.Header{Dst: d, Src: s, EtherType: ethertype.Traffic}.Put(fr)
		binary.BigEndian.PutUint32(fr[14:], magic)
		fr[18] = kind
		return fr
	}
	const frames = 50
	bcast := ether.Broadcast.String()
	for i := 0; i < frames; i++ {
		for _, fr := range [][]byte{frame(b.PseudoMAC, c.PseudoMAC, spoofed), frame(b.PseudoMAC, bcast, spoofed)} {
			if err := sock.Send(fr); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Sent after the spoofed frames along the same links: once they have
	// all arrived, any spoofed frame that got through would have too.
	for i := 0; i < frames; i++ {
		for _, fr := range [][]byte{frame(a.PseudoMAC, c.PseudoMAC, own), frame(a.PseudoMAC, bcast, own)} {
			if err := sock.Send(fr); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantOwn := int64(frames + frames*(n-1)) // c's unicasts, everyone's broadcasts
	waitFor(t, "the spoofer's own frames", func() bool { return got[own].Load() >= wantOwn })
	waitFor(t, "the guard's count", func() bool { return guardDrops(t, lab, a)-before >= 2*frames })
	if d := guardDrops(t, lab, a) - before; d != 2*frames || got[spoofed].Load() != 0 || got[own].Load() != wantOwn {
		t.Fatalf("guard dropped %d frames (want %d); hosts heard %d spoofed (want 0) and %d own frames (want %d)",
			d, 2*frames, got[spoofed].Load(), got[own].Load(), wantOwn)
	}
	for _, h := range lab.Hosts[1:] {
		if d := guardDrops(t, lab, h); d != 0 {
			t.Errorf("the guard dropped %d frames of %s, which sent only as itself", d, h.Name)
		}
	}
}
