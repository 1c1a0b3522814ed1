package condition

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/results"
)

// PAUSE across machines. In a lab across machines (package cluster) every
// machine's worker runs a monitor of its part's switches. A port whose
// queue crosses XOFF pauses the links that feed it (controller.PauseFeeders),
// and when such a link is a cut one its upstream end is a port of another
// machine's switch. The relay carries the pause there: a UDP datagram over
// the machines' underlay, the network the cut links' tunnels cross, so the
// pause arrives late by what that network takes, as a real PAUSE frame
// arrives late by its wire (a PAUSE frame is sent ahead of the port's
// queue, and so is the datagram: it never waits in a cut link's tbf).
//
// The datagrams carry state, not events: each entry is one downstream
// port's own pause (on or off) and when it last changed. A change goes out
// at the end of the poll that made it; every RelayRefresh the state of each
// port paused, or changed within RelayExpiry, goes again, so a lost
// datagram costs a refresh period. A receiver that hears nothing of a
// paused port for RelayExpiry releases its feeders, as a PAUSE's quanta
// run out. Every datagram is acknowledged once applied, which times the
// relay by the sender's clock alone (ack − onset: a round trip and the
// receiver's wait for its lock); where the machines' clocks agree (one
// machine's emulated ones, or PTP) the receiver also times each change
// one way, from the sender's onset to its apply, and takes that onset as
// its flip's, so the reaction time of an upstream switch on another
// machine includes the relay. Datagrams carry their point (RelayEpoch),
// and a monitor whose point ends says so (a stop), so one point's pauses
// never reach the next.

// RelayOptions join a monitor to the other machines' monitors of a lab
// across machines.
type RelayOptions struct {
	// Conn is this monitor's socket on the underlay; Peers every
	// machine's (by machine, this one's unused), Self this machine.
	Conn  *net.UDPConn
	Peers []*net.UDPAddr
	Self  int
	// Of is each switch's machine (by topology switch ID).
	Of []int
	// Token is the lab's run: datagrams without it are not this lab's.
	Token uint32
	// Clocked: the machines' wall clocks agree, so the senders' onsets
	// are on this machine's clock.
	Clocked bool
}

// RelayRefresh is how often the state of a paused port goes again;
// RelayExpiry how long a receiver holds a pause it hears nothing of. A
// PAUSE of the maximum quanta lasts 3.4 ms at 10 Gbit/s; the expiry is
// longer, or a machine busy for a few polls would release its neighbours'
// pauses, and shorter than the reaction limit, so a lost release shows in
// the reaction measurement.
const (
	RelayRefresh = 5 * time.Millisecond
	RelayExpiry  = 50 * time.Millisecond
)

// RelayCounters count what the relay did: the counts a point's
// metrics carry (results.PauseRelay).
type RelayCounters = results.RelayCounts

// RelaySample is one timed change: Ack the sender's onset-to-ack time,
// else the receiver's one-way onset-to-apply time, in ms.
type RelaySample struct {
	Ack bool    `json:"ack,omitempty"`
	MS  float64 `json:"ms"`
}

// Wire format (big-endian): a 34-byte header and 16-byte entries.
//
//	magic "EFPR", version 1, kind (0 state, 1 ack, 2 stop), machine
//	uint16, token uint32 (the lab's run), epoch uint32 (the point's),
//	seq uint64, sent int64 (the sender's wall ns; an ack echoes its
//	datagram's), entries uint16;
//	entry: switch uint32, port uint16, paused uint8, 0, onset int64.
//
// A stop says the sender's monitor stopped (its point ended): its pauses
// are released, not expired.
const (
	relayMagic   = "EFPR"
	relayVersion = 1
	relayHeader  = 34
	relayEntry   = 16
	// relayMTU keeps a datagram in one underlay frame (1,500 bytes less
	// IPv4 and UDP headers, rounded down).
	relayMTU        = 1400
	relayMaxEntries = (relayMTU - relayHeader) / relayEntry
	kindState       = 0
	kindAck         = 1
	kindStop        = 2
)

// relayMsg is one datagram.
type relayMsg struct {
	kind    uint8
	machine uint16
	token   uint32
	epoch   uint32
	seq     uint64
	sent    int64
	entries []relayState
}

// relayState is one downstream port's own pause.
type relayState struct {
	sw     uint32
	port   uint16
	paused bool
	onset  int64
}

