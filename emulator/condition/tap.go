package condition

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/emulator/kernel"
	"github.com/ethfab/ethfab/emulator/traffic"
)

// tap sees the traffic frames one switch port transmits: a packet socket
// on the switch end of the link, which the kernel hands a copy of every
// frame as the port's shaper releases it onto the wire, with a kernel
// timestamp. It is what tells when a frame actually left on a path.
//
// It hears nothing until enabled: its filter rejects everything, so the
// kernel copies no frame while no reaction is being measured on its
// switch.
type tap struct {
	f    *os.File
	rc   syscall.RawConn
	fd   int
	port *port
	on   bool
	// src, when its mask is not zero, is the source-MAC prefix of the
	// only frames the tap needs (a direct topology's switch: its own
	// hosts), so transit traffic is never copied to user space.
	srcVal, srcMask uint64
}

const tapSnap = traffic.HeaderLen // the EFTR header is all a tap reads

func openTap(ns, ifname string, p *port) (*tap, error) {
	fd := -1
	mk := func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		return err
	}
	if err := kernel.InNamespace(ns, mk); err != nil {
		return nil, fmt.Errorf("tap on %s in netns %s: %w", ifname, ns, err)
	}
	fail := func(what string, err error) (*tap, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("tap on %s in netns %s: %s: %w", ifname, ns, what, err)
	}
	t := &tap{fd: fd, port: p}
	if err := t.filter(false); err != nil {
		return fail("attach filter", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail("timestamps", err)
	}
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return fail("interface name", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return fail("interface index", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: int(ifr.Uint32())}); err != nil {
		return fail("bind", err)
	}
	t.f = os.NewFile(uintptr(fd), "tap:"+ns+":"+ifname)
	if t.rc, err = t.f.SyscallConn(); err != nil {
		t.f.Close()
		return nil, fmt.Errorf("tap on %s in netns %s: %w", ifname, ns, err)
	}
	return t, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Classic BPF ancillary load of the packet type (linux/filter.h).
const (
	skfAdOff     = 0xfffff000 // SKF_AD_OFF, -0x1000
	skfAdPktType = 4
)

// filter attaches the tap's program: with on, frames the port transmits
// (PACKET_OUTGOING) of EtherType 0x88B6 with the EFTR magic, cut to their
// header; otherwise nothing.
func (t *tap) filter(on bool) error {
	const (
		ldw = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		ldh = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	prog := []unix.SockFilter{{Code: ret, K: 0}}
	if on {
		const and = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		prog = []unix.SockFilter{
			{Code: ldw, K: skfAdOff + skfAdPktType},
			{Code: jeq, K: unix.PACKET_OUTGOING, Jf: 10},
			{Code: ldh, K: 12},
			{Code: jeq, K: traffic.EtherType, Jf: 8},
			{Code: ldw, K: 14},
			{Code: jeq, K: traffic.Magic, Jf: 6},
			// Source MAC bytes 6..9 and 10..11 under the prefix (a zero
			// mask passes everything).
			{Code: ldw, K: 6},
			{Code: and, K: uint32(t.srcMask >> 16)},
			{Code: jeq, K: uint32(t.srcVal>>16) & uint32(t.srcMask>>16), Jf: 3},
			{Code: ldh, K: 10},
			{Code: and, K: uint32(t.srcMask & 0xffff)},
			{Code: jeq, K: uint32(t.srcVal & t.srcMask & 0xffff), Jt: 1},
			{Code: ret, K: 0}, // 12: reject
			{Code: ret, K: tapSnap},
		}
	}
	err := unix.SetsockoptSockFprog(t.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
	if err == nil {
		t.on = on
	}
	return err
}

// read returns the next frame's header bytes and the kernel's time of its
// transmission (the read's time if the kernel gave none).
func (t *tap) read(buf, oob []byte) (int, time.Time, error) {
	var n, oobn int
	var rerr error
	err := t.rc.Read(func(fd uintptr) bool {
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

func (t *tap) close() error { return t.f.Close() }
