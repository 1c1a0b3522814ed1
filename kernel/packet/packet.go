// Package packet is ethfab's one AF_PACKET socket: opened inside a host's
// or a switch's network namespace, bound to one interface, filtered by a
// classic BPF program assembled here (filter.go) and run as one shared
// eBPF program per distinct filter (shared.go), with the options the
// host agent, the traffic engine, `ethfab ping` and the condition
// monitor's taps need. Callers with a hot path (the traffic engine) take
// the descriptor and do their own per-frame syscalls; the rest use Send,
// Recv and RecvStamped.
//
// A socket is created inside its namespace and stays bound there, so one
// process holds sockets in a thousand namespaces; the address ioctls
// resolve names in the socket's namespace too, so reading and setting the
// MAC needs no namespace switch. The descriptor is non-blocking and
// wrapped in an os.File, so a blocked read parks a goroutine in Go's
// poller, not an OS thread: a thousand idle receivers cost a thousand
// goroutines, not a thousand threads in recvfrom.
package packet

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel"
)

// Htons puts a 16-bit value in network byte order, as the protocol
// arguments of socket(2) and sockaddr_ll want it, on any machine.
func Htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// Config is how a socket is opened.
type Config struct {
	// Protocol is the EtherType the socket is bound to; 0 binds to every
	// frame (ETH_P_ALL), which Filter should narrow.
	Protocol uint16
	// Filter, if not nil, is attached before the bind, so no frame it
	// rejects is ever queued (one built in filter.go).
	Filter []bpf.Instruction
	// IgnoreOutgoing keeps the socket's own transmissions out of its
	// queue (PACKET_IGNORE_OUTGOING, Linux 4.20+). Where the kernel lacks
	// it, OwnFrames reports true and Recv drops them by packet type.
	IgnoreOutgoing bool
	// Timestamps has the kernel stamp every frame as the interface sees
	// it (SO_TIMESTAMPNS), so a reader scheduled late does not add its
	// lateness to what it measures.
	Timestamps bool
	// RcvBuf > 0 sets the receive buffer in bytes, past net.core.rmem_max
	// where the process may (SO_RCVBUFFORCE), so bursts are queued rather
	// than dropped.
	RcvBuf int
}

// Socket is an open packet socket bound to one interface.
type Socket struct {
	f       *os.File
	rc      syscall.RawConn
	fd      int
	ifindex int
	ifname  string
	netns   string
	// own: the kernel hands the socket its own transmissions (no
	// PACKET_IGNORE_OUTGOING although asked), so Recv filters them.
	own    bool
	closed atomic.Bool
	ring   *Ring // a receive ring (Ring), unmapped on Close
	// release drops the socket's use of its shared filter program.
	release func()
}

// Open opens a packet socket on interface ifname of namespace ns ("" is
// the caller's namespace).
func Open(ns, ifname string, c Config) (*Socket, error) {
	var prog []unix.SockFilter
	if c.Filter != nil {
		var err error
		if prog, err = assemble(c.Filter); err != nil {
			return nil, fmt.Errorf("packet socket on %s in netns %q: %w", ifname, ns, err)
		}
	}
	fd, err := socketIn(ns)
	if err != nil {
		return nil, err
	}
	s := &Socket{fd: fd, ifname: ifname, netns: ns}
	if err := s.configure(c, prog); err != nil {
		unix.Close(fd)
		s.releaseFilter()
		return nil, fmt.Errorf("packet socket on %s in netns %q: %w", ifname, ns, err)
	}
	s.f = os.NewFile(uintptr(fd), "packet:"+ns+":"+ifname)
	if s.rc, err = s.f.SyscallConn(); err != nil {
		s.f.Close()
		s.releaseFilter()
		return nil, fmt.Errorf("packet socket on %s in netns %q: %w", ifname, ns, err)
	}
	return s, nil
}

// Sender is a packet socket that only sends: bound to an interface but to
// no EtherType, so it hears nothing, and kept out of Go's poller, so it
// has no waiter. That matters per frame: every frame a socket sent is
// charged to it until the frame is freed at its destination, and the
// free wakes whatever waits on the socket (sock_def_write_space). With
// one socket for sending and receiving, that was Go's epoll on the
// receive side: 1.8% of a DF(2,3,2) VAL run's CPU in the wakeup alone,
// and the poller woken for nothing.
type Sender struct {
	fd     int
	closed atomic.Bool
}

