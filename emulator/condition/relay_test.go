package condition

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

func TestRelayWireRoundTrip(t *testing.T) {
	in := relayMsg{kind: kindState, machine: 3, token: 0xdeadbeef, seq: 42, sent: 1795948144171890072,
		entries: []relayState{{sw: 7, port: 5, paused: true, onset: 1795948144171890000}, {sw: 1 << 20, port: 65535, onset: -1}}}
	b := in.encode(nil)
	if len(b) != relayHeader+2*relayEntry {
		t.Fatalf("%d bytes, want %d", len(b), relayHeader+2*relayEntry)
	}
	var out relayMsg
	if err := decodeRelay(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.kind != in.kind || out.machine != in.machine || out.token != in.token || out.seq != in.seq || out.sent != in.sent || len(out.entries) != 2 ||
		out.entries[0] != in.entries[0] || out.entries[1] != in.entries[1] {
		t.Fatalf("decoded %+v, sent %+v", out, in)
	}
	// A full datagram stays within one underlay frame.
	in.entries = make([]relayState, relayMaxEntries)
	if n := len(in.encode(nil)); n > relayMTU {
		t.Fatalf("a datagram of %d entries is %d bytes, over %d", relayMaxEntries, n, relayMTU)
	}
	for _, bad := range [][]byte{nil, []byte("EFPR"), append([]byte("EFPX"), b[4:]...), b[:len(b)-1], append(b, 0)} {
		if decodeRelay(bad, &out) == nil {
			t.Errorf("decoded %x", bad)
		}
	}
	ack := relayMsg{kind: kindAck, seq: 1}
	withEntry := ack.encode(nil)
	withEntry[33] = 1
	withEntry = append(withEntry, make([]byte, relayEntry)...)
	if decodeRelay(withEntry, &out) == nil {
		t.Error("decoded an ack with entries")
	}
}

func FuzzDecodeRelay(f *testing.F) {
	f.Add((&relayMsg{kind: kindState, machine: 1, token: 9, seq: 3, sent: 5, entries: []relayState{{sw: 2, port: 3, paused: true, onset: 4}}}).encode(nil))
	f.Add((&relayMsg{kind: kindAck, machine: 0, token: 9, seq: 3}).encode(nil))
	f.Add([]byte("EFPR"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m relayMsg
		if decodeRelay(b, &m) != nil {
			return
		}
		// What decodes encodes back to the same bytes.
		if got := m.encode(nil); !bytes.Equal(got, b) {
			t.Fatalf("decoded %x, encodes %x", b, got)
		}
	})
}

// maskWriter records a switch's bitmask: the relay's tests check what
// the pauses it carries do to the upstream switch's conditions, without a
// switch.
type maskWriter struct {
	mu   sync.Mutex
	mask uint64
}

func (w *maskWriter) setMask(mask uint64, _ bool) error {
	w.mu.Lock()
	w.mask = mask
	w.mu.Unlock()
	return nil
}
func (w *maskWriter) setMaskAcked(mask uint64) (<-chan struct{}, time.Time, error) {
	return closedChan, time.Now(), w.setMask(mask, false)
}
func (w *maskWriter) barrier(time.Duration) error { return nil }
func (w *maskWriter) rejected() uint64            { return 0 }
func (w *maskWriter) sendFrame(int, []byte) error { return nil }
func (w *maskWriter) close()                      {}
func (w *maskWriter) get() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mask
}

// relayPair is two machines' monitors on loopback: machine 0 runs switch
// s0, whose port 1 is fed by port 2 of machine 1's switch s1.
func relayPair(t *testing.T) (a, b *Monitor, down *port, wb *maskWriter) {
	t.Helper()
	conns := make([]*net.UDPConn, 2)
	peers := make([]*net.UDPAddr, 2)
	for k := range conns {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[k], peers[k] = c, c.LocalAddr().(*net.UDPAddr)
	}
	mk := func(k int, name string, id, num int) (*Monitor, *port, *maskWriter) {
		w := &maskWriter{}
		s := &sw{name: name, id: id, of: w, ports: map[int]*port{}}
		p := &port{sw: s, num: num, bit: 0}
		s.ports[num] = p
		m := &Monitor{o: Options{NoReaction: true, LogSize: 1 << 10}, switches: map[string]*sw{name: s}, pctx: context.Background(),
			relay: newRelay(RelayOptions{Conn: conns[k], Peers: peers, Self: k, Of: []int{0, 1}, Token: 77, Clocked: true})}
		return m, p, w
	}
	a, down, _ = mk(0, "s0", 0, 1)
	b, up, wb := mk(1, "s1", 1, 2)
	down.remote = []int{1}
	a.relay.ports = []*port{down}
	b.relay.down[relayKey{0, 1}] = &remoteDown{name: "s0:1", feeds: []*port{up}}
	return a, b, down, wb
}

