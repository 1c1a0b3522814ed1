package traffic

import (
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel/packet"
	pat "github.com/ethfab/ethfab/traffic"
)

// sock is one host's two packet sockets (kernel/packet) on the host's
// interface: one bound to the traffic EtherType, whose receive ring the
// sink reads, and one the senders write frames on (packet.Sender says why
// they are two).
type sock struct {
	p    *packet.Socket
	tx   *packet.Sender
	ring *packet.Ring     // what the sink reads
	mac  net.HardwareAddr // the interface's own address
}

// sinkRing is each host's receive ring: 16 blocks of 32 KiB, each with
// room for ~225 frames' headers (a frame takes 144 bytes of a block:
// TPACKET_V3's header and padding, and the 52 bytes the filter keeps), so
// 3,600 frames, 2.9 s of a 20 Mbit/s host link's 1000-byte frames, wait
// for a sink scheduled late; 1,056 hosts hold 540 MB of rings. Retire is
// set per engine (sinkRetire).
var sinkRing = packet.RingConfig{BlockSize: 32 << 10, Blocks: 16}

// sinkRetire is how long a ring keeps a block that is not full. The kernel
// fires each ring's retire timer every period, traffic or not, and a timer
// interrupt is dear in this VM: 20 ms per 42 hosts is 2,100 a second, but
// per 1,056 hosts it would be 53,000, as many as DF(4,8,4) at 1 Mbit/s,
// load 0.4, sends frames. So the period grows with the hosts (0.2 ms
// each, 20 to 200 ms), keeping the timers near 5,000 a second at most, and
// a run reads a period longer than its drain (Run), so no frame that
// arrived within the drain is left in a block not yet handed over.
func sinkRetire(hosts int) time.Duration {
	return min(200*time.Millisecond, max(20*time.Millisecond, time.Duration(hosts)*200*time.Microsecond))
}

// sendBuffer is each host's send buffer. A frame stays charged to the
// socket that sent it until it is freed at its destination: veths hand
// the same buffer on through every switch, so the frames a host has in
// the fabric's queues count against it. With the default 208 KiB, a
// saturated fabric of 64 KB queues (DF(2,4,2), 2 Mbit/s, uniform load
// 0.8) refused 44% of the sends (EAGAIN) as if the host's own link were
// full; a real NIC frees a frame once it is on the wire. 8 MiB is a
// limit, not an allocation.
const sendBuffer = 8 << 20

func openSock(ns, iface string, retire time.Duration) (*sock, error) {
	p, err := packet.Open(ns, iface, packet.Config{
		// Bound to the interface and EtherType: write(2) without an
		// address sends there, and only this interface's frames of the
		// EtherType are read; the kernel's protocol demux needs no filter.
		Protocol: ethertype.Traffic,
		// A packet socket also sees the frames its host sends; the sink
		// must not count those.
		IgnoreOutgoing: true,
		// Arrival is timed by the kernel as the frame reaches the host's
		// interface, so a sink goroutine scheduled late (the machine busy
		// with the switches) does not add to the fabric's latency.
		Timestamps: true,
		// The sink reads the header and nothing after it: the ring holds
		// that much of each frame (a filter's return value is the
		// snap length), not the whole frame.
		Filter: []bpf.Instruction{bpf.RetConstant{Val: pat.HeaderLen}},
	})
	if err != nil {
		return nil, err
	}
	if p.OwnFrames() {
		// rxMsg does not filter by packet type: the per-frame cost stays
		// in the kernel or nowhere.
		p.Close()
		return nil, fmt.Errorf("%s in netns %s: PACKET_IGNORE_OUTGOING unsupported (Linux before 4.20)", iface, ns)
	}
	mac, err := p.MAC()
	if err != nil {
		p.Close()
		return nil, err
	}
	rc := sinkRing
	rc.Retire = retire
	r, err := p.Ring(rc)
	if err != nil {
		p.Close()
		return nil, err
	}
	tx, err := packet.OpenSender(ns, iface)
	if err == nil {
		err = tx.SetSendBuffer(sendBuffer)
		if err != nil {
			tx.Close()
		}
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return &sock{p: p, tx: tx, ring: r, mac: net.HardwareAddr(mac[:])}, nil
}

// drops reads and resets the socket's PACKET_STATISTICS: frames the kernel
// dropped because the receive buffer was full.
func (s *sock) drops() uint64 {
	d, err := s.p.Drops()
	if err != nil {
		return 0
	}
	return uint64(d)
}

// stopReading makes the receiving goroutine return; resume undoes it.
func (s *sock) stopReading()   { s.p.SetReadDeadline(time.Now()) }
func (s *sock) resumeReading() { s.p.SetReadDeadline(time.Time{}) }

func (s *sock) close() error { return errors.Join(s.tx.Close(), s.p.Close()) }

// Clock: frames carry CLOCK_MONOTONIC nanoseconds, which every namespace
// shares. Reading it through the runtime's monotonic clock (vDSO, no
// syscall) from a base taken once keeps the per-frame cost to a few ns.
// The base pairs a time.Now with the midpoint of the two clock_gettime
// calls around it, the closest of a few tries, so monoNow is within a
// microsecond or so of the kernel's own CLOCK_MONOTONIC, which stamps the
// frames' send times (stamp.go).
var clockBase, clockBaseMono = clockBases()

func clockBases() (time.Time, int64) {
	best := int64(math.MaxInt64)
	var bt time.Time
	var bm int64
	for range 8 {
		var a, b unix.Timespec
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &a) != nil {
			break
		}
		t := time.Now()
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &b) != nil {
			break
		}
		if d := b.Nano() - a.Nano(); d < best {
			best, bt, bm = d, t, a.Nano()+d/2
		}
	}
	if bt.IsZero() {
		return time.Now(), 0
	}
	return bt, bm
}

func monoNow() int64 { return clockBaseMono + int64(time.Since(clockBase)) }

// WallMinusMono is this machine's wall clock less its monotonic clock,
// now: two machines' offsets turn one's monotonic send times into the
// other's (Config.ClockShift).
func WallMinusMono() int64 { return time.Now().UnixNano() - monoNow() }

// MonoAt is wall-clock time t on CLOCK_MONOTONIC, the clock of Config's
// StartNs: a start agreed across machines in wall-clock time, each
// machine's engine on its own monotonic clock.
func MonoAt(t time.Time) int64 { return monoNow() + int64(time.Until(t)) }