// OpenSender opens a send-only packet socket on interface ifname of
// namespace ns. A write(2) of a complete frame on FD sends it there.
func OpenSender(ns, ifname string) (*Sender, error) {
	fd, err := socketIn(ns)
	if err != nil {
		return nil, err
	}
	ifindex, err := ifIndex(fd, ifname)
	if err == nil {
		// Protocol 0 keeps the socket's own, 0: no frame is delivered to it.
		err = unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex})
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("send socket on %s in netns %q: %w", ifname, ns, err)
	}
	return &Sender{fd: fd}, nil
}

// FD is the descriptor, valid until Close; it is non-blocking.
func (s *Sender) FD() int { return s.fd }

// Send writes one complete frame; a full socket buffer is an error
// (EAGAIN), not a wait.
func (s *Sender) Send(frame []byte) error {
	_, err := unix.Write(s.fd, frame)
	return err
}

// SetSendBuffer sets the socket's send buffer to n bytes, past
// net.core.wmem_max where the process may (SO_SNDBUFFORCE).
func (s *Sender) SetSendBuffer(n int) error {
	if unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, n) == nil {
		return nil
	}
	return unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, n)
}

// SetQdiscBypass has the socket's frames skip the interface's qdisc
// (PACKET_QDISC_BYPASS): they go to the device at once, ahead of what
// its queue holds.
func (s *Sender) SetQdiscBypass() error {
	if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
	}
	return nil
}

// Close closes the socket.
func (s *Sender) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return unix.Close(s.fd)
}

// socketIn creates a non-blocking packet socket in namespace ns. With
// protocol 0 it hears nothing until it is bound, after the filter and
// options, so no foreign frame slips in first.
func socketIn(ns string) (int, error) {
	fd := -1
	err := kernel.InNamespace(ns, func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("packet socket in netns %q: %w", ns, err)
	}
	return fd, nil
}

// ifIndex resolves an interface name in the socket's namespace.
func ifIndex(fd int, ifname string) (int, error) {
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return 0, fmt.Errorf("interface name: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("interface index: %w", err)
	}
	return int(ifr.Uint32()), nil
}

