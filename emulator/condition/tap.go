package condition

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel"
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

	// The open socket, under the switch's pmu; nil while closed.
	f  *os.File
	rc syscall.RawConn
}

const tapSnap = traffic.HeaderLen // the EFTR header is all a tap reads

// open creates the tap's socket, filtered and bound to every frame of its
// interface.
func (t *tap) open() error {
	fd := -1
	mk := func() (err error) {
		// Protocol 0: nothing is received until bind, after the filter.
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		return err
	}
	if err := kernel.InNamespace(t.ns, mk); err != nil {
		return fmt.Errorf("tap on %s in netns %s: %w", t.ifname, t.ns, err)
	}
	fail := func(what string, err error) error {
		unix.Close(fd)
		return fmt.Errorf("tap on %s in netns %s: %s: %w", t.ifname, t.ns, what, err)
	}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, t.program()); err != nil {
		return fail("attach filter", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail("timestamps", err)
	}
	ifr, err := unix.NewIfreq(t.ifname)
	if err != nil {
		return fail("interface name", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return fail("interface index", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: int(ifr.Uint32())}); err != nil {
		return fail("bind", err)
	}
	f := os.NewFile(uintptr(fd), "tap:"+t.ns+":"+t.ifname)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return fmt.Errorf("tap on %s in netns %s: %w", t.ifname, t.ns, err)
	}
	t.f, t.rc = f, rc
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Classic BPF ancillary load of the packet type (linux/filter.h).
const (
	skfAdOff     = 0xfffff000 // SKF_AD_OFF, -0x1000
	skfAdPktType = 4
)

// program is the tap's filter: frames the port transmits
// (PACKET_OUTGOING), or with in those it receives, of EtherType 0x88B6
// with the EFTR magic and, when srcMask is set, a source under srcVal, cut
// to their header.
func (t *tap) program() *unix.SockFprog {
	const (
		ldw = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		ldh = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
		and = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	)
	dir := unix.SockFilter{Code: jeq, K: unix.PACKET_OUTGOING, Jf: 10}
	if t.in {
		dir.Jt, dir.Jf = 10, 0
	}
	prog := []unix.SockFilter{
		{Code: ldw, K: skfAdOff + skfAdPktType},
		dir,
		{Code: ldh, K: 12},
		{Code: jeq, K: traffic.EtherType, Jf: 8},
		{Code: ldw, K: 14},
		{Code: jeq, K: traffic.Magic, Jf: 6},
		// Source MAC bytes 6..9 and 10..11 under the prefix (a zero mask
		// passes everything).
		{Code: ldw, K: 6},
		{Code: and, K: uint32(t.srcMask >> 16)},
		{Code: jeq, K: uint32(t.srcVal>>16) & uint32(t.srcMask>>16), Jf: 3},
		{Code: ldh, K: 10},
		{Code: and, K: uint32(t.srcMask & 0xffff)},
		{Code: jeq, K: uint32(t.srcVal & t.srcMask & 0xffff), Jt: 1},
		{Code: ret, K: 0}, // 12: reject
		{Code: ret, K: tapSnap},
	}
	return &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
}

// read returns the next frame's header bytes and the kernel's time of its
// transmission (the read's time if the kernel gave none), from rc: the
// socket open when the reader started.
func read(rc syscall.RawConn, buf, oob []byte) (int, time.Time, error) {
	var n, oobn int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, 0)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	ts := time.Now()
	if oobn > 0 {
		if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, c := range cms {
				if c.Header.Level == unix.SOL_SOCKET && c.Header.Type == unix.SCM_TIMESTAMPNS && len(c.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
					sp := (*unix.Timespec)(unsafe.Pointer(&c.Data[0]))
					if sp.Sec != 0 || sp.Nsec != 0 {
						ts = time.Unix(sp.Unix())
					}
				}
			}
		}
	}
	return n, ts, nil
}