// waitRelay waits for cond, reading the monitors' counters; a relay on
// loopback answers in microseconds, so 10 s is a broken relay.
func waitRelay(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRelayPausesAcrossMachines(t *testing.T) {
	a, b, down, wb := relayPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.relayRead(ctx) })
	wg.Go(func() { b.relayRead(ctx) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	counters := func(m *Monitor) RelayCounters { c, _, _ := m.RelayLog(0); return c }

	// s0:1's queue crosses XOFF: s1's port 2, which feeds it, pauses.
	pause := func(own bool) {
		a.smu.Lock()
		defer a.smu.Unlock()
		down.own = own
		now := time.Now()
		a.relayNote(down, now)
		changed := map[*sw]*flip{}
		a.relayFlush(now, changed)
	}
	pause(true)
	waitRelay(t, "the pause to reach s1", func() bool { return wb.get() == 1 })
	waitRelay(t, "the ack", func() bool { return counters(a).Acked == 1 })
	if !b.Paused("s1", 2) {
		t.Fatal("s1:2 is not paused")
	}
	_, samples, _ := b.RelayLog(0)
	if len(samples) != 1 || samples[0].Ack || samples[0].MS < 0 {
		t.Fatalf("receiver's samples %+v, want one one-way time", samples)
	}
	// A refresh of the same state changes nothing.
	a.smu.Lock()
	a.relayFlush(time.Now().Add(RelayRefresh), map[*sw]*flip{})
	a.smu.Unlock()
	waitRelay(t, "the refresh", func() bool { return counters(a).Datagrams == 2 && counters(b).Strays == 0 })
	// The release.
	pause(false)
	waitRelay(t, "the release to reach s1", func() bool { return wb.get() == 0 })
	if c := counters(b); c.Applied != 2 {
		t.Fatalf("receiver applied %d changes, want 2", c.Applied)
	}

	// A state older than the one applied (read out of order) is ignored.
	old := relayMsg{kind: kindState, machine: 0, token: 77, seq: 1000, entries: []relayState{{sw: 0, port: 1, paused: true, onset: 1}}}
	a.relay.o.Conn.WriteToUDP(old.encode(nil), a.relay.o.Peers[1])
	waitRelay(t, "the stale state", func() bool { return counters(b).Stale == 1 })
	if wb.get() != 0 {
		t.Fatal("a stale pause paused s1")
	}

	// A datagram of an earlier point is ignored.
	late := relayMsg{kind: kindState, machine: 0, token: 77, epoch: 5, seq: 1001, entries: []relayState{{sw: 0, port: 1, paused: true, onset: time.Now().UnixNano()}}}
	a.relay.o.Conn.WriteToUDP(late.encode(nil), a.relay.o.Peers[1])
	waitRelay(t, "the late datagram", func() bool { return counters(b).Late == 1 })
	if wb.get() != 0 {
		t.Fatal("an earlier point's pause paused s1")
	}

	// A machine whose monitor stops releases what it held, not expired.
	pause(true)
	waitRelay(t, "the pause before the stop", func() bool { return wb.get() == 1 })
	a.relayStop()
	waitRelay(t, "the stop", func() bool { return wb.get() == 0 && counters(b).Stopped == 1 })
	// A new point: s0:1 still paused goes again as a change.
	a.RelayEpoch(9)
	b.RelayEpoch(9)
	a.relayResend()
	a.smu.Lock()
	a.relayFlush(time.Now(), map[*sw]*flip{})
	a.smu.Unlock()
	waitRelay(t, "the pause in the new point", func() bool { return wb.get() == 1 })
	pause(false)
	waitRelay(t, "the release in the new point", func() bool { return wb.get() == 0 })

	// A pause whose refreshes stop coming is released after RelayExpiry.
	pause(true)
	waitRelay(t, "the second pause", func() bool { return wb.get() == 1 })
	b.smu.Lock()
	changed := map[*sw]*flip{}
	b.relayFlush(time.Now().Add(RelayExpiry+RelayRefresh), changed)
	for s, f := range changed {
		b.flip(s, f)
	}
	b.smu.Unlock()
	if wb.get() != 0 || counters(b).Expired != 1 {
		t.Fatalf("after the expiry s1's mask is %d, expired %d", wb.get(), counters(b).Expired)
	}

	// Datagrams that are not this lab's are refused, and change nothing.
	stray := func(b []byte) {
		c, err := net.DialUDP("udp4", nil, a.relay.o.Peers[1])
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(b)
	}
	other := relayMsg{kind: kindState, machine: 0, token: 78, epoch: 9, seq: 1, entries: []relayState{{sw: 0, port: 1, paused: true}}}
	stray(other.encode(nil))
	stray([]byte("EFPR not a datagram"))
	waitRelay(t, "the strays", func() bool { return counters(b).Strays == 2 })
	if wb.get() != 0 {
		t.Fatal("a stray datagram paused s1")
	}
}