// configure sets the options, then binds.
func (s *Socket) configure(c Config, prog []unix.SockFilter) error {
	fd := s.fd
	if prog != nil {
		// One eBPF program shared by every socket with this filter, not a
		// classic program per socket: see shared.go.
		release, err := attachShared(fd, c.Filter, prog)
		if err != nil {
			return err
		}
		s.release = release
	}
	if c.IgnoreOutgoing && unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1) != nil {
		s.own = true // kernels before 4.20
	}
	if c.Timestamps {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
	}
	if c.RcvBuf > 0 && unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, c.RcvBuf) != nil {
		// Without CAP_NET_ADMIN: as much as rmem_max allows.
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, c.RcvBuf)
	}
	ifindex, err := ifIndex(fd, s.ifname)
	if err != nil {
		return err
	}
	s.ifindex = ifindex
	proto := c.Protocol
	if proto == 0 {
		proto = unix.ETH_P_ALL
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: Htons(proto), Ifindex: s.ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

// assemble turns a filter into the kernel's form.
func assemble(f []bpf.Instruction) ([]unix.SockFilter, error) {
	raw, err := bpf.Assemble(f)
	if err != nil {
		return nil, fmt.Errorf("assemble filter: %w", err)
	}
	// BPF_MAXINSNS (linux/bpf_common.h): the kernel refuses longer.
	if len(raw) == 0 || len(raw) > 4096 {
		return nil, fmt.Errorf("assemble filter: %d instructions (1..4096)", len(raw))
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, nil
}

// Ifname is the interface the socket is bound to.
func (s *Socket) Ifname() string { return s.ifname }

// NetNS is the namespace the socket lives in ("" for the caller's).
func (s *Socket) NetNS() string { return s.netns }

// OwnFrames says whether the socket receives its own transmissions
// although IgnoreOutgoing asked otherwise (a kernel before 4.20).
func (s *Socket) OwnFrames() bool { return s.own }

// FD is the descriptor, for a caller's own per-frame syscalls (a write(2)
// of a frame sends it on the bound interface). It stays valid until Close.
func (s *Socket) FD() int { return s.fd }

// RawConn is the descriptor under Go's poller, for a caller's own
// receive loop.
func (s *Socket) RawConn() syscall.RawConn { return s.rc }

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
			if s.own {
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

// RecvStamped reads one frame into buf and the time the kernel stamped it
// (Config.Timestamps), or the time of the read if it gave none; oob is
// scratch for the control message (64 bytes suffice). Like Recv it
// blocks and skips the socket's own transmissions if it asked to
// (IgnoreOutgoing); a tap, which asks nothing, gets them.
func (s *Socket) RecvStamped(buf, oob []byte) (int, time.Time, error) {
	var n, oobn int
	for {
		var (
			rerr error
			from unix.Sockaddr
		)
		err := s.rc.Read(func(fd uintptr) bool {
			n, oobn, _, from, rerr = unix.Recvmsg(int(fd), buf, oob, 0)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			return 0, time.Time{}, err
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); !s.own || !ok || ll.Pkttype != unix.PACKET_OUTGOING {
			break
		}
	}
	ts := time.Now()
	if oobn == 0 {
		return n, ts, nil
	}
	cms, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return n, ts, nil
	}
	for _, c := range cms {
		if c.Header.Level == unix.SOL_SOCKET && c.Header.Type == unix.SCM_TIMESTAMPNS && len(c.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			sp := (*unix.Timespec)(unsafe.Pointer(&c.Data[0]))
			if sp.Sec != 0 || sp.Nsec != 0 {
				ts = time.Unix(sp.Unix())
			}
		}
	}
	return n, ts, nil
}

// SetReadDeadline bounds a blocked read (Recv, RecvStamped or one through
// RawConn); a past time makes a blocked read return at once.
func (s *Socket) SetReadDeadline(t time.Time) error { return s.f.SetReadDeadline(t) }

// Close closes the socket; a blocked read returns an error. It waits for
// an RCU grace period (~10 ms), so closing many sockets is worth doing
// in parallel.
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.f.Close()
	if s.ring != nil {
		s.ring.unmap()
	}
	s.releaseFilter()
	return err
}

func (s *Socket) releaseFilter() {
	if s.release != nil {
		s.release()
	}
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
func (s *Socket) MAC() ([6]byte, error) {
	var r ifreqHW
	if err := s.hwIoctl(unix.SIOCGIFHWADDR, &r); err != nil {
		return [6]byte{}, fmt.Errorf("netns %q %s: read MAC: %w", s.netns, s.ifname, err)
	}
	return [6]byte(r.Data[:6]), nil
}

// SetMAC changes the interface's address (the interface may stay up:
// veth and most NICs take a live change).
func (s *Socket) SetMAC(m [6]byte) error {
	r := ifreqHW{Family: unix.ARPHRD_ETHER}
	copy(r.Data[:], m[:])
	if err := s.hwIoctl(unix.SIOCSIFHWADDR, &r); err != nil {
		return fmt.Errorf("netns %q %s: set MAC %s: %w", s.netns, s.ifname, net.HardwareAddr(m[:]), err)
	}
	return nil
}

// Drops returns how many frames the kernel dropped for want of receive
// buffer since the previous call (PACKET_STATISTICS, reset by reading).
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

// OpenEtherTypes opens the socket a protocol endpoint needs: the frames of
// the given EtherTypes that interface ifname of namespace ns receives
// (EtherTypes), not its own transmissions, with a receive buffer of rcvbuf
// bytes if rcvbuf > 0.
func OpenEtherTypes(ns, ifname string, rcvbuf int, types ...uint16) (*Socket, error) {
	f, err := EtherTypes(types...)
	if err != nil {
		return nil, fmt.Errorf("packet socket on %s in netns %q: %w", ifname, ns, err)
	}
	return Open(ns, ifname, Config{Filter: f, IgnoreOutgoing: true, RcvBuf: rcvbuf})
}