func (m *relayMsg) encode(b []byte) []byte {
	b = append(b[:0], relayMagic...)
	b = append(b, relayVersion, m.kind)
	b = binary.BigEndian.AppendUint16(b, m.machine)
	b = binary.BigEndian.AppendUint32(b, m.token)
	b = binary.BigEndian.AppendUint32(b, m.epoch)
	b = binary.BigEndian.AppendUint64(b, m.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(m.sent))
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.entries)))
	for _, e := range m.entries {
		b = binary.BigEndian.AppendUint32(b, e.sw)
		b = binary.BigEndian.AppendUint16(b, e.port)
		p := byte(0)
		if e.paused {
			p = 1
		}
		b = append(b, p, 0)
		b = binary.BigEndian.AppendUint64(b, uint64(e.onset))
	}
	return b
}

var errRelay = errors.New("not a pause relay datagram")

// decodeRelay parses a datagram into m (its entries reuse m's slice).
func decodeRelay(b []byte, m *relayMsg) error {
	if len(b) < relayHeader || string(b[:4]) != relayMagic || b[4] != relayVersion || b[5] > kindStop {
		return errRelay
	}
	m.kind = b[5]
	m.machine = binary.BigEndian.Uint16(b[6:])
	m.token = binary.BigEndian.Uint32(b[8:])
	m.epoch = binary.BigEndian.Uint32(b[12:])
	m.seq = binary.BigEndian.Uint64(b[16:])
	m.sent = int64(binary.BigEndian.Uint64(b[24:]))
	n := int(binary.BigEndian.Uint16(b[32:]))
	if len(b) != relayHeader+n*relayEntry || n > relayMaxEntries || m.kind != kindState && n > 0 {
		return fmt.Errorf("%w: %d bytes for %d entries", errRelay, len(b), n)
	}
	m.entries = m.entries[:0]
	for i := range n {
		e := b[relayHeader+i*relayEntry:]
		if e[6] > 1 || e[7] != 0 {
			return fmt.Errorf("%w: entry %d", errRelay, i)
		}
		m.entries = append(m.entries, relayState{sw: binary.BigEndian.Uint32(e), port: binary.BigEndian.Uint16(e[4:]),
			paused: e[6] == 1, onset: int64(binary.BigEndian.Uint64(e[8:]))})
	}
	return nil
}

type relayKey struct {
	sw   uint32
	port uint16
}

// remoteDown is another machine's port whose feeders include ports here.
type remoteDown struct {
	name    string // switch:port, for the events' From
	machine int    // its switch's
	feeds   []*port
	paused  bool
	heard   time.Time
	// onset: the sender's time of the state applied. Two goroutines read
	// the socket (relayRead, and Poll's relayDrain), so a state can be
	// handled after a later one: one older than the state held is stale.
	onset int64
}

// sentDatagram is a datagram with changes, until its ack.
type sentDatagram struct {
	at      time.Time
	machine int
	ports   []*port
	onsets  []time.Time
}

// pendKey is a change of a port not yet acknowledged by a machine.
type pendKey struct {
	p *port
	k int
}

// relay is a monitor's side of the PAUSE relay. Its state is under the
// monitor's smu; its counters and samples under mu.
type relay struct {
	o     RelayOptions
	ports []*port // local ports with remote feeders
	down  map[relayKey]*remoteDown
	// pending: by machine, the ports whose state goes at the next flush
	// (each port's latest, built then: a state, not its history).
	pending map[int][]*port
	es      []relayState // relaySend's entries, reused
	seq     uint64
	epoch   atomic.Uint32 // the point's (RelayEpoch); read by the readers without smu
	buf     []byte
	refresh time.Time
	sent    map[uint64]sentDatagram // datagrams with changes awaiting an ack
	unacked map[pendKey]time.Time   // a port's last change, until a machine acks it
	c       RelayCounters
	samples log[RelaySample]
	// Poll's descriptor and buffers (relayDrain).
	dupFD           int
	drain, drainAck []byte
	drainMsg        relayMsg
}

// close closes the relay's duplicate descriptor (the socket is its
// opener's).
func (r *relay) close() {
	if r.drain != nil && r.dupFD >= 0 {
		unix.Close(r.dupFD)
		r.dupFD = -1
	}
}

func newRelay(o RelayOptions) *relay {
	return &relay{o: o, down: map[relayKey]*remoteDown{}, pending: map[int][]*port{},
		sent: map[uint64]sentDatagram{}, unacked: map[pendKey]time.Time{}}
}

