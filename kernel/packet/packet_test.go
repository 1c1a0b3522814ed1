package packet

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
)

// pair makes two namespaces joined by a veth (eth0 in each), deleted when
// the test ends.
func pair(t *testing.T) (a, b string) {
	t.Helper()
	roottest.Need(t)
	p := fmt.Sprintf("efpkt-%d-", os.Getpid()%100000)
	a, b = p+"a", p+"b"
	created, err := kernel.CreateNamespaces([]string{a, b})
	t.Cleanup(func() {
		if err := kernel.DeleteNamespaces(created); err != nil {
			t.Errorf("delete namespaces: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	err = kernel.CreateVeths([]kernel.Veth{{
		A: kernel.VethEnd{NS: a, Name: "eth0", MAC: "02:00:00:00:00:0a"},
		B: kernel.VethEnd{NS: b, Name: "eth0", MAC: "02:00:00:00:00:0b"},
	}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func open(t *testing.T, ns string, c Config) *Socket {
	t.Helper()
	s, err := Open(ns, "eth0", c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// warmup marks (byte 18) the frames linkUp sends; readers skip them.
const warmup = 0xee

// recvWithin reads one frame that is not a warm-up, or fails after d.
func recvWithin(t *testing.T, s *Socket, buf []byte, d time.Duration) (int, error) {
	t.Helper()
	s.SetReadDeadline(time.Now().Add(d))
	defer s.SetReadDeadline(time.Time{})
	for {
		n, err := s.Recv(buf)
		if err != nil || n < 19 || buf[18] != warmup {
			return n, err
		}
	}
}

// linkUp sends warm-up frames of EtherType et from tx until rx hears one:
// a new veth drops what it is given until both ends are up.
func linkUp(t *testing.T, tx, rx *Socket, et uint16) {
	t.Helper()
	f := make([]byte, 60)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	binary.BigEndian.PutUint16(f[12:], et)
	f[18] = warmup
	buf := make([]byte, 128)
	for range 500 {
		if err := tx.Send(f); err != nil {
			t.Fatal(err)
		}
		rx.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		n, err := rx.Recv(buf)
		rx.SetReadDeadline(time.Time{})
		if err == nil && n >= 19 && buf[18] == warmup {
			return
		}
	}
	t.Fatal("the veth carried no frame in 5 s")
}

// Frames cross a veth between namespaces: the EtherType filter takes what
// it lists and no other, the sender does not hear itself, a tap on the
// sending end sees the frame leave with a kernel time, and the MAC is
// read and set through the socket.
func TestSocketAcrossNamespaces(t *testing.T) {
	a, b := pair(t)
	tx, err := OpenEtherTypes(a, "eth0", 0, ethertype.DMP)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	rx, err := OpenEtherTypes(b, "eth0", 1<<20, ethertype.DMP, ethertype.OpenMX)
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if tx.OwnFrames() {
		t.Log("kernel without PACKET_IGNORE_OUTGOING: Recv filters own frames")
	}
	const magic = 0x45465452
	tapF, err := Tap{Dir: Sent, EtherType: ethertype.Traffic, Magic: magic, Snap: 20}.Filter()
	if err != nil {
		t.Fatal(err)
	}
	tap := open(t, a, Config{Filter: tapF, Timestamps: true})
	linkUp(t, tx, rx, ethertype.DMP)

	src, err := tx.MAC()
	if err != nil {
		t.Fatal(err)
	}
	dst, err := rx.MAC()
	if err != nil {
		t.Fatal(err)
	}
	if src != [6]byte{2, 0, 0, 0, 0, 0x0a} || dst != [6]byte{2, 0, 0, 0, 0, 0x0b} {
		t.Fatalf("MACs %x %x, want the veth's", src, dst)
	}
	mk := func(et uint16, tag byte) []byte {
		f := make([]byte, 60)
		copy(f, dst[:])
		copy(f[6:], src[:])
		binary.BigEndian.PutUint16(f[12:], et)
		binary.BigEndian.PutUint32(f[14:], magic)
		f[18] = tag
		return f
	}
	// Sent in order on one veth, so what rx reads next is the next frame
	// the filter let through: the IPv4-typed and traffic frames are
	// skipped, the Open-MX one is not.
	before := time.Now()
	for _, f := range [][]byte{mk(0x0800, 1), mk(ethertype.Traffic, 2), mk(ethertype.OpenMX, 3), mk(ethertype.DMP, 4)} {
		if err := tx.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 128)
	for _, want := range []byte{3, 4} {
		n, err := recvWithin(t, rx, buf, 2*time.Second)
		if err != nil {
			t.Fatalf("frame %d: %v", want, err)
		}
		if n != 60 || buf[18] != want {
			t.Fatalf("read %d bytes, frame %d; want 60 bytes, frame %d", n, buf[18], want)
		}
	}
	// The sender's socket hears neither its own frames nor anything else.
	if n, err := recvWithin(t, tx, buf, 100*time.Millisecond); err == nil {
		t.Errorf("sender read a %d-byte frame %d: its own", n, buf[18])
	}

	// The tap saw the traffic frame leave, cut to Snap, stamped by the
	// kernel between the send and now.
	tap.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, at, err := tap.RecvStamped(buf, make([]byte, 64))
	if err != nil {
		t.Fatal(err)
	}
	if n != 20 || buf[18] != 2 {
		t.Errorf("tap read %d bytes of frame %d, want 20 of frame 2", n, buf[18])
	}
	if at.Before(before.Add(-time.Millisecond)) || at.After(time.Now()) {
		t.Errorf("tap stamp %v outside the send window [%v, now]", at, before)
	}

	// Setting the MAC through the socket changes the interface.
	m := [6]byte{2, 0, 0, 1, 0, 1}
	if err := tx.SetMAC(m); err != nil {
		t.Fatal(err)
	}
	if got, err := tx.MAC(); err != nil || got != m {
		t.Errorf("MAC after SetMAC %x: %x, %v", m, got, err)
	}
	if d, err := rx.Drops(); err != nil || d != 0 {
		t.Errorf("drops %d, %v; want 0", d, err)
	}
}

// A socket bound to one EtherType hears only it, with no filter: the
// traffic engine's.
func TestSocketBoundToProtocol(t *testing.T) {
	a, b := pair(t)
	tx := open(t, a, Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	rx := open(t, b, Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true, Timestamps: true, RcvBuf: 4 << 20})
	linkUp(t, tx, rx, ethertype.Traffic)
	for i, et := range []uint16{ethertype.DMP, ethertype.Traffic} {
		// Through the descriptor, as the engine sends.
		if _, err := unix.Write(tx.FD(), marked(et, byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	expectMarked(t, rx, 1)
}

// marked is a 60-byte broadcast frame of EtherType et, byte 18 its mark.
func marked(et uint16, mark byte) []byte {
	f := make([]byte, 60)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	binary.BigEndian.PutUint16(f[12:], et)
	f[18] = mark
	return f
}

// expectMarked reads the next frame of rx and checks it is the traffic
// EtherType's, marked mark.
func expectMarked(t *testing.T, rx *Socket, mark byte) {
	t.Helper()
	buf := make([]byte, 128)
	n, err := recvWithin(t, rx, buf, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n != 60 || binary.BigEndian.Uint16(buf[12:]) != ethertype.Traffic || buf[18] != mark {
		t.Errorf("read %d bytes of EtherType %#x, frame %d; want 60 of 0x88b6, frame %d", n, binary.BigEndian.Uint16(buf[12:]), buf[18], mark)
	}
}

// A send-only socket's frames arrive with the EtherType they carry, and
// it hears nothing: neither its own frames nor the ones coming in.
func TestSenderSendsAndHearsNothing(t *testing.T) {
	a, b := pair(t)
	tx, err := OpenSender(a, "eth0")
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	back := open(t, b, Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	rx := open(t, b, Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	local := open(t, a, Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	// Both directions: each end's qdisc is activated when the kernel's
	// link watch sees its carrier, which can be a second after the other
	// end's; until then the end drops what it is given, and a write
	// still succeeds.
	linkUp(t, back, local, ethertype.Traffic)
	linkUp(t, local, back, ethertype.Traffic)
	if _, err := unix.Write(tx.FD(), marked(ethertype.Traffic, 7)); err != nil {
		t.Fatal(err)
	}
	expectMarked(t, rx, 7)
	// Warm-up frames came in on a and one frame left: the sender read
	// none of them.
	buf := make([]byte, 128)
	if n, err := unix.Read(tx.FD(), buf); err != unix.EAGAIN {
		t.Errorf("send-only socket read %d bytes (%v); want nothing (EAGAIN)", n, err)
	}
	if err := tx.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := tx.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := OpenSender(a, "nosuch0"); err == nil {
		t.Error("no such interface: no error")
	}
	if _, err := OpenSender(a+"-none", "eth0"); err == nil {
		t.Error("no such namespace: no error")
	}
}

func TestOpenErrors(t *testing.T) {
	a, _ := pair(t)
	if _, err := Open(a, "nosuch0", Config{}); err == nil {
		t.Error("no such interface: no error")
	}
	if _, err := Open(a+"-none", "eth0", Config{}); err == nil {
		t.Error("no such namespace: no error")
	}
	if _, err := OpenEtherTypes(a, "eth0", 0); err == nil {
		t.Error("no EtherType: no error")
	}
}
