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
	r, err := s.Ring(tapRing)
	if err != nil {
		s.Close()
		return fmt.Errorf("tap: %w", err)
	}
	t.s, t.r = s, r
	return nil
}

// tapRing is a tap's receive ring: 4 blocks of 16 KiB hold about 450 cut
// frames, handed over at least every 2 ms. The reaction is timed by the
// kernel's stamps, so the wait in the ring delays when a probe is
// answered (well within ReactLimit), not what it measures; and a tap that
// reads a block at a time, not a frame at a time, costs a busy fabric a
// tenth of what it did.
var tapRing = packet.RingConfig{BlockSize: 16 << 10, Blocks: 4, Retire: 10 * time.Millisecond}
