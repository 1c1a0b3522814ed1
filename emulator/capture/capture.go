// Package capture records the frames on one interface of a running lab,
// named as a user names it (a host, a switch port, the link between two
// switches), as pcap or as one line per frame (`ethfab capture`).
//
// A packet socket in the interface's namespace sees the frames the
// interface receives and those it sends (after its tbf queue), each
// stamped by the kernel as it passed. On the eBPF datapath a switch port
// shows what arrives from its link before the switch program redirects
// it, and what leaves towards the link; on Open vSwitch the same.
//
// The pcap writer is hand-written: the format is a 24-byte header and a
// 16-byte header per frame (nanosecond pcap, LINKTYPE_ETHERNET), which
// no library makes shorter.
package capture

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel/packet"
)

// Point is where a capture listens: one interface in one namespace, and
// what the user named.
type Point struct {
	Name  string // as given: g0s0h0, g0s0:3, g0s0-g0s1
	NetNS string
	Iface string
}

// Resolve finds the interface name denotes in lab l: a host (its
// interface), SWITCH:PORT (the switch's end of that port's link), or A-B
// (switch A's end of its link to switch B; when they have several, the
// error lists their ports).
func Resolve(l *fabric.Lab, name string) (Point, error) {
	if h := l.Host(name); h != nil {
		return Point{Name: name, NetNS: h.NetNS, Iface: h.Iface}, nil
	}
	switches := map[string]bool{}
	for _, s := range l.Switches {
		switches[s.Name] = true
	}
	if sw, port, ok := strings.Cut(name, ":"); ok {
		if !switches[sw] {
			return Point{}, fmt.Errorf("%q: lab %s has no switch %s", name, l.Lab, sw)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 {
			return Point{}, fmt.Errorf("%q: port %q is not a port number", name, port)
		}
		for _, k := range l.Links {
			for _, e := range []fabric.LinkEnd{k.A, k.B} {
				if e.Node == sw && e.Port == n {
					return Point{Name: name, NetNS: e.NetNS, Iface: e.Iface}, nil
				}
			}
		}
		return Point{}, fmt.Errorf("%q: switch %s has no port %d", name, sw, n)
	}
	// A-B: switch names may hold a dash (a Clos's c0-1), so try every
	// split whose two sides are switches.
	for i := range len(name) {
		if name[i] != '-' || !switches[name[:i]] || !switches[name[i+1:]] {
			continue
		}
		a, b := name[:i], name[i+1:]
		var ends []fabric.LinkEnd
		for _, k := range l.Links {
			switch {
			case k.A.Node == a && k.B.Node == b:
				ends = append(ends, k.A)
			case k.B.Node == a && k.A.Node == b:
				ends = append(ends, k.B)
			}
		}
		switch len(ends) {
		case 0:
			return Point{}, fmt.Errorf("%q: no link joins switches %s and %s", name, a, b)
		case 1:
			return Point{Name: name, NetNS: ends[0].NetNS, Iface: ends[0].Iface}, nil
		}
		ports := make([]string, len(ends))
		for j, e := range ends {
			ports[j] = fmt.Sprintf("%s:%d", a, e.Port)
		}
		sort.Strings(ports)
		return Point{}, fmt.Errorf("%q: switches %s and %s have %d links: name one by its port (%s)", name, a, b, len(ends), strings.Join(ports, ", "))
	}
	return Point{}, fmt.Errorf("%q: not a host, SWITCH:PORT or SWITCH-SWITCH of lab %s", name, l.Lab)
}

// Writer takes the captured frames, each with the kernel's stamp and its
// length on the wire.
type Writer interface {
	Frame(at time.Time, frame []byte, wireLen int) error
}

// Pcap writes nanosecond pcap (magic a1b23c4d, LINKTYPE_ETHERNET) and
// flushes after every frame, so a reader at the other end of a pipe
// (wireshark -k -i -) sees each as it comes.
type Pcap struct {
	w *bufio.Writer
}

// snapLen is the capture's snapshot length: whole frames (the veths'
// MTU is far below it).
const snapLen = 65535

// NewPcap writes the file header to w.
func NewPcap(w io.Writer) (*Pcap, error) {
	p := &Pcap{w: bufio.NewWriter(w)}
	var h [24]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], 0xa1b23c4d) // nanosecond timestamps
	le.PutUint16(h[4:], 2)
	le.PutUint16(h[6:], 4)
	le.PutUint32(h[16:], snapLen)
	le.PutUint32(h[20:], 1) // LINKTYPE_ETHERNET
	if _, err := p.w.Write(h[:]); err != nil {
		return nil, err
	}
	return p, p.w.Flush()
}

// Frame writes one record.
func (p *Pcap) Frame(at time.Time, frame []byte, wireLen int) error {
	var h [16]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], uint32(at.Unix()))
	le.PutUint32(h[4:], uint32(at.Nanosecond()))
	le.PutUint32(h[8:], uint32(len(frame)))
	le.PutUint32(h[12:], uint32(wireLen))
	if _, err := p.w.Write(h[:]); err != nil {
		return err
	}
	if _, err := p.w.Write(frame); err != nil {
		return err
	}
	return p.w.Flush()
}

// Text writes one line per frame: the time, the addresses, what the
// EtherType carries, the length.
type Text struct {
	W io.Writer
}

// names are ethfab's EtherTypes, as a line shows them.
var names = map[uint16]string{
	ethertype.DMP: "dmp", ethertype.Traffic: "traffic", ethertype.OpenMX: "open-mx", ethertype.CNM: "cnm",
	0x0800: "ipv4", 0x0806: "arp", 0x86DD: "ipv6", 0x8100: "802.1q",
}

// Frame writes the frame's line.
func (t Text) Frame(at time.Time, frame []byte, wireLen int) error {
	if len(frame) < 14 {
		_, err := fmt.Fprintf(t.W, "%s runt frame, %d bytes\n", at.Format("15:04:05.000000000"), wireLen)
		return err
	}
	typ := binary.BigEndian.Uint16(frame[12:])
	name := names[typ]
	if name == "" {
		name = "ethertype"
	}
	_, err := fmt.Fprintf(t.W, "%s %s > %s %s (0x%04x) %d bytes\n", at.Format("15:04:05.000000000"),
		net.HardwareAddr(frame[6:12]), net.HardwareAddr(frame[0:6]), name, typ, wireLen)
	return err
}

// Session is an open capture: its socket queues the frames from Open on.
type Session struct {
	p Point
	s *packet.Socket
}

// Open starts capturing at p.
func Open(p Point) (*Session, error) {
	s, err := packet.Open(p.NetNS, p.Iface, packet.Config{Timestamps: true, RcvBuf: 8 << 20})
	if err != nil {
		return nil, fmt.Errorf("capture at %s: %w", p.Name, err)
	}
	return &Session{p: p, s: s}, nil
}

// Run writes the frames to w until ctx ends or, if count > 0, count
// frames, closes the capture, and returns how many it wrote.
func (c *Session) Run(ctx context.Context, count int, w Writer) (int, error) {
	stop := context.AfterFunc(ctx, func() { c.s.Close() })
	defer func() {
		stop()
		c.s.Close()
	}()
	buf, oob := make([]byte, snapLen), make([]byte, 64)
	n := 0
	for count <= 0 || n < count {
		k, at, err := c.s.RecvStamped(buf, oob)
		if err != nil {
			if c.s.Closed() {
				return n, nil // ctx ended
			}
			return n, fmt.Errorf("capture at %s: %w", c.p.Name, err)
		}
		if err := w.Frame(at, buf[:k], k); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
