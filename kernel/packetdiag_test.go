package kernel

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// packetSocket opens an AF_PACKET socket bound to ifname in ns.
func packetSocket(t *testing.T, ns, ifname string, rcvbuf int) (fd int, ino uint64) {
	t.Helper()
	err := InNamespace(ns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		if rcvbuf > 0 {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf); err != nil {
				return err
			}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		ino = st.Ino
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd, ino
}

// A socket that is never read overflows: sock_diag reports its drops on
// its interface, and none for a socket on another namespace's end.
func TestPacketSocketDrops(t *testing.T) {
	roottest.Need(t)
	a, b := pairOfNamespaces(t, "pdiag")
	_, ino := packetSocket(t, b, "eth0", 4096) // the kernel doubles it, then room for a few frames
	tx, txIno := packetSocket(t, a, "eth0", 0)
	var ifindex int
	InNamespace(b, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err == nil {
			ifindex = ifi.Index
		}
		return err
	})
	frame := make([]byte, 1000)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(frame[12:], ethertype.Traffic)
	const n = 200
	for i := 0; i < n; i++ {
		if _, err := unix.Write(tx, frame); err != nil {
			t.Fatal(err)
		}
	}
	find := func(ns string, ino uint64) PacketSocket {
		t.Helper()
		socks, err := PacketSockets(ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range socks {
			if s.Inode == ino {
				return s
			}
		}
		t.Fatalf("socket %d not listed in %s (%d sockets)", ino, ns, len(socks))
		return PacketSocket{}
	}
	// The frames reach the receiver in softirq, after the writes return:
	// wait for its drop counter, not for a time.
	rx := find(b, ino)
	for deadline := time.Now().Add(5 * time.Second); rx.Drops < n/2 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		rx = find(b, ino)
	}
	if rx.Ifindex != ifindex {
		t.Errorf("receiver bound to ifindex %d, sock_diag says %d", ifindex, rx.Ifindex)
	}
	if rx.Drops < n/2 || rx.Drops >= n {
		t.Errorf("receiver with a tiny buffer dropped %d of %d frames", rx.Drops, n)
	}
	if s := find(a, txIno); s.Drops != 0 {
		t.Errorf("sender's socket reports %d drops", s.Drops)
	}
}

// The sock_diag reply parser takes any bytes without panicking and reads
// the inode from the header it was given.
func FuzzParsePacketDiag(f *testing.F) {
	msg := diagMsg()
	f.Add(msg)
	f.Add([]byte{})
	f.Add(msg[:packetDiagMsgLen+3])
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := parsePacketDiag(b)
		if err != nil {
			return
		}
		if want := uint64(binary.NativeEndian.Uint32(b[4:8])); ps.Inode != want {
			t.Fatalf("inode %d, header says %d", ps.Inode, want)
		}
	})
}

func TestParsePacketDiag(t *testing.T) {
	msg := diagMsg()
	ps, err := parsePacketDiag(msg)
	if err != nil || ps != (PacketSocket{Inode: 4242, Ifindex: 7, Drops: 99}) {
		t.Fatalf("%+v, %v", ps, err)
	}
	if _, err := parsePacketDiag(msg[:10]); err == nil {
		t.Fatal("a short message parsed")
	}
}

// diagMsg is a packet_diag_msg for inode 4242 on ifindex 7 with 99 drops.
func diagMsg() []byte {
	msg := make([]byte, packetDiagMsgLen+8+36+4)
	binary.NativeEndian.PutUint32(msg[4:], 4242)
	binary.NativeEndian.PutUint16(msg[16:], 8) // PACKET_DIAG_INFO, 4-byte ifindex
	binary.NativeEndian.PutUint16(msg[18:], packetDiagInfo)
	binary.NativeEndian.PutUint32(msg[20:], 7)
	binary.NativeEndian.PutUint16(msg[24:], 4+36) // PACKET_DIAG_MEMINFO, 9 u32
	binary.NativeEndian.PutUint16(msg[26:], packetDiagMeminfo)
	binary.NativeEndian.PutUint32(msg[28+4*skMeminfoDrops:], 99)
	return msg
}
