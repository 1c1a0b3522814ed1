package condition

import (
	"fmt"
	"time"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/traffic"
)

// tap sees the traffic frames one switch port transmits: a packet socket
// on the switch end of the link, which the kernel hands a copy of every
// frame as the port's shaper releases it onto the wire, with a kernel
// timestamp. It is what tells when a frame actually left on a path.
//
// A tap costs every frame its port sends an skb clone and a filter run,
// even when the filter rejects the frame, and the fabric under test needs
// that CPU. So the socket exists only while queues are near XOFF (see
// Monitor.Run): opening one is a few syscalls, while closing it waits for
// an RCU grace period and is done in the background. (Rebinding to another
// protocol would wait just the same, and protocol 0 keeps the old one.)
type tap struct {
	ns, ifname string
	sw         *sw
	num        int // the switch port
	// in: the tap sees the frames the port receives, not those it sends
	// (an ingress port of sources the switch's conditions decide).
	in bool
	// src, when its mask is not zero, is the source-MAC prefix of the
	// only frames the tap needs (a direct topology's switch: its own
	// hosts), so transit traffic is never copied to user space.
	srcVal, srcMask uint64
	retire          time.Duration // the ring's (tapRetire)

	// The open socket and its ring, under the switch's pmu; nil while
	// closed.
	s *packet.Socket
	r *packet.Ring
}

const tapSnap = traffic.HeaderLen // the EFTR header is all a tap reads

// open creates the tap's socket, filtered and bound to every frame of its
// interface: frames the port transmits (or with in, those it receives) of
// the traffic EtherType with the EFTR magic and, when srcMask is set, a
// source under srcVal, cut to their header, stamped by the kernel.
func (t *tap) open() error {
	m := packet.Tap{Dir: packet.Sent, EtherType: ethertype.Traffic, Magic: traffic.Magic,
		SrcPrefix: t.srcVal, SrcMask: t.srcMask, Snap: tapSnap}
	if t.in {
		m.Dir = packet.Received
	}
	f, err := m.Filter()
	if err != nil {
		return fmt.Errorf("tap on %s in netns %s: %w", t.ifname, t.ns, err)
	}
	s, err := packet.Open(t.ns, t.ifname, packet.Config{Filter: f, Timestamps: true})
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	rc := tapRing
	rc.Retire = t.retire
	r, err := s.Ring(rc)
	if err != nil {
		s.Close()
		return fmt.Errorf("tap: %w", err)
	}
	t.s, t.r = s, r
	return nil
}

// tapRing is a tap's receive ring: 4 blocks of 16 KiB hold about 450 cut
// frames. The reaction is timed by the kernel's stamps, so the wait in
// the ring delays when a probe is answered, not what it measures; and a
// tap that reads a block at a time, not a frame at a time, costs a busy
// fabric a tenth of what it did. Retire is set per monitor (tapRetire).
var tapRing = packet.RingConfig{BlockSize: 16 << 10, Blocks: 4}

// tapRetire is how long a tap's ring keeps a block that is not full. Each
// open tap's ring fires a timer every period, frames or not (a 2 ms period
// on DF(2,3,2)'s taps cost more in interrupts than the reads it saved), so
// the period grows with the taps: 0.1 ms each, 10 to 100 ms. A probe
// waits that much longer for its answer (await).
func tapRetire(taps int) time.Duration {
	return min(100*time.Millisecond, max(10*time.Millisecond, time.Duration(taps)*100*time.Microsecond))
}
