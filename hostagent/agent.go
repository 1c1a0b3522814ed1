package hostagent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/ether"
	"github.com/ethfab/ethfab/hostagent/omx"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel/packet"
)

// recvBuf is the per-agent frame buffer: every frame the agent speaks is
// 64 bytes, longer ones are truncated and judged on their head.
const recvBuf = 256

// Agent serves one interface through one packet socket.
type Agent struct {
	o    Options
	sock *packet.Socket

	mu         sync.Mutex
	epoch      time.Time
	mac        ether.MAC // the interface's address as last seen
	macGen     uint64    // counts changes of mac: pollMAC drops a read a change overtook
	payloadMAC ether.MAC // what announcements carry
	table      *omx.PeerTable
	ann        *omx.Announcer // nil until announcing starts
	conns      map[ether.MAC]conn
	seq        uint32
	res        Result
	complete   bool
	dmpDone    bool
	dmpc       chan dmp.Message // nil unless an exchange is running
	wake       chan struct{}
	completed  chan struct{}
}

// conn is one peer's connect state, small for the same reason as the
// peer table's entries.
type conn struct {
	first, last uint32 // request numbers sent to this peer
	doneMs      int32  // -1 until a reply came
}

// Open opens the packet socket an agent needs on interface ifname of
// namespace ns ("" is the caller's).
func Open(ns, ifname string, rcvbuf int) (*packet.Socket, error) {
	if rcvbuf <= 0 {
		rcvbuf = 1 << 20
	}
	f, err := packet.EtherTypes(ethertype.DMP, ethertype.OpenMX)
	if err != nil {
		return nil, err
	}
	return packet.Open(ns, ifname, packet.Config{Filter: f, IgnoreOutgoing: true, RcvBuf: rcvbuf, Timestamps: true})
}

// New makes an agent on an open socket (from Open); Run closes it.
func New(sock *packet.Socket, o Options) *Agent {
	o = o.Defaults()
	if o.Iface == "" {
		o.Iface = sock.Ifname()
	}
	return &Agent{
		o: o, sock: sock,
		conns:     map[ether.MAC]conn{},
		seq:       rand.Uint32(),
		wake:      make(chan struct{}, 1),
		completed: make(chan struct{}),
		res:       Result{Name: o.Name, NetNS: sock.NetNS(), Iface: o.Iface, PeerMACFrom: string(o.PeerMACFrom)},
	}
}

// Completed is closed once everything asked for is done (see
// Options.ExitWhenComplete).
func (a *Agent) Completed() <-chan struct{} { return a.completed }

func (a *Agent) since(t time.Time) time.Duration { return t.Sub(a.epoch) }

// event logs a step; a.mu held.
func (a *Agent) event(now time.Time, kind, detail string) {
	if len(a.res.Events) < maxEvents {
		a.res.Events = append(a.res.Events, Event{Ms: ms(a.since(now)), Kind: kind, Detail: detail})
	}
}

func (a *Agent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *Agent) jitter() time.Duration {
	if a.o.Jitter <= 0 {
		return 0
	}
	return rand.N(a.o.Jitter)
}

