package hostagent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/ether"
	"github.com/ethfab/ethfab/hostagent/omx"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
)

// bareAgent is an agent without a socket, for feeding handle directly.
func bareAgent(o Options) *Agent {
	a := &Agent{o: o.Defaults(), conns: map[ether.MAC]conn{}, wake: make(chan struct{}, 1), completed: make(chan struct{})}
	a.epoch = time.Now()
	a.mac = ether.MAC{0x02, 0, 0, 0, 0, 1}
	a.payloadMAC = a.mac
	a.table = omx.NewPeerTable(a.epoch, a.o.MaxPeers)
	a.ann = omx.NewAnnouncer(a.o.Schedule, 1)
	return a
}

func TestHandleCountsAndDrops(t *testing.T) {
	a := bareAgent(Options{Announce: true, Connect: true})
	peer := ether.MAC{0x02, 0, 0, 0, 0, 2}
	stranger := ether.MAC{0x02, 0, 0, 0, 0, 3}
	now := time.Now()
	ann := omx.Announcement{Header: ether.Header{Dst: ether.Broadcast, Src: peer}, NIC: peer, Serial: 5}.Marshal()
	req := func(src ether.MAC) []byte {
		return omx.Connect{Header: ether.Header{Dst: a.mac, Src: src}, Seq: 9, Serial: 5}.Marshal()
	}
	if r := a.handle(req(peer), now); r != nil || a.res.Drops.BadPeerAddr != 1 {
		t.Fatalf("request before the announcement answered (%v) or not dropped: %+v", r, a.res.Drops)
	}
	a.handle(ann, now)
	if a.table.Len() != 1 || !a.table.Has(peer) {
		t.Fatal("announcement not recorded")
	}
	r := a.handle(req(peer), now)
	c, err := omx.ParseConnect(r)
	if err != nil || !c.Reply || c.Dst != peer || c.Src != a.mac || c.Seq != 9 {
		t.Fatalf("reply %+v, %v", c, err)
	}
	if a.handle(req(stranger), now) != nil || a.res.Drops.BadPeerAddr != 2 {
		t.Fatalf("stranger answered: %+v", a.res.Drops)
	}
	other := omx.Connect{Header: ether.Header{Dst: stranger, Src: peer}}.Marshal()
	if a.handle(other, now) != nil || a.res.Drops.OtherHost != 1 {
		t.Fatalf("frame for another host answered: %+v", a.res.Drops)
	}
	// Unsolicited reply from a known peer: counted, not a connection.
	rep := omx.Connect{Header: ether.Header{Dst: a.mac, Src: peer}, Reply: true, Seq: 1, Serial: 5}.Marshal()
	if a.handle(rep, now); a.res.Drops.Unexpected != 1 || a.res.Connect.Succeeded != 0 {
		t.Fatalf("unsolicited reply: %+v %+v", a.res.Drops, a.res.Connect)
	}
	a.handle(ann[:20], now)
	a.handle([]byte{1, 2, 3}, now)
	a.handle(append(make([]byte, 12), 0x08, 0x00), now)
	a.handle(append(append([]byte(nil), ann[:16]...), 0x77), now) // unknown 0x86DF type
	if a.res.Drops.Malformed != 2 || a.res.Drops.Foreign != 2 {
		t.Fatalf("drops %+v", a.res.Drops)
	}
}

func TestHandleHeaderVersusPayload(t *testing.T) {
	// An announcement whose source was rewritten on the way (PortLand
	// style): payload and header disagree.
	orig := ether.MAC{0x5a, 1, 2, 3, 4, 5}
	rewritten := ether.MAC{0x02, 0, 0, 9, 0, 1}
	ann := omx.Announcement{Header: ether.Header{Dst: ether.Broadcast, Src: rewritten}, NIC: orig, Serial: 1}.Marshal()
	for from, want := range map[addressing.PeerMACSource]ether.MAC{addressing.FromPayload: orig, addressing.FromHeader: rewritten} {
		a := bareAgent(Options{Announce: true, PeerMACFrom: from})
		a.handle(ann, time.Now())
		if !a.table.Has(want) || a.table.Len() != 1 {
			t.Errorf("%s: table %+v, want %s", from, a.table.Peers(), want)
		}
	}
}