// note books a change of p's own pause for every machine that runs one of
// its feeders. Called with smu held.
func (m *Monitor) relayNote(p *port, at time.Time) {
	r := m.relay
	p.changed = at
	m.mu.Lock()
	r.c.Changes += uint64(len(p.remote))
	m.mu.Unlock()
	for _, k := range p.remote {
		r.pend(k, p)
		r.unacked[pendKey{p, k}] = at
	}
}

// flush sends the changes booked and, every RelayRefresh, the state of
// every port paused or changed within RelayExpiry; it releases the remote
// pauses not heard of within RelayExpiry into changed. Called with smu
// held, at the end of a poll.
func (m *Monitor) relayFlush(now time.Time, changed map[*sw]*flip) {
	r := m.relay
	if now.Sub(r.refresh) >= RelayRefresh {
		r.refresh = now
		for _, p := range r.ports {
			if p.changed.IsZero() || !p.own && now.Sub(p.changed) >= RelayExpiry {
				continue // never relayed (a manual pause stays on its port), or long settled
			}
			for _, k := range p.remote {
				r.pend(k, p)
			}
		}
		for _, d := range r.down {
			if d.paused && now.Sub(d.heard) >= RelayExpiry {
				m.relayRelease(d, changed, now, "expired", &r.c.Expired)
			}
		}
		for seq, s := range r.sent {
			if now.Sub(s.at) > time.Second {
				delete(r.sent, seq)
				m.mu.Lock()
				r.c.Unacked++
				m.mu.Unlock()
			}
		}
	}
	for k, ps := range r.pending {
		for len(ps) > 0 {
			n := min(len(ps), relayMaxEntries)
			m.relaySend(k, ps[:n], now)
			ps = ps[n:]
		}
		delete(r.pending, k)
	}
}

// pend books port p's state for machine k's next datagram, once.
func (r *relay) pend(k int, p *port) {
	if !slices.Contains(r.pending[k], p) {
		r.pending[k] = append(r.pending[k], p)
	}
}

// relaySend sends one datagram of the ports' states to machine k.
func (m *Monitor) relaySend(k int, ps []*port, now time.Time) {
	r := m.relay
	r.seq++
	sd := sentDatagram{at: now, machine: k, ports: append([]*port(nil), ps...)}
	r.es = r.es[:0]
	for _, p := range ps {
		r.es = append(r.es, relayState{sw: uint32(p.sw.id), port: uint16(p.num), paused: p.own, onset: p.changed.UnixNano()})
		sd.onsets = append(sd.onsets, p.changed)
	}
	msg := relayMsg{kind: kindState, machine: uint16(r.o.Self), token: r.o.Token, epoch: r.epoch.Load(), seq: r.seq, sent: now.UnixNano(), entries: r.es}
	r.buf = msg.encode(r.buf)
	r.sent[r.seq] = sd
	_, err := r.o.Conn.WriteToUDP(r.buf, r.o.Peers[k])
	m.mu.Lock()
	r.c.Datagrams++
	if err != nil {
		// A full socket buffer or a route gone: the refresh sends the
		// state again, and the datagram counts as unacknowledged.
		r.c.SendErrors++
	}
	m.mu.Unlock()
}

// relayRead reads the other machines' datagrams until ctx ends: states
// pause or release the feeders here, acks time the changes sent.
func (m *Monitor) relayRead(ctx context.Context) {
	r := m.relay
	buf := make([]byte, 64<<10)
	ack := make([]byte, 0, relayHeader)
	var msg relayMsg
	// The read ends when ctx does: its deadline moves to now.
	r.o.Conn.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { r.o.Conn.SetReadDeadline(time.Now()) })
	defer stop()
	for ctx.Err() == nil {
		n, from, err := r.o.Conn.ReadFromUDP(buf)
		switch {
		case err == nil:
		case ctx.Err() != nil || errors.Is(err, net.ErrClosed):
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			// An earlier Run's deadline, set as it ended after this
			// one cleared it.
			r.o.Conn.SetReadDeadline(time.Time{})
			continue
		default:
			// An ICMP error (a peer's socket closed): not a datagram.
			time.Sleep(time.Millisecond)
			continue
		}
		ack = m.relayHandle(buf[:n], from.IP, &msg, ack)
	}
}