// Run runs the agent until ctx ends (or, with ExitWhenComplete, until
// complete) and returns what it did. The error is DMP's failure or the
// socket's; the result is returned either way.
func (a *Agent) Run(ctx context.Context) (*Result, error) {
	start := time.Now()
	a.epoch = a.o.Epoch
	if a.epoch.IsZero() {
		a.epoch = start
	}
	defer a.sock.Close()
	m, err := a.sock.MAC()
	if err != nil {
		return a.finish(start, err)
	}
	mac := ether.MAC(m)
	a.mu.Lock()
	a.mac, a.payloadMAC = mac, mac
	a.res.MACBefore = mac.String()
	a.table = omx.NewPeerTable(a.epoch, a.o.MaxPeers)
	a.event(start, "start", mac.String())
	a.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	recvErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		recvErr <- a.receive()
	}()
	defer func() {
		a.sock.Close()
		wg.Wait()
	}()

	var dmpDone chan error
	if a.o.DMP {
		a.mu.Lock()
		a.dmpc = make(chan dmp.Message, 4)
		a.mu.Unlock()
		dmpDone = make(chan error, 1)
		go func() { dmpDone <- a.runDMP(ctx) }()
	}
	if a.o.Announce && (!a.o.DMP || a.o.AnnounceBeforeDMP) {
		a.startAnnouncing(start)
	}
	if a.o.Connect {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.connectLoop(ctx)
		}()
	}
	a.checkComplete(start)

	completed := a.completed
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	nextPoll := start.Add(a.o.MACPoll)
	for {
		now := time.Now()
		a.mu.Lock()
		if a.ann != nil && a.ann.Due(now) {
			frame := a.announcement()
			a.ann.Sent(now)
			a.mu.Unlock()
			a.send(frame)
			continue
		}
		next := now.Add(time.Hour)
		if a.ann != nil {
			next = a.ann.Next()
		}
		a.mu.Unlock()
		if a.o.MACPoll > 0 {
			if !now.Before(nextPoll) {
				a.pollMAC(now)
				nextPoll = now.Add(a.o.MACPoll)
			}
			if nextPoll.Before(next) {
				next = nextPoll
			}
		}
		timer.Reset(next.Sub(now))
		select {
		case <-ctx.Done():
			return a.finish(start, nil)
		case err := <-recvErr:
			return a.finish(start, fmt.Errorf("receive: %w", err))
		case err := <-dmpDone:
			if err != nil {
				return a.finish(start, err)
			}
			if a.o.Announce && !a.o.AnnounceBeforeDMP {
				a.startAnnouncing(time.Now())
			}
			if a.checkComplete(time.Now()) && !a.o.Announce && !a.o.Connect {
				return a.finish(start, nil)
			}
		case <-completed:
			if a.o.ExitWhenComplete {
				return a.finish(start, nil)
			}
			completed = nil // closed: stop selecting it
		case <-a.wake:
		case <-timer.C:
		}
	}
}

// send transmits a frame, counting refusals (a full qdisc, a downed link)
// rather than stopping: the protocols here all retry.
func (a *Agent) send(frame []byte) {
	if err := a.sock.Send(frame); err != nil {
		a.mu.Lock()
		a.res.SendErrors++
		a.mu.Unlock()
	}
}

