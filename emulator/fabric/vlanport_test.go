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

	"github.com/cilium/ebpf"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
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
			send := func(from, to Host) { sendFrames(t, from, to, n, size) }
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
			chargedTags(t, tagged.Name+"'s tbf", q0, q1, n, size)
		})
	}
}

// sendFrames sends n frames of ethfab's own EtherType, size bytes each,
// from one host to another and waits until the other has them all.
func sendFrames(t *testing.T, from, to Host, n, size int) {
	t.Helper()
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
		// Untagged in the bytes either way: a tag is the skb's, not the
		// frame's, by the time a socket reads.
		if k == size && bytes.Equal(buf[14:30], frame[14:30]) {
			got++
		}
	}
}

// chargedTags checks that a qdisc's counts between two reads are n frames
// of size bytes with their 802.1Q tags (and maybe some other frames).
func chargedTags(t *testing.T, what string, q0, q1 kernel.QdiscStats, n, size uint64) {
	t.Helper()
	if b, p := q1.Bytes-q0.Bytes, q1.Packets-q0.Packets; p < n || b < n*(size+4) || b-n*(size+4) > (p-n)*1600 {
		t.Errorf("%s charged %d bytes for %d frames, want %d for the %d of %d bytes and their tags", what, b, p, n*(size+4), n, size)
	}
}

// VLAN routing on the eBPF datapath (switch.c's 802.1Q): every pair is
// reached, ICMP from a tagged host's port too; the fixed assignment's
// frames cross the trunk with their tags in their bytes (its tbf charges
// 4 bytes a frame more than the hosts wrote), a tagged host's frames
// arrive at its switch tagged (its link's tbf charges the tags) and are
// taken; the program drops nothing it could not forward, and no frame
// needs the transit table while the paths stand still.
func TestVLANOnEBPF(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	lab := upYAML(t, "eft-ve", "topology: {kind: mesh, dims: [2], t: 2}\n"+
		"routing: {mode: vlan, vlan: {assign: fixed, tagged_hosts: [s1h0]}}\novs: {datapath: ebpf}\nlinks: {host: {rate: 50mbit}}\n")
	if r, err := Ping(context.Background(), lab, 0, 1); err != nil || r.Reached != r.Pairs {
		t.Fatalf("%d of %d pairs reached (%v), %v", r.Reached, r.Pairs, r.Unreachable, err)
	}
	tagged, plain, far := *lab.Host("s1h0"), *lab.Host("s0h0"), *lab.Host("s1h1")
	if out, err := exec.Command("ip", "netns", "exec", tagged.NetNS, "ping", "-c", "2", "-W", "3", plain.IP).CombinedOutput(); err != nil {
		t.Fatalf("ICMP %s -> %s: %v\n%s", tagged.Name, plain.Name, err, out)
	}
	links, err := lab.SwitchLinks("s0", "s1")
	if err != nil {
		t.Fatal(err)
	}
	trunk := links[0].A // s0's end: the frames from s0h0 leave by it
	if links[0].A.Node != "s0" {
		trunk = links[0].B
	}
	const n, size = 200, 200
	stats := func(ns, iface string) kernel.QdiscStats {
		q, err := kernel.Stats(ns, iface)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	t0, h0 := stats(trunk.NetNS, trunk.Iface), stats(tagged.NetNS, tagged.Iface)
	sendFrames(t, plain, far, n, size)
	sendFrames(t, tagged, plain, n, size)
	chargedTags(t, "the trunk's tbf", t0, stats(trunk.NetNS, trunk.Iface), n, size)
	chargedTags(t, tagged.Name+"'s tbf", h0, stats(tagged.NetNS, tagged.Iface), n, size)
	cs, err := datapath.ReadCounters(*lab.BPF)
	if err != nil {
		t.Fatal(err)
	}
	var vlanRules, transit, dropped uint64
	for _, c := range cs {
		vlanRules += c[controller.KindVLAN].Packets
		transit += c[controller.KindVLANTransit].Packets
		dropped += c[datapath.SlotDropped].Packets
	}
	if vlanRules < 3*n || transit != 0 || dropped != 0 {
		t.Errorf("the datapath's rules: %d frames met VLAN rules (want at least %d), %d took the transit table, %d dropped", vlanRules, 3*n, transit, dropped)
	}
}

// A tagged host whose port's VLAN changes with the paths (a link off in
// the safe order, fixed assignment, eBPF datapath) is tagged again: its
// old push program goes and a new one comes first on its egress, every
// pair is reached with the link off and on again, and each tagged host's
// egress holds one push program throughout.
func TestVLANRetag(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	lab := upYAML(t, "eft-vr2", "topology: {kind: mesh, dims: [3, 3]}\n"+
		"routing: {mode: vlan, vlan: {assign: fixed, tagged_hosts: [s0-0h0, s2-2h0]}}\novs: {datapath: ebpf}\nlinks: {host: {rate: 50mbit}}\n")
	// pushes lists the push programs on a host's egress.
	pushes := func(name string) []ebpf.ProgramID {
		h := lab.Host(name)
		idx, err := kernel.LinkIndexes(h.NetNS, []string{h.Iface})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := kernel.EgressPrograms(h.NetNS, idx[0], "ethfab_vlan_push")
		if kernel.NoTCX(err) {
			t.Skip("no tcx here: the push is a cls_bpf filter")
		}
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	hosts := []string{"s0-0h0", "s2-2h0"}
	was := map[string][]ebpf.ProgramID{}
	for _, h := range hosts {
		was[h] = pushes(h)
	}
	for _, on := range []bool{false, true} {
		if _, err := SwitchLink(context.Background(), lab, "s0-0", "s1-0", on, 0, true); err != nil {
			t.Fatal(err)
		}
		if r, err := Ping(context.Background(), lab, 0, 1); err != nil || r.Reached != r.Pairs {
			t.Fatalf("link on %v: %d of %d pairs reached (%v), %v", on, r.Reached, r.Pairs, r.Unreachable, err)
		}
		retagged := 0
		for _, h := range hosts {
			now := pushes(h)
			if len(now) != 1 {
				t.Errorf("link on %v: push programs %v on %s's egress, want one", on, now, h)
			} else if now[0] != was[h][0] {
				retagged++
			}
			was[h] = now
		}
		if retagged == 0 {
			t.Errorf("link on %v: no tagged host was tagged again", on)
		}
	}
}

func TestVLANPortObjectIsBuiltFromSource(t *testing.T) {
	bpftest.ObjectIsBuiltFrom(t, "emulator/fabric/bpf/vlanport.c", vlanPortObject)
}