func FuzzHandle(f *testing.F) {
	peer := ether.MAC{0x02, 0, 0, 0, 0, 2}
	f.Add(omx.Announcement{Header: ether.Header{Dst: ether.Broadcast, Src: peer}, NIC: peer, Serial: 5}.Marshal())
	f.Add(omx.Connect{Header: ether.Header{Dst: ether.MAC{0x02, 0, 0, 0, 0, 1}, Src: peer}, Reply: true}.Marshal())
	f.Add(dmp.Request(peer, 1, 0))
	f.Add([]byte{})
	a := bareAgent(Options{Announce: true, Connect: true, ExpectPeers: 3, DMP: true})
	a.dmpc = make(chan dmp.Message, 1)
	f.Fuzz(func(t *testing.T, b []byte) {
		if r := a.handle(b, time.Now()); r != nil {
			if _, err := omx.ParseConnect(r); err != nil {
				t.Fatalf("agent sent an unparsable reply: %v", err)
			}
		}
		select {
		case <-a.dmpc:
		default:
		}
	})
}

// vethPair makes two namespaces joined by a veth pair (eth0 in each).
func vethPair(t *testing.T) (string, string) {
	t.Helper()
	roottest.Need(t)
	tag := fmt.Sprintf("hagt%d%04x", os.Getpid()%100000, rand.N(1<<16))
	a, b := tag+"a", tag+"b"
	created, err := kernel.CreateNamespaces([]string{a, b})
	t.Cleanup(func() { kernel.DeleteNamespaces(created) })
	if err != nil {
		t.Fatal(err)
	}
	if err := kernel.CreateVeths([]kernel.Veth{{A: kernel.VethEnd{NS: a, Name: "eth0"}, B: kernel.VethEnd{NS: b, Name: "eth0"}}}, 1); err != nil {
		t.Fatal(err)
	}
	// A fresh veth drops what it is given until the kernel has marked it
	// running (asynchronously, after both ends are up).
	for _, ns := range []string{a, b} {
		for deadline := time.Now().Add(3 * time.Second); ; {
			var running bool
			kernel.InNamespace(ns, func() error {
				ifi, err := net.InterfaceByName("eth0")
				running = err == nil && ifi.Flags&net.FlagRunning != 0
				return nil
			})
			if running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s eth0 not running after 3s", ns)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// And until a frame has crossed each way: under load a fresh veth
	// lost an agent's first announcement after both ends were running,
	// and its peer then refused the connect request of a sender it had
	// not heard of (once in a CI run).
	crosses(t, a, b)
	crosses(t, b, a)
	return a, b
}

// crosses sends warm-up frames from namespace from's eth0 until one
// arrives at to's.
func crosses(t *testing.T, from, to string) {
	t.Helper()
	tx, err := packet.Open(from, "eth0", packet.Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	rx, err := packet.Open(to, "eth0", packet.Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	f := make([]byte, 60)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	binary.BigEndian.PutUint16(f[12:], ethertype.Traffic)
	buf := make([]byte, 128)
	for range 300 {
		if err := tx.Send(f); err != nil {
			t.Fatal(err)
		}
		rx.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := rx.Recv(buf); err == nil {
			return
		}
	}
	t.Fatalf("no frame crossed from %s to %s in 3 s", from, to)
}

func fastSchedule() omx.Schedule {
	return omx.Schedule{Burst: 3, BurstInterval: 100 * time.Millisecond, Interval: time.Hour}
}

// Two hosts on a veth pair announce, fill their peer tables with each
// other and connect.
func TestVethAnnounceConnect(t *testing.T) {
	nsA, nsB := vethPair(t)
	f, err := OpenFleet([]Endpoint{{"a", nsA, "eth0"}, {"b", nsB, "eth0"}},
		Options{Announce: true, Connect: true, Schedule: fastSchedule(), ConnectInterval: 100 * time.Millisecond, ExpectPeers: 1, RecordPeers: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs, err := f.Run(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("not complete within 5s: %+v %+v", rs[0], rs[1])
	}
	for i, r := range rs {
		other := rs[1-i]
		if r.Peers != 1 || r.PeerTable[0].MAC.String() != other.MACAfter {
			t.Errorf("%s: peer table %+v, want %s", r.Name, r.PeerTable, other.MACAfter)
		}
		if r.Connect.Attempted != 1 || r.Connect.Succeeded != 1 || r.Connect.Failed != 0 || r.Connect.AllMs == nil || r.PeersFullMs == nil {
			t.Errorf("%s: connect %+v", r.Name, r.Connect)
		}
		if r.AnnouncementsSent < 1 || r.Drops.BadPeerAddr != 0 || r.Drops.Malformed != 0 || !r.Complete {
			t.Errorf("%s: %+v", r.Name, r)
		}
		if r.MACBefore != r.MACAfter || r.DMPMs != nil {
			t.Errorf("%s: address changed without DMP: %s -> %s", r.Name, r.MACBefore, r.MACAfter)
		}
	}
}

// A host's MAC changes after it has announced, before anyone connects.
// With Open-MX's behaviour (none) its peer keeps the stale address and
// drops the host's requests (DROP_BAD_PEER_ADDR): no connection. With a
// fresh round on the change, the peer learns the new address and the
// connections succeed.
func TestAddressChangePolicies(t *testing.T) {
	for _, policy := range []addressing.AddressChange{addressing.ChangeIgnore, addressing.ChangeNewRound} {
		t.Run(string(policy), func(t *testing.T) {
			nsA, nsB := vethPair(t)
			o := Options{Announce: true, Connect: true, Schedule: fastSchedule(),
				OnAddressChange: policy, ConnectAfter: time.Second, ConnectInterval: 200 * time.Millisecond,
				MACPoll: 50 * time.Millisecond, RecordPeers: true}
			f, err := OpenFleet([]Endpoint{{"a", nsA, "eth0"}, {"b", nsB, "eth0"}}, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			newMAC := "02:00:00:0a:0b:0c"
			// a changes its address once b has its old one, not after a
			// guessed 300 ms: a's first announcements on a fresh veth can
			// be lost (1 run in 3 here, both of a's within the first
			// millisecond), and a single one left b with only the new
			// address. The burst repeats them.
			agents := f.Agents()
			knowsOld := func() bool {
				agents[0].mu.Lock()
				old := agents[0].mac
				agents[0].mu.Unlock()
				agents[1].mu.Lock()
				defer agents[1].mu.Unlock()
				return old != (ether.MAC{}) && agents[1].table != nil && agents[1].table.Has(old)
			}
			go func() {
				for deadline := time.Now().Add(time.Second); !knowsOld() && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				if err := kernel.SetMAC(nsA, "eth0", newMAC); err != nil {
					t.Error(err)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			rs, err := f.Run(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			a, b := rs[0], rs[1]
			if a.MACAfter != newMAC {
				t.Fatalf("a's MAC %s, want %s", a.MACAfter, newMAC)
			}
			hasNew := false
			for _, p := range b.PeerTable {
				hasNew = hasNew || p.MAC.String() == newMAC
			}
			switch policy {
			case addressing.ChangeIgnore:
				if hasNew || a.Serial == 0 || roundsOnChange(a) != 0 || a.Connect.Succeeded != 0 || b.Connect.Succeeded != 0 || b.Drops.BadPeerAddr == 0 {
					t.Fatalf("Open-MX behaviour: b's table %+v, a %+v / %+v, b %+v / %+v", b.PeerTable, a.Connect, a.Drops, b.Connect, b.Drops)
				}
			case addressing.ChangeNewRound:
				if !hasNew || roundsOnChange(a) != 1 || a.Connect.Succeeded != 1 || b.Connect.Succeeded != 1 || b.Drops.BadPeerAddr != 0 {
					t.Fatalf("fresh round: b's table %+v, a %+v / %+v, b %+v / %+v", b.PeerTable, a.Connect, a.Drops, b.Connect, b.Drops)
				}
				// b also tried a's stale address, which nobody answers.
				if b.Connect.Attempted != 2 || a.Drops.OtherHost == 0 {
					t.Fatalf("stale entry: b %+v, a drops %+v", b.Connect, a.Drops)
				}
			}
			t.Logf("a connect %+v drops %+v; b connect %+v drops %+v", a.Connect, a.Drops, b.Connect, b.Drops)
		})
	}
}

// Without a switch nothing answers DMP: the client gives up in bounded
// time with a clear error and the address stays.
func TestDMPWithoutSwitchFails(t *testing.T) {
	nsA, _ := vethPair(t)
	sock, err := Open(nsA, "eth0", 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := New(sock, Options{DMP: true, DMPBackoff: dmp.Backoff{Initial: 20 * time.Millisecond, Timeout: 300 * time.Millisecond}}).Run(context.Background())
	if !errors.Is(err, dmp.ErrNoReply) {
		t.Fatalf("error %v, want ErrNoReply", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("gave up after %v", took)
	}
	if r.DMPError == "" || r.DMPAttempts < 3 || r.DMPMs != nil || r.MACAfter != r.MACBefore {
		t.Fatalf("result %+v", r)
	}
}

// roundsOnChange counts the rounds an agent started because its own
// address changed.
func roundsOnChange(r *Result) int {
	n := 0
	for _, e := range r.Events {
		if e.Kind == "round" && strings.Contains(e.Detail, "address change") {
			n++
		}
	}
	return n
}

// Spoofing against one listener, frame by frame:
// forged announcements neither grow the peer table without bound, nor
// overwrite another host's entry, nor make the table look full, and
// connect frames sent in another host's name are neither answered nor
// counted as connections.
func TestSpoofedAnnouncementsAndConnects(t *testing.T) {
	now := time.Now()
	victim := ether.MAC{0x02, 0, 0, 0, 0, 2}
	spoofer := ether.MAC{0x02, 0, 0, 0, 0, 3}
	third := ether.MAC{0x02, 0, 0, 0, 0, 4}
	announce := func(src, nic ether.MAC, index uint16, serial uint32) []byte {
		return omx.Announcement{Header: ether.Header{Dst: ether.Broadcast, Src: src}, PeerIndex: index, NIC: nic, Serial: serial}.Marshal()
	}
	junk := func(i int) ether.MAC { return ether.MAC{0x02, 0xee, byte(i >> 16), byte(i >> 8), byte(i), 1} }

	t.Run("junk from one source", func(t *testing.T) {
		a := bareAgent(Options{Announce: true, ExpectPeers: 3})
		a.handle(announce(victim, victim, 2, 5), now)
		for i := 0; i < 10_000; i++ {
			a.handle(announce(spoofer, junk(i), uint16(i), uint32(i+1)), now)
		}
		if a.table.Len() != 2 || a.res.Drops.PeerConflict != 9_999 || a.res.PeersFullMs != nil {
			t.Fatalf("%d peers, %d conflicts, full at %v: want 2, 9999, never", a.table.Len(), a.res.Drops.PeerConflict, a.res.PeersFullMs)
		}
	})
	t.Run("junk from forged sources", func(t *testing.T) {
		a := bareAgent(Options{Announce: true, MaxPeers: 100})
		for i := 0; i < 10_000; i++ {
			a.handle(announce(junk(i), junk(i), uint16(i), 1), now)
		}
		if a.table.Len() != 100 || a.res.Drops.PeerTableFull != 9_900 {
			t.Fatalf("%d peers, %d refused: want 100, 9900", a.table.Len(), a.res.Drops.PeerTableFull)
		}
	})
	t.Run("overwrite", func(t *testing.T) {
		a := bareAgent(Options{Announce: true})
		a.handle(announce(victim, victim, 2, 5), now)
		a.handle(announce(spoofer, spoofer, 3, 7), now)
		a.ann.Sent(now) // the burst is over: news would start a round
		a.ann.Sent(now)
		a.ann.Sent(now)
		rounds := a.ann.Rounds
		a.handle(announce(spoofer, victim, 3, 99), now) // the spoofer's own source
		a.handle(announce(victim, victim, 3, 99), now)  // the victim's source, another index
		if !a.table.Matches(victim, 2, 5) || a.res.Drops.PeerConflict != 2 || a.ann.Rounds != rounds {
			t.Fatalf("victim's entry %+v, %d conflicts, %d rounds (were %d)", a.table.Peers(), a.res.Drops.PeerConflict, a.ann.Rounds, rounds)
		}
		a.handle(announce(victim, victim, 2, 6), now) // the victim restarts
		if !a.table.Matches(victim, 2, 6) || a.ann.Rounds != rounds+1 {
			t.Fatalf("the victim's restart was not taken: %+v, %d rounds", a.table.Peers(), a.ann.Rounds)
		}
	})
	t.Run("connects", func(t *testing.T) {
		a := bareAgent(Options{Announce: true, Connect: true})
		a.handle(announce(victim, victim, 2, 5), now)
		a.handle(announce(spoofer, spoofer, 3, 7), now)
		a.handle(announce(third, third, 4, 9), now)
		req := func(src ether.MAC, index uint16, serial uint32) []byte {
			return omx.Connect{Header: ether.Header{Dst: a.mac, Src: src}, PeerIndex: index, Seq: 1, Serial: serial}.Marshal()
		}
		// A request in the third host's name, so that the reply goes to
		// it: the spoofer's index and serial give it away.
		if r := a.handle(req(third, 3, 7), now); r != nil || a.res.Drops.PeerMismatch != 1 || a.res.Connect.Served != 0 {
			t.Fatalf("forged request answered (%v): %+v", r, a.res.Drops)
		}
		if r := a.handle(req(third, 4, 9), now); r == nil || a.res.Connect.Served != 1 {
			t.Fatalf("the third host's own request not answered: %+v", a.res.Drops)
		}
		// This host asked the victim (request 10, as connectPass records
		// it); a reply from the victim's address carrying another peer's
		// index or serial is not the victim's.
		const seq = 10
		a.conns[victim] = conn{first: seq, last: seq, doneMs: -1}
		rep := func(index uint16, serial uint32) []byte {
			return omx.Connect{Header: ether.Header{Dst: a.mac, Src: victim}, Reply: true, PeerIndex: index, Seq: seq, Serial: serial}.Marshal()
		}
		a.handle(rep(3, 7), now)
		if a.res.Connect.Succeeded != 0 || a.res.Drops.PeerMismatch != 2 {
			t.Fatalf("forged reply counted: %+v %+v", a.res.Connect, a.res.Drops)
		}
		// A reply reflected from the third host answers nothing asked of it.
		reflected := omx.Connect{Header: ether.Header{Dst: a.mac, Src: third}, Reply: true, PeerIndex: 4, Seq: seq, Serial: 9}.Marshal()
		a.handle(reflected, now)
		if a.res.Connect.Succeeded != 0 || a.res.Drops.Unexpected != 1 {
			t.Fatalf("reflected reply counted: %+v %+v", a.res.Connect, a.res.Drops)
		}
		a.handle(rep(2, 5), now)
		if a.res.Connect.Succeeded != 1 {
			t.Fatalf("the victim's own reply not counted: %+v %+v", a.res.Connect, a.res.Drops)
		}
	})
}
