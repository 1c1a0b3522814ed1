package traffic

import (
	"fmt"
	"net"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel/packet"
)

// sock is one host's packet socket (kernel/packet), bound to the traffic
// EtherType on the host's interface. The engine does its own per-frame
// syscalls on it: write(2) on fd, recvmsg(2) under rc (rxMsg), both kept
// here so the hot path reads no more than it did.
type sock struct {
	p   *packet.Socket
	fd  int
	rc  syscall.RawConn
	mac net.HardwareAddr // the interface's own address
}

// defaultRcvBuf is the receive buffer asked for each socket: room for ~2,000
// 1000-byte frames, so a sink goroutine that is not scheduled for a few
// milliseconds loses nothing.
const defaultRcvBuf = 4 << 20

func openSock(ns, iface string, rcvbuf int) (*sock, error) {
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
		RcvBuf:     rcvbuf,
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
	return &sock{p: p, fd: p.FD(), rc: p.RawConn(), mac: net.HardwareAddr(mac[:])}, nil
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

func (s *sock) close() error { return s.p.Close() }

// Clock: frames carry CLOCK_MONOTONIC nanoseconds, which every namespace
// shares. Reading it through the runtime's monotonic clock (vDSO, no
// syscall) from a base taken once keeps the per-frame cost to a few ns.
var (
	clockBase     = time.Now()
	clockBaseMono = func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			return 0
		}
		return ts.Nano()
	}()
)

func monoNow() int64 { return clockBaseMono + int64(time.Since(clockBase)) }

// rxMsg receives one frame and its kernel arrival time with no
// allocation: recvmsg(2) into a reused header.
type rxMsg struct {
	hdr unix.Msghdr
	iov unix.Iovec
	oob [64]byte
}

// recv reads a frame into buf; at is its arrival as CLOCK_MONOTONIC ns
// (the kernel stamps CLOCK_REALTIME, converted at the current offset), or
// the read's time when the kernel gave no stamp.
func (m *rxMsg) recv(fd int, buf []byte) (n int, at int64, err error) {
	m.iov.Base = &buf[0]
	m.iov.SetLen(len(buf))
	m.hdr.Iov, m.hdr.Iovlen = &m.iov, 1
	m.hdr.Control = &m.oob[0]
	m.hdr.SetControllen(len(m.oob))
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdr)), 0)
	if e != 0 {
		return 0, 0, e
	}
	now := time.Now()
	mono := clockBaseMono + int64(now.Sub(clockBase))
	if int(m.hdr.Controllen) >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&m.oob[0]))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.oob[unix.CmsgLen(0)]))
			if wall := ts.Nano(); wall > 0 {
				// Never later than now: a stamp is taken before the read.
				return int(r), min(mono, wall-(now.UnixNano()-mono)), nil
			}
		}
	}
	return int(r), mono, nil
}
