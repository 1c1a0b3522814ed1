package condition

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ethfab/ethfab/emulator/datapath"
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
// that CPU. Still, a socket tap opens when its monitor first runs and
// stays open until the monitor closes (Monitor.releaseTaps says why); the
// eBPF datapath's taps are flags, set only while queues are near XOFF
// (Monitor.Run).
type tap struct {
	ns, ifname string
	sw         *sw
	num        int // the switch port
	// in: the tap sees the frames the port receives, not those it sends
	// (an ingress port of sources the switch's conditions decide).
	in bool
	// qcn: a QCN-Switch congestion point's departure tap (qcn.go), not a
	// reaction probe's.
	qcn bool
	// keep: opened when the monitor first runs and kept open until it
	// closes, not with the queues' warmth: a cut link's departure tap on
	// the eBPF datapath, a socket among flags (Monitor.datapathTaps).
	// Setting up a socket's ring waits for an RCU grace period
	// (packet_set_ring's synchronize_net, 9-25 ms here); opened by the
	// first flip of its switch, under the monitor's lock, it stalled
	// every switch's polling and the pause relay for 35-150 ms at the
	// start of a point.
	keep bool
	// src, when its mask is not zero, is the source-MAC prefix of the
	// only frames the tap needs (a direct topology's switch: its own
	// hosts), so transit traffic is never copied to user space.
	srcVal, srcMask uint64
	retire          time.Duration // the ring's (tapRetire)

	// The open socket and its ring, under the switch's pmu; nil while
	// closed.
	s *packet.Socket
	r *packet.Ring

	// On the eBPF datapath a tap is no socket but a flag in the program's
	// taps map (datapath.SetTap), on ifindex: the port's own for an
	// arrival tap, the far end of its link for a departure tap (a frame
	// that reaches the far end's ingress has just left the port). The
	// program stamps and copies the header into one ring all taps share,
	// which Monitor.readTaps reads: no skb clone, no ring per tap. On
	// DF(2,3,2), adv+1 at 20 Mbit/s, load 0.5, the socket taps cost
	// conditional routing ~35% of the frames it could send.
	dp      *tapFlags
	ifindex uint32
	on      bool // the flag is set, under pmu
}

// tapFlags sets the datapath's tap flags. Two taps can watch one ifindex
// (on a Clos, a spine's port from a leaf holds the spine's arrival tap
// and the leaf's departure tap): the flags are their union, and the
// source filter theirs when they agree, else none (frame filters by
// source again).
type tapFlags struct {
	h  *datapath.Handle
	mu sync.Mutex
	on map[uint32][]*tap
}

func (f *tapFlags) set(t *tap, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := slices.DeleteFunc(f.on[t.ifindex], func(x *tap) bool { return x == t })
	if on {
		list = append(list, t)
	}
	f.on[t.ifindex] = list
	var flags uint8
	var val, mask uint64
	for i, x := range list {
		flags |= x.flag()
		if i == 0 {
			val, mask = x.srcVal, x.srcMask
		} else if x.srcVal != val || x.srcMask != mask {
			val, mask = 0, 0
		}
	}
	return f.h.SetTap(t.ifindex, flags, val, mask)
}

// isOpen says whether the tap is on. Called with the switch's pmu held.
func (t *tap) isOpen() bool { return t.s != nil || t.on }

// flag is what the tap sets in the datapath.
func (t *tap) flag() uint8 {
	if t.in {
		return datapath.TapArrive
	}
	return datapath.TapDepart
}

// key names the tap's records in the datapath's ring.
func (t *tap) key() tapKey { return tapKey{t.ifindex, t.flag()} }

type tapKey struct {
	ifindex uint32
	flag    uint8
}

// bpfTapPeriod is how often the monitor reads the datapath's tap records
// (their stamps are the program's, so this delays a probe's answer, not
// what it measures).
const bpfTapPeriod = 2 * time.Millisecond

const tapSnap = traffic.HeaderLen // the EFTR header is all a tap reads

// open creates the tap's socket, filtered and bound to every frame of its
// interface: frames the port transmits (or with in, those it receives) of
// the traffic EtherType with the EFTR magic and, when srcMask is set, a
// source under srcVal, cut to their header, stamped by the kernel.
func (t *tap) open() error {
	if t.dp != nil {
		if err := t.dp.set(t, true); err != nil {
			return fmt.Errorf("tap on %s: %w", t.ifname, err)
		}
		t.on = true
		return nil
	}
	s, r, err := t.socket()
	if err != nil {
		return err
	}
	t.s, t.r = s, r
	return nil
}

// socket opens a socket tap's socket and ring; it changes nothing of t,
// so it can run outside the switch's pmu (Monitor.prepareTaps).
func (t *tap) socket() (*packet.Socket, *packet.Ring, error) {
	m := packet.Tap{Dir: packet.Sent, EtherType: ethertype.Traffic, Magic: traffic.Magic,
		SrcPrefix: t.srcVal, SrcMask: t.srcMask, Snap: tapSnap}
	if t.in {
		m.Dir = packet.Received
	}
	f, err := m.Filter()
	if err != nil {
		return nil, nil, fmt.Errorf("tap on %s in netns %s: %w", t.ifname, t.ns, err)
	}
	s, err := packet.Open(t.ns, t.ifname, packet.Config{Filter: f, Timestamps: true})
	if err != nil {
		return nil, nil, fmt.Errorf("tap: %w", err)
	}
	rc := tapRing
	rc.Retire = t.retire
	r, err := s.Ring(rc)
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("tap: %w", err)
	}
	return s, r, nil
}

// clear switches a datapath tap off. Called with the switch's pmu held.
func (t *tap) clear() error {
	if !t.on {
		return nil
	}
	t.on = false
	return t.dp.set(t, false)
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