// relayDrain handles every datagram waiting on the socket, without
// blocking; Poll calls it first. A process whose goroutines keep both
// cores busy wakes relayRead's goroutine late (the scheduler looks for
// network events when it runs out of work, or every 10 ms): the poll
// bounds a relayed pause's wait by the poll cycle, as a queue's own
// crossing waits for the next poll.
//
// It reads a duplicate of the socket's descriptor: the net package's own
// read holds the descriptor's read lock while relayRead waits in it.
func (m *Monitor) relayDrain() {
	r := m.relay
	if r.drain == nil {
		r.drain, r.dupFD = make([]byte, 64<<10), -1
		if rc, err := r.o.Conn.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				if d, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); err == nil {
					r.dupFD = d
				}
			})
		}
	}
	if r.dupFD < 0 {
		return
	}
	// At most what a poll of every machine's changes brings; the rest
	// waits for relayRead or the next poll.
	for range 256 {
		n, from, err := unix.Recvfrom(r.dupFD, r.drain, unix.MSG_DONTWAIT)
		if err != nil {
			return // nothing waiting (EAGAIN), or an error relayRead counts
		}
		a, ok := from.(*unix.SockaddrInet4)
		if !ok {
			continue
		}
		r.drainAck = m.relayHandle(r.drain[:n], net.IP(a.Addr[:]), &r.drainMsg, r.drainAck)
	}
}

// relayHandle handles one datagram from address from: an ack times the
// changes it answers, states are acknowledged and applied. It returns the
// ack's buffer for the next.
func (m *Monitor) relayHandle(b []byte, from net.IP, msg *relayMsg, ack []byte) []byte {
	r := m.relay
	if decodeRelay(b, msg) != nil || msg.token != r.o.Token || int(msg.machine) >= len(r.o.Peers) ||
		int(msg.machine) == r.o.Self || !from.Equal(r.o.Peers[msg.machine].IP) {
		m.mu.Lock()
		r.c.Strays++
		m.mu.Unlock()
		return ack
	}
	k := int(msg.machine)
	if msg.epoch != r.epoch.Load() {
		m.mu.Lock()
		r.c.Late++
		m.mu.Unlock()
		return ack
	}
	switch msg.kind {
	case kindAck:
		m.relayAcked(k, msg.seq)
		return ack
	case kindStop:
		m.relayStopped(k)
		return ack
	}
	m.relayApply(msg.entries)
	// Acknowledged once applied: the sender's onset-to-ack bounds the
	// time until the pause took effect here.
	a := relayMsg{kind: kindAck, machine: uint16(r.o.Self), token: r.o.Token, epoch: msg.epoch, seq: msg.seq, sent: msg.sent}
	ack = a.encode(ack)
	r.o.Conn.WriteToUDP(ack, r.o.Peers[k])
	return ack
}

// relayAcked times the changes a datagram to machine k carried.
func (m *Monitor) relayAcked(k int, seq uint64) {
	r := m.relay
	m.smu.Lock()
	defer m.smu.Unlock()
	now := time.Now()
	sd, ok := r.sent[seq]
	if !ok || sd.machine != k {
		return
	}
	delete(r.sent, seq)
	for i, p := range sd.ports {
		key := pendKey{p, k}
		at, ok := r.unacked[key]
		if !ok || !at.Equal(sd.onsets[i]) {
			continue // a refresh of an older state, or acked already
		}
		delete(r.unacked, key)
		m.mu.Lock()
		r.c.Acked++
		r.samples.add(RelaySample{Ack: true, MS: float64(now.Sub(at)) / float64(time.Millisecond)}, m.o.LogSize)
		m.mu.Unlock()
	}
}

// relayApply applies another machine's port states. Its time is taken
// once it holds smu: a pause waits for the monitor's lock as much as for
// the network, and both delay it.
func (m *Monitor) relayApply(es []relayState) {
	r := m.relay
	m.smu.Lock()
	defer m.smu.Unlock()
	now := time.Now()
	changed := map[*sw]*flip{}
	for _, e := range es {
		d := r.down[relayKey{e.sw, e.port}]
		if d == nil {
			m.mu.Lock()
			r.c.Unknown++
			m.mu.Unlock()
			continue
		}
		if e.onset < d.onset {
			m.mu.Lock()
			r.c.Stale++ // a later state was applied already
			m.mu.Unlock()
			continue
		}
		d.heard, d.onset = now, e.onset
		if d.paused == e.paused {
			continue
		}
		d.paused = e.paused
		onset := now
		m.mu.Lock()
		r.c.Applied++
		if r.o.Clocked {
			onset = time.Unix(0, e.onset)
			r.samples.add(RelaySample{MS: float64(now.Sub(onset)) / float64(time.Millisecond)}, m.o.LogSize)
		}
		m.mu.Unlock()
		for _, u := range d.feeds {
			if d.paused {
				u.held++
			} else {
				u.held--
			}
			m.settle(u, changed, Event{Time: onset, From: d.name})
		}
	}
	for s, f := range changed {
		m.flip(s, f)
	}
}

