package ether

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel"
)

// Socket is a raw packet socket bound to one interface. It is created
// inside the interface's network namespace and stays bound to it, so one
// process can hold sockets in many namespaces; the address ioctls below
// resolve names in the socket's namespace too, so reading and setting the
// MAC needs no namespace switch either. Reads park the goroutine in Go's
// poller rather than an OS thread, which is what lets a thousand agents
// share one process.
type Socket struct {
	f       *os.File
	rc      syscall.RawConn
	fd      int
	ifindex int
	ifname  string
	netns   string
	// outgoing: the kernel also hands us our own transmitted frames
	// (no PACKET_IGNORE_OUTGOING), so Recv must filter them by pkttype.
	outgoing bool
	closed   atomic.Bool
}

// Open opens a packet socket on interface ifname of namespace ns ("" is
// the caller's namespace) that receives only the given EtherTypes.
// rcvbuf > 0 sets the receive buffer (bytes), so bursts of broadcasts
// from a thousand peers are queued rather than dropped.
func Open(ns, ifname string, rcvbuf int, etherTypes ...uint16) (*Socket, error) {
	if len(etherTypes) == 0 || len(etherTypes) > 8 {
		return nil, fmt.Errorf("open %s: need 1..8 EtherTypes", ifname)
	}
	fd := -1
	// Protocol 0: the socket hears nothing until the filter is attached
	// and it is bound, so no foreign frame slips in first.
	mk := func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		return err
	}
	var err error
	if ns == "" {
		err = mk()
	} else {
		err = kernel.InNamespace(ns, mk)
	}
	if err != nil {
		return nil, fmt.Errorf("packet socket in netns %q: %w", ns, err)
	}
	s := &Socket{fd: fd, ifname: ifname, netns: ns}
	fail := func(what string, err error) (*Socket, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("netns %q %s: %s: %w", ns, ifname, what, err)
	}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, filter(etherTypes)); err != nil {
		return fail("attach filter", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		s.outgoing = true // kernels before 4.20
	}
	if rcvbuf > 0 {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
		}
	}
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return fail("interface name", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return fail("interface index", err)
	}
	s.ifindex = int(ifr.Uint32())
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: s.ifindex}); err != nil {
		return fail("bind", err)
	}
	s.f = os.NewFile(uintptr(fd), "packet:"+ns+":"+ifname)
	if s.rc, err = s.f.SyscallConn(); err != nil {
		s.f.Close()
		return nil, fmt.Errorf("netns %q %s: %w", ns, ifname, err)
	}
	return s, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// filter is a classic BPF program accepting frames whose EtherType is one
// of types, so traffic of other kinds never wakes the agent.
func filter(types []uint16) *unix.SockFprog {
	const (
		ldh = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	n := len(types)
	prog := []unix.SockFilter{{Code: ldh, K: 12}}
	for i, t := range types {
		// On a match jump over the remaining tests and the reject.
		prog = append(prog, unix.SockFilter{Code: jeq, Jt: uint8(n - i), K: uint32(t)})
	}
	prog = append(prog, unix.SockFilter{Code: ret, K: 0}, unix.SockFilter{Code: ret, K: 0xffff})
	return &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
}

// Ifname is the interface the socket is bound to.
func (s *Socket) Ifname() string { return s.ifname }

// NetNS is the namespace the socket lives in ("" for the caller's).
func (s *Socket) NetNS() string { return s.netns }

// Send transmits one complete frame.
func (s *Socket) Send(frame []byte) error {
	var serr error
	err := s.rc.Write(func(fd uintptr) bool {
		_, serr = unix.Write(int(fd), frame)
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	return err
}

// Recv reads one frame into buf (longer frames are truncated), skipping
// the socket's own transmissions. It blocks until a frame, the read
// deadline or Close.
func (s *Socket) Recv(buf []byte) (int, error) {
	for {
		var (
			n    int
			own  bool
			rerr error
		)
		err := s.rc.Read(func(fd uintptr) bool {
			if s.outgoing {
				var from unix.Sockaddr
				n, from, rerr = unix.Recvfrom(int(fd), buf, 0)
				if ll, ok := from.(*unix.SockaddrLinklayer); ok {
					own = ll.Pkttype == unix.PACKET_OUTGOING
				}
			} else {
				n, rerr = unix.Read(int(fd), buf)
			}
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			return 0, err
		}
		if !own {
			return n, nil
		}
	}
}

// SetReadDeadline bounds a blocked Recv.
func (s *Socket) SetReadDeadline(t time.Time) error { return s.f.SetReadDeadline(t) }

// Close closes the socket; a blocked Recv returns an error.
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.f.Close()
}

// Closed says whether Close was called, so a reader can tell its error
// apart from a failing link.
func (s *Socket) Closed() bool { return s.closed.Load() }

// ifreqHW is struct ifreq with the ifr_hwaddr member of its union.
type ifreqHW struct {
	Name   [unix.IFNAMSIZ]byte
	Family uint16
	Data   [14]byte
	_      [8]byte
}

func (s *Socket) hwIoctl(req uint, r *ifreqHW) error {
	copy(r.Name[:unix.IFNAMSIZ-1], s.ifname)
	var errno syscall.Errno
	err := s.rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(unsafe.Pointer(r)))
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// MAC reads the interface's current address.
func (s *Socket) MAC() (MAC, error) {
	var r ifreqHW
	if err := s.hwIoctl(unix.SIOCGIFHWADDR, &r); err != nil {
		return MAC{}, fmt.Errorf("netns %q %s: read MAC: %w", s.netns, s.ifname, err)
	}
	return MAC(r.Data[:6]), nil
}

// SetMAC changes the interface's address (the interface may stay up:
// veth and most NICs take a live change).
func (s *Socket) SetMAC(m MAC) error {
	r := ifreqHW{Family: unix.ARPHRD_ETHER}
	copy(r.Data[:], m[:])
	if err := s.hwIoctl(unix.SIOCSIFHWADDR, &r); err != nil {
		return fmt.Errorf("netns %q %s: set MAC %s: %w", s.netns, s.ifname, m, err)
	}
	return nil
}

// Drops returns how many frames the kernel dropped for want of receive
// buffer since the previous call.
func (s *Socket) Drops() (uint32, error) {
	var st *unix.TpacketStats
	var gerr error
	err := s.rc.Control(func(fd uintptr) {
		st, gerr = unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS)
	})
	if err == nil {
		err = gerr
	}
	if err != nil {
		return 0, err
	}
	return st.Drops, nil
}
