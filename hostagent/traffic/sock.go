package traffic

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel"
	pat "github.com/ethfab/ethfab/traffic"
)

// sock is one host's packet socket. It is non-blocking and wrapped in an
// os.File so the Go runtime's poller parks the receiving goroutine: a
// thousand hosts cost a thousand idle goroutines, not a thousand OS
// threads blocked in recvfrom.
type sock struct {
	fd   int
	file *os.File
	rc   syscall.RawConn
	mac  net.HardwareAddr // the interface's own address
}

// defaultRcvBuf is the receive buffer asked for each socket: room for ~2,000
// 1000-byte frames, so a sink goroutine that is not scheduled for a few
// milliseconds loses nothing.
const defaultRcvBuf = 4 << 20

func openSock(ns, iface string, rcvbuf int) (*sock, error) {
	var s *sock
	err := kernel.InNamespace(ns, func() error {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(htons(pat.EtherType)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		// Bound to the interface: write(2) without an address sends there,
		// and only this interface's frames of our EtherType are read.
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(pat.EtherType), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("bind to %s: %w", iface, err)
		}
		// A packet socket also sees the frames its host sends; the sink
		// must not count those.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			unix.Close(fd)
			return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
		}
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
		}
		// Arrival is timed by the kernel as the frame reaches the host's
		// interface, so a sink goroutine scheduled late (the machine busy
		// with the switches) does not add to the fabric's latency.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			unix.Close(fd)
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
		f := os.NewFile(uintptr(fd), "packet:"+ns+"/"+iface)
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			return fmt.Errorf("raw conn: %w", err)
		}
		s = &sock{fd: fd, file: f, rc: rc, mac: ifi.HardwareAddr}
		return nil
	})
	return s, err
}

// drops reads and resets the socket's PACKET_STATISTICS: frames the kernel
// dropped because the receive buffer was full.
func (s *sock) drops() uint64 {
	st, err := unix.GetsockoptTpacketStats(s.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0
	}
	return uint64(st.Drops)
}

// stopReading makes the receiving goroutine return; resume undoes it.
func (s *sock) stopReading()   { s.file.SetReadDeadline(time.Now()) }
func (s *sock) resumeReading() { s.file.SetReadDeadline(time.Time{}) }

func (s *sock) close() error { return s.file.Close() }

func htons(v uint16) uint16 { return v<<8 | v>>8 }

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