// relayStopped releases the pauses machine k's ports held here: its
// monitor stopped (its point ended), so they will not be refreshed.
func (m *Monitor) relayStopped(k int) {
	r := m.relay
	m.smu.Lock()
	defer m.smu.Unlock()
	now := time.Now()
	changed := map[*sw]*flip{}
	for _, d := range r.down {
		if d.machine == k && d.paused {
			m.relayRelease(d, changed, now, "its monitor stopped", &r.c.Stopped)
		}
	}
	for s, f := range changed {
		m.flip(s, f)
	}
}

// relayRelease releases a remote port's pause here, without word from
// its machine (why says what happened instead), counting it in count
// (nil: nowhere). Called with smu held.
func (m *Monitor) relayRelease(d *remoteDown, changed map[*sw]*flip, now time.Time, why string, count *uint64) {
	d.paused = false
	if count != nil {
		m.mu.Lock()
		*count++
		m.mu.Unlock()
	}
	for _, u := range d.feeds {
		u.held--
		m.settle(u, changed, Event{Time: now, From: d.name + " (" + why + ")"})
	}
}

// relayStop tells every other machine this monitor stopped. Run calls it
// as it ends.
func (m *Monitor) relayStop() {
	r := m.relay
	m.smu.Lock()
	defer m.smu.Unlock()
	for k, peer := range r.o.Peers {
		if k == r.o.Self {
			continue
		}
		r.seq++
		msg := relayMsg{kind: kindStop, machine: uint16(r.o.Self), token: r.o.Token, epoch: r.epoch.Load(), seq: r.seq, sent: time.Now().UnixNano()}
		r.buf = msg.encode(r.buf)
		r.o.Conn.WriteToUDP(r.buf, peer)
	}
}

// RelayEpoch starts a point's relay: datagrams of any other epoch (an
// earlier point's, read late) are ignored, the pauses other machines held
// here are released without a flip measured (their monitors stopped with
// the last point), and what was awaiting an ack is forgotten. Every
// machine's monitor takes the same epoch before its Run; the ports still
// paused here go again as changes when Run starts.
func (m *Monitor) RelayEpoch(epoch uint32) {
	r := m.relay
	if r == nil {
		return
	}
	m.smu.Lock()
	defer m.smu.Unlock()
	r.epoch.Store(epoch)
	clear(r.sent)
	clear(r.unacked)
	clear(r.pending)
	changed := map[*sw]*flip{}
	now := time.Now()
	for _, d := range r.down {
		if d.paused {
			m.relayRelease(d, changed, now, "an earlier point's", nil)
		}
		d.onset = 0
	}
	for s := range changed {
		m.flowMod(s, false)
	}
}

// relayResend books every port paused by its own queue as a change at
// the start of a Run: the other machines released its pause when the last
// point ended (RelayEpoch).
func (m *Monitor) relayResend() {
	m.smu.Lock()
	defer m.smu.Unlock()
	now := time.Now()
	for _, p := range m.relay.ports {
		if p.own && !p.changed.IsZero() {
			m.relayNote(p, now)
		}
	}
}

// RelayMark numbers the relay's samples: pass the one RelayLog returned
// to get only what came after it.
type RelayMark int

// RelayLog returns the relay's counters and its samples since mark, and
// the mark now (nothing outside a lab across machines).
func (m *Monitor) RelayLog(from RelayMark) (RelayCounters, []RelaySample, RelayMark) {
	if m.relay == nil {
		return RelayCounters{}, nil, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, next := m.relay.samples.since(int(from))
	return m.relay.c, s, RelayMark(next)
}

// Relayed says the monitor relays PAUSE to other machines.
func (m *Monitor) Relayed() bool { return m.relay != nil }
