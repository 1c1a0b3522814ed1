package fabric

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/bpftest"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/ovs"
)

// A tagged host port (routing.vlan.tagged_hosts, seed 002's T port) on
// real frames: every pair pings through it (the host's stack sends and
// takes 802.1Q frames through the tc programs that stand in for a VLAN
// interface); frames of ethfab's own EtherType cross it both ways, each
// one the tagged host sends arriving at its switch tagged with its
// port's VLAN (the switch's pass rule for that VLAN on that port counts
// them) and charged with its tag by the host link's tbf (4 bytes more
// than it was written); and the switch side of the link counts none of
// them dropped (the kernel has no VLAN device for them once Open
// vSwitch's socket has them: without ethfab_vlan_taken every one was).
func TestVLANTaggedHosts(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	for _, assign := range []string{"fixed", "renamed"} {
		t.Run(assign, func(t *testing.T) {
			lab := upYAML(t, "eft-vt"+assign[:1], "topology: {kind: mesh, dims: [2], t: 2}\n"+
				"routing: {mode: vlan, vlan: {assign: "+assign+", tagged_hosts: [s1h0]}}\nlinks: {host: {rate: 50mbit}}\n")
			if r, err := Ping(context.Background(), lab, 0, 1); err != nil || r.Reached != r.Pairs {
				t.Fatalf("%d of %d pairs reached (%v), %v", r.Reached, r.Pairs, r.Unreachable, err)
			}
			tagged, plain := *lab.Host("s1h0"), *lab.Host("s0h0")
			swEnd := lab.hostLink(tagged.Name).A
			top := lab.compiled.Top
			th := top.Hosts[0]
			for _, h := range top.Hosts {
				if h.Name == tagged.Name {
					th = h
				}
			}
			vid := lab.compiled.Ctl.VLANAssignment().Switches[th.Switch].PVID[th.Port-1]
			var mgmt string
			for _, s := range lab.Switches {
				if s.Name == top.Switches[th.Switch].Name {
					mgmt = s.Mgmt
				}
			}
			passed := func() uint64 {
				flows, err := ovs.DumpFlows(context.Background(), mgmt)
				if err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("in_port=%d,dl_vlan=%d", th.Port, vid)
				for _, f := range flows {
					if f.Table == 0 && strings.HasSuffix(f.Match, want) {
						return f.Packets
					}
				}
				t.Fatalf("no pass rule %q on %s", want, top.Switches[th.Switch].Name)
				return 0
			}
			rxDropped := func() uint64 {
				out, err := exec.Command("ip", "netns", "exec", swEnd.NetNS, "cat", "/sys/class/net/"+swEnd.Iface+"/statistics/rx_dropped").Output()
				if err != nil {
					t.Fatal(err)
				}
				n, _ := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
				return n
			}
			const n, size = 200, 200
			send := func(from, to Host) {
				rx, err := packet.Open(to.NetNS, to.Iface, packet.Config{Protocol: ethertype.Traffic})
				if err != nil {
					t.Fatal(err)
				}
				defer rx.Close()
				tx, err := packet.OpenSender(from.NetNS, from.Iface)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Close()
				src, _ := net.ParseMAC(from.MAC)
				dst, _ := net.ParseMAC(to.MAC)
				frame := make([]byte, size)
				copy(frame, dst)
				copy(frame[6:], src)
				frame[12], frame[13] = ethertype.Traffic>>8, ethertype.Traffic&0xff
				copy(frame[14:], "tagged port test")
				for range n {
					if err := tx.Send(frame); err != nil {
						t.Fatal(err)
					}
				}
				got, buf := 0, make([]byte, 2048)
				_ = rx.SetReadDeadline(time.Now().Add(5 * time.Second))
				for got < n {
					k, err := rx.Recv(buf)
					if err != nil {
						t.Fatalf("%s -> %s: %d of %d frames, %v", from.Name, to.Name, got, n, err)
					}
					// Untagged in the bytes either way: a tag is the
					// skb's, not the frame's, by the time a socket reads.
					if k == size && bytes.Equal(buf[14:30], frame[14:30]) {
						got++
					}
				}
			}
			p0, d0 := passed(), rxDropped()
			q0, err := kernel.Stats(tagged.NetNS, tagged.Iface)
			if err != nil {
				t.Fatal(err)
			}
			send(tagged, plain)
			send(plain, tagged)
			q1, err := kernel.Stats(tagged.NetNS, tagged.Iface)
			if err != nil {
				t.Fatal(err)
			}
			// Open vSwitch adds its datapath's counts to the rules' every
			// revalidator round (about once a second).
			var p uint64
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if p = passed() - p0; p >= n {
					break
				}
			}
			if p < n {
				t.Errorf("%s's switch passed %d frames tagged %d from its port, want %d", tagged.Name, p, vid, n)
			}
			if d := rxDropped() - d0; d != 0 {
				t.Errorf("switch side of %s's link: %d frames counted dropped", tagged.Name, d)
			}
			if b, p := q1.Bytes-q0.Bytes, q1.Packets-q0.Packets; p < n || b < n*(size+4) || b-n*(size+4) > (p-n)*1600 {
				t.Errorf("%s's tbf charged %d bytes for %d frames, want %d for the %d of %d bytes and their tags", tagged.Name, b, p, n*(size+4), n, size)
			}
		})
	}
}

func TestVLANPortObjectIsBuiltFromSource(t *testing.T) {
	bpftest.ObjectIsBuiltFrom(t, "emulator/fabric/bpf/vlanport.c", vlanPortObject)
}