func (a *Agent) runDMP(ctx context.Context) error {
	if a.o.DMPDelay > 0 {
		select {
		case <-time.After(a.o.DMPDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	a.mu.Lock()
	mac, replies := a.mac, a.dmpc
	a.event(time.Now(), "dmp_request", mac.String())
	a.mu.Unlock()
	x, err := dmp.Run(ctx, mac, func(b []byte) error { return a.sock.Send(b) }, replies, a.o.DMPBackoff)
	now := time.Now()
	a.mu.Lock()
	a.dmpc = nil
	a.res.DMPAttempts = x.Attempts
	a.mu.Unlock()
	if err != nil {
		a.mu.Lock()
		a.res.DMPError = err.Error()
		a.event(now, "dmp_failed", err.Error())
		a.mu.Unlock()
		return fmt.Errorf("DMP on %s: %w", a.o.Iface, err)
	}
	if x.MAC != mac {
		if err := a.sock.SetMAC(x.MAC); err != nil {
			a.mu.Lock()
			a.res.DMPError = err.Error()
			a.mu.Unlock()
			return fmt.Errorf("DMP: adopt %s: %w", x.MAC, err)
		}
	}
	done := time.Now()
	a.mu.Lock()
	a.res.DMPMs, a.res.DMPRTTMs, a.res.DMPDoneMs = msp(x.Elapsed), msp(x.RTT), msp(a.since(done))
	a.dmpDone = true
	a.event(done, "dmp_done", x.MAC.String())
	a.addressChanged(done, x.MAC)
	a.mu.Unlock()
	return nil
}

// pollMAC notices address changes made by someone else.
func (a *Agent) pollMAC(now time.Time) {
	a.mu.Lock()
	gen := a.macGen
	a.mu.Unlock()
	m, err := a.sock.MAC()
	if err != nil {
		return
	}
	mac := ether.MAC(m)
	a.mu.Lock()
	// A change the agent made itself (DMP) between the read and here
	// makes what was read stale: adopting it would undo the change (3 of
	// 1,056 hosts booting at once kept their original MAC so).
	if a.macGen == gen {
		a.addressChanged(now, mac)
	}
	a.mu.Unlock()
	a.poke()
}

// addressChanged adopts the interface's new address; a.mu held.
func (a *Agent) addressChanged(now time.Time, mac ether.MAC) {
	if mac == a.mac {
		return
	}
	a.event(now, "mac_changed", a.mac.String()+" -> "+mac.String())
	a.mac = mac
	a.macGen++
	if a.ann == nil {
		a.payloadMAC = mac // not announced yet: nothing stale
		return
	}
	if a.o.OnAddressChange == addressing.ChangeNewRound {
		a.payloadMAC = mac
		a.ann.Serial = newSerial(a.ann.Serial)
		a.ann.NewRound(now.Add(a.jitter()))
		a.event(now, "round", "address change")
	}
	a.poke()
}

func newSerial(old uint32) uint32 {
	for {
		if s := rand.Uint32(); s != old && s != 0 {
			return s
		}
	}
}

func (a *Agent) startAnnouncing(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ann != nil {
		return
	}
	a.payloadMAC = a.mac
	a.ann = omx.NewAnnouncer(a.o.Schedule, newSerial(0))
	a.ann.NewRound(now.Add(a.jitter()))
	a.event(now, "announce_start", a.mac.String())
	a.poke()
}

// announcement builds the next announcement; a.mu held.
func (a *Agent) announcement() []byte {
	return omx.Announcement{
		Header:    ether.Header{Dst: ether.Broadcast, Src: a.mac},
		PeerIndex: a.o.PeerIndex,
		NIC:       a.payloadMAC,
		Serial:    a.ann.Serial,
	}.Marshal()
}

// receive handles frames until the socket closes.
func (a *Agent) receive() error {
	buf, oob := make([]byte, recvBuf), make([]byte, 64)
	for {
		n, at, err := a.sock.RecvStamped(buf, oob)
		if err != nil {
			if a.sock.Closed() {
				return nil
			}
			// E.g. ENETDOWN once when the link goes down: the socket
			// stays usable, so count it and carry on.
			a.mu.Lock()
			a.res.RecvErrors++
			a.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if reply := a.handle(buf[:n], at); reply != nil {
			a.send(reply)
		}
	}
}

// handle processes one received frame and returns a frame to send back,
// if any. Nothing in a frame can make it fail: what it cannot use is
// counted and dropped.
func (a *Agent) handle(frame []byte, now time.Time) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, err := ether.ParseHeader(frame)
	if err != nil {
		a.res.Drops.Malformed++
		return nil
	}
	switch h.EtherType {
	case ethertype.DMP:
		m, err := dmp.Parse(frame)
		if err != nil {
			a.res.Drops.Malformed++
			return nil
		}
		a.res.Received.DMP++
		m.At = now
		if a.dmpc != nil {
			select {
			case a.dmpc <- m:
			default:
			}
		}
		return nil
	case ethertype.OpenMX:
		t, err := omx.Type(frame)
		if err != nil {
			a.res.Drops.Malformed++
			return nil
		}
		switch t {
		case omx.TypeRaw:
			an, err := omx.ParseAnnouncement(frame)
			if err != nil {
				a.res.Drops.Malformed++
				return nil
			}
			a.heard(an, now)
			return nil
		case omx.TypeConnectRequest, omx.TypeConnectReply:
			c, err := omx.ParseConnect(frame)
			if err != nil {
				a.res.Drops.Malformed++
				return nil
			}
			if c.Dst != a.mac {
				// Unicast for another address: a NIC would have
				// filtered it, a veth does not.
				a.res.Drops.OtherHost++
				return nil
			}
			return a.connectFrame(c, now)
		}
	}
	a.res.Drops.Foreign++
	return nil
}

// heard records an announcement; a.mu held.
func (a *Agent) heard(an omx.Announcement, now time.Time) {
	if an.Src == a.mac || an.NIC == a.payloadMAC {
		a.res.Received.Self++
		return
	}
	if !a.o.Announce && !a.o.Connect {
		return
	}
	a.res.Received.Announcements++
	mac := an.NIC
	if a.o.PeerMACFrom == addressing.FromHeader {
		mac = an.Src
	}
	if !mac.IsUnicast() {
		a.res.Drops.Malformed++
		return
	}
	change := a.table.Observe(an.Src, mac, an.Serial, an.PeerIndex, now)
	switch change {
	case omx.Refused:
		a.res.Drops.PeerTableFull++
		return
	case omx.Conflict:
		a.res.Drops.PeerConflict++
		return
	case omx.Known:
		return
	}
	if a.ann != nil && !a.o.QuietOnNewPeer && a.ann.Heard(change, now.Add(a.jitter())) {
		a.event(now, "round", change.String()+" "+mac.String())
		a.poke()
	}
	if a.o.ExpectPeers > 0 && a.res.PeersFullMs == nil && a.table.Len() >= a.o.ExpectPeers {
		a.res.PeersFullMs = msp(a.since(now))
		a.event(now, "peers_full", "")
		a.checkCompleteLocked(now)
	}
}

// connectFrame answers a request or records a reply; a.mu held. Either
// is dropped if its source is not in the peer table (DROP_BAD_PEER_ADDR),
// which is what makes a stale or unrewritten table fail.
func (a *Agent) connectFrame(c omx.Connect, now time.Time) []byte {
	if c.Reply {
		a.res.Received.ConnectReplies++
	} else {
		a.res.Received.ConnectRequests++
	}
	if !a.table.Has(c.Src) {
		a.res.Drops.BadPeerAddr++
		return nil
	}
	// Open-MX ties a connection to the peer's index and session; here a
	// request or reply must carry the index and serial its source
	// announced, so one sent in another host's name (a request forged so
	// that the reply goes to a third host, or a reply reflected from
	// elsewhere) is dropped rather than answered or counted.
	if !a.table.Matches(c.Src, c.PeerIndex, c.Serial) {
		a.res.Drops.PeerMismatch++
		return nil
	}
	if !c.Reply {
		a.res.Connect.Served++
		// Addressed to the requester's MAC as this host's table has it
		// (the lookup above found it under the frame's source).
		return omx.Connect{Header: ether.Header{Dst: c.Src, Src: a.mac}, Reply: true, PeerIndex: a.o.PeerIndex, Seq: c.Seq, Serial: a.serial()}.Marshal()
	}
	st, ok := a.conns[c.Src]
	if !ok || c.Seq-st.first >= st.last+1-st.first {
		a.res.Drops.Unexpected++
		return nil
	}
	if st.doneMs >= 0 {
		return nil
	}
	st.doneMs = int32(a.since(now).Milliseconds())
	a.conns[c.Src] = st
	a.res.Connect.Succeeded++
	t := msp(a.since(now))
	if a.res.Connect.FirstMs == nil {
		a.res.Connect.FirstMs = t
	}
	a.res.Connect.LastMs = t
	if a.o.RecordConnects {
		a.res.Connect.Peers = append(a.res.Connect.Peers, ConnectedAt{MAC: c.Src.String(), Ms: *t})
	}
	if want := a.connectTarget(); want > 0 && a.res.Connect.AllMs == nil && a.res.Connect.Succeeded >= want {
		a.res.Connect.AllMs = t
		a.event(now, "connect_all", "")
		a.checkCompleteLocked(now)
	}
	return nil
}

func (a *Agent) serial() uint32 {
	if a.ann == nil {
		return 0
	}
	return a.ann.Serial
}

func (a *Agent) connectTarget() int {
	want := a.o.ExpectPeers
	if a.o.ConnectLimit > 0 && (want == 0 || a.o.ConnectLimit < want) {
		want = a.o.ConnectLimit
	}
	return want
}

// connectLoop runs a connect pass every ConnectInterval.
func (a *Agent) connectLoop(ctx context.Context) {
	if a.o.ConnectAfter > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.o.ConnectAfter):
		}
	}
	t := time.NewTicker(a.o.ConnectInterval)
	defer t.Stop()
	for {
		a.connectPass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// connectPass sends one request to each unconnected peer (within the
// limit), from the interface's current address.
func (a *Agent) connectPass(ctx context.Context) {
	a.mu.Lock()
	var todo []ether.MAC
	for _, mac := range a.table.MACs() {
		st, ok := a.conns[mac]
		if ok && st.doneMs >= 0 {
			continue
		}
		if !ok && a.o.ConnectLimit > 0 && len(a.conns) >= a.o.ConnectLimit {
			continue
		}
		todo = append(todo, mac)
		if !ok {
			a.conns[mac] = conn{first: a.seq + 1, last: a.seq, doneMs: -1}
			a.res.Connect.Attempted++
		}
	}
	a.mu.Unlock()
	for i, mac := range todo {
		if ctx.Err() != nil {
			return
		}
		if i > 0 && a.o.ConnectGap > 0 {
			time.Sleep(a.o.ConnectGap)
		}
		a.mu.Lock()
		a.seq++
		st := a.conns[mac]
		st.last = a.seq
		a.conns[mac] = st
		a.res.Connect.Requests++
		frame := omx.Connect{Header: ether.Header{Dst: mac, Src: a.mac}, PeerIndex: a.o.PeerIndex, Seq: a.seq, Serial: a.serial()}.Marshal()
		a.mu.Unlock()
		a.send(frame)
	}
}

func (a *Agent) checkComplete(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checkCompleteLocked(now)
}

// checkCompleteLocked closes Completed once DMP, the peer table and the
// connections are done, as far as each was asked for; a.mu held.
func (a *Agent) checkCompleteLocked(now time.Time) bool {
	if a.complete {
		return true
	}
	switch {
	case a.o.DMP && !a.dmpDone,
		a.o.Announce && (a.o.ExpectPeers == 0 || a.res.PeersFullMs == nil),
		a.o.Connect && (a.connectTarget() == 0 || a.res.Connect.AllMs == nil):
		return false
	}
	a.complete = true
	a.res.Complete = true
	a.event(now, "complete", "")
	close(a.completed)
	return true
}

func (a *Agent) snapshotLocked(now time.Time) Result {
	r := a.res
	r.Events = append([]Event(nil), a.res.Events...)
	r.MACAfter = a.mac.String()
	if a.table != nil {
		r.Peers = a.table.Len()
		if a.o.RecordPeers {
			r.PeerTable = a.table.Peers()
		}
	}
	if a.ann != nil {
		r.Serial = a.ann.Serial
		r.AnnouncementsSent = a.ann.Count
		r.Rounds = a.ann.Rounds
	}
	r.Connect.Failed = r.Connect.Attempted - r.Connect.Succeeded
	r.DurationMs = ms(a.since(now))
	return r
}

func (a *Agent) finish(start time.Time, err error) (*Result, error) {
	now := time.Now()
	if d, derr := a.sock.Drops(); derr == nil {
		a.mu.Lock()
		a.res.Drops.Socket += d
		a.mu.Unlock()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.epoch.IsZero() {
		a.epoch = start
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		a.res.Error = err.Error()
	} else {
		err = nil
	}
	r := a.snapshotLocked(now)
	return &r, err
}
