package packet

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/ethertype"
)

// frame builds an untagged Ethernet frame of n bytes (n >= 14) from src
// with the given EtherType; rest, if any, follows the header.
func frame(n int, src [6]byte, etherType uint16, rest ...byte) []byte {
	b := make([]byte, max(n, 14))
	copy(b, []byte{0x02, 0, 0, 0, 0, 0x99})
	copy(b[6:], src[:])
	binary.BigEndian.PutUint16(b[12:], etherType)
	copy(b[14:], rest)
	return b[:n]
}

// tagged puts an 802.1Q tag (VLAN 7) in front of f's EtherType.
func tagged(f []byte) []byte {
	t := append(append([]byte(nil), f[:12]...), 0x81, 0x00, 0x00, 0x07)
	return append(t, f[12:]...)
}

// run runs filter on f in x/net/bpf's VM, with pkttype standing in for the
// kernel's ancillary packet-type load (the VM implements no extension but
// the length): the one instruction is swapped for a constant load, so
// every skip stays as assembled. It returns the bytes the kernel would
// deliver, 0 for a rejected frame.
func run(t *testing.T, filter []bpf.Instruction, pkttype uint32, f []byte) int {
	t.Helper()
	prog := append([]bpf.Instruction(nil), filter...)
	for i, ins := range prog {
		if ext, ok := ins.(bpf.LoadExtension); ok && ext.Num == bpf.ExtType {
			prog[i] = bpf.LoadConstant{Dst: bpf.RegA, Val: pkttype}
		}
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	n, err := vm.Run(f)
	if err != nil {
		t.Fatal(err)
	}
	// The program returns a snap length; the kernel delivers no more than
	// the frame has (af_packet's packet_rcv).
	return min(n, len(f))
}

// assembled checks that the kernel would take the filter.
func assembled(t *testing.T, filter []bpf.Instruction) {
	t.Helper()
	if _, err := assemble(filter); err != nil {
		t.Fatal(err)
	}
}

var src = [6]byte{0x02, 0, 0, 0x01, 0x02, 0x03}

func TestEtherTypesFilter(t *testing.T) {
	f, err := EtherTypes(ethertype.DMP, ethertype.OpenMX)
	if err != nil {
		t.Fatal(err)
	}
	assembled(t, f)
	for _, c := range []struct {
		what  string
		frame []byte
		want  int
	}{
		{"DMP", frame(60, src, ethertype.DMP), 60},
		{"Open-MX", frame(60, src, ethertype.OpenMX), 60},
		{"a long frame, entire", frame(1500, src, ethertype.OpenMX), 1500},
		{"headers only", frame(14, src, ethertype.DMP), 14},
		{"ethfab traffic", frame(60, src, ethertype.Traffic), 0},
		{"IPv4", frame(60, src, 0x0800), 0},
		{"the EtherType cut", frame(13, src, ethertype.DMP), 0},
		{"DMP behind an in-frame VLAN tag", tagged(frame(60, src, ethertype.DMP)), 0},
	} {
		if got := run(t, f, unix.PACKET_HOST, c.frame); got != c.want {
			t.Errorf("%s: filter keeps %d bytes, want %d", c.what, got, c.want)
		}
	}

	// The accept is one jump away from the last test and 255 from the
	// first: 255 types fit, 256 do not.
	many := make([]uint16, 256)
	for i := range many {
		many[i] = uint16(0x9000 + i)
	}
	f, err = EtherTypes(many[:255]...)
	if err != nil {
		t.Fatal(err)
	}
	assembled(t, f)
	for _, et := range []uint16{0x9000, 0x90fe} {
		if run(t, f, unix.PACKET_HOST, frame(60, src, et)) != 60 {
			t.Errorf("EtherType %#x of 255: rejected", et)
		}
	}
	if run(t, f, unix.PACKET_HOST, frame(60, src, 0x90ff)) != 0 {
		t.Error("EtherType 0x90ff, not in the list: accepted")
	}
	if _, err := EtherTypes(many...); err == nil {
		t.Error("256 EtherTypes: no error, but the first jump cannot reach the accept")
	}
	if _, err := EtherTypes(); err == nil {
		t.Error("no EtherType: no error")
	}
}

func TestTapFilter(t *testing.T) {
	const magic = 0x45465452
	mag := binary.BigEndian.AppendUint32(nil, magic)
	in := [6]byte{0x02, 0, 0, 0x01, 0xff, 0xfe}  // under the prefix 02:00:00:01/32
	out := [6]byte{0x02, 0, 0, 0x02, 0x00, 0x01} // another switch's host
	tp := Tap{Dir: Sent, EtherType: ethertype.Traffic, Magic: magic,
		SrcPrefix: 0x020000010000, SrcMask: 0xffffffff0000, Snap: 40}
	f, err := tp.Filter()
	if err != nil {
		t.Fatal(err)
	}
	assembled(t, f)
	for _, c := range []struct {
		what    string
		pkttype uint32
		frame   []byte
		want    int
	}{
		{"sent, cut to Snap", unix.PACKET_OUTGOING, frame(1000, in, ethertype.Traffic, mag...), 40},
		{"sent, shorter than Snap", unix.PACKET_OUTGOING, frame(30, in, ethertype.Traffic, mag...), 30},
		{"magic only", unix.PACKET_OUTGOING, frame(18, in, ethertype.Traffic, mag...), 18},
		{"magic cut", unix.PACKET_OUTGOING, frame(17, in, ethertype.Traffic, mag...), 0},
		{"received", unix.PACKET_HOST, frame(1000, in, ethertype.Traffic, mag...), 0},
		{"received, to another host", unix.PACKET_OTHERHOST, frame(1000, in, ethertype.Traffic, mag...), 0},
		{"source outside the prefix", unix.PACKET_OUTGOING, frame(1000, out, ethertype.Traffic, mag...), 0},
		{"another source under the /32 prefix", unix.PACKET_OUTGOING, frame(1000, [6]byte{0x02, 0, 0, 0x01, 0x12, 0x34}, ethertype.Traffic, mag...), 40},
		{"another EtherType", unix.PACKET_OUTGOING, frame(1000, in, ethertype.DMP, mag...), 0},
		{"no magic (a ping)", unix.PACKET_OUTGOING, frame(1000, in, ethertype.Traffic, 0, 0, 0, 1), 0},
		{"behind an in-frame VLAN tag", unix.PACKET_OUTGOING, tagged(frame(1000, in, ethertype.Traffic, mag...)), 0},
		{"the EtherType cut", unix.PACKET_OUTGOING, frame(13, in, ethertype.Traffic), 0},
	} {
		if got := run(t, f, c.pkttype, c.frame); got != c.want {
			t.Errorf("sent tap, %s: filter keeps %d bytes, want %d", c.what, got, c.want)
		}
	}

	// A /44 prefix tests the low 16 bits too.
	tp.SrcPrefix, tp.SrcMask = 0x020000010010, 0xfffffffffff0
	f, err = tp.Filter()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src  [6]byte
		want int
	}{
		{[6]byte{0x02, 0, 0, 0x01, 0x00, 0x1f}, 40},
		{[6]byte{0x02, 0, 0, 0x01, 0x00, 0x20}, 0},
		{[6]byte{0x02, 0, 0, 0x01, 0x01, 0x10}, 0},
	} {
		if got := run(t, f, unix.PACKET_OUTGOING, frame(100, c.src, ethertype.Traffic, mag...)); got != c.want {
			t.Errorf("prefix 02:00:00:01:00:1x, source %x: filter keeps %d bytes, want %d", c.src, got, c.want)
		}
	}

	// Received, any source: everything but the port's own transmissions.
	tp = Tap{Dir: Received, EtherType: ethertype.Traffic, Magic: magic, Snap: 40}
	if f, err = tp.Filter(); err != nil {
		t.Fatal(err)
	}
	assembled(t, f)
	for pkttype, want := range map[uint32]int{
		unix.PACKET_HOST: 40, unix.PACKET_BROADCAST: 40, unix.PACKET_MULTICAST: 40,
		unix.PACKET_OTHERHOST: 40, unix.PACKET_OUTGOING: 0,
	} {
		for _, s := range [][6]byte{in, out, {}} {
			if got := run(t, f, pkttype, frame(100, s, ethertype.Traffic, mag...)); got != want {
				t.Errorf("received tap, packet type %d, source %x: filter keeps %d bytes, want %d", pkttype, s, got, want)
			}
		}
	}
	if got := run(t, f, unix.PACKET_HOST, frame(100, in, ethertype.OpenMX, mag...)); got != 0 {
		t.Errorf("received tap, Open-MX frame: filter keeps %d bytes", got)
	}
	if _, err := (Tap{Dir: Sent, EtherType: ethertype.Traffic, Magic: magic}).Filter(); err == nil {
		t.Error("Snap 0: no error")
	}
}

// The assembled tap filter loads the packet type the way linux/filter.h
// spells it: SKF_AD_OFF + SKF_AD_PKTTYPE.
func TestTapFilterPacketTypeLoad(t *testing.T) {
	f, err := Tap{Dir: Sent, EtherType: ethertype.Traffic, Magic: 1, Snap: 40}.Filter()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := assemble(f)
	if err != nil {
		t.Fatal(err)
	}
	const skfAdOff, skfAdPktType = 0xfffff000, 4
	if p := prog[0]; p.Code != unix.BPF_LD|unix.BPF_W|unix.BPF_ABS || p.K != skfAdOff+skfAdPktType {
		t.Errorf("first instruction %+v, want ld [SKF_AD_OFF+SKF_AD_PKTTYPE]", p)
	}
}

func TestBuilderRejectsBadJumps(t *testing.T) {
	b := newBuilder()
	l := b.label()
	b.jumpIf(bpf.JumpEqual, 1, l, next)
	b.add(bpf.RetConstant{Val: 0})
	if _, err := b.program(); err == nil {
		t.Error("a jump to a label never placed: no error")
	}
	b = newBuilder()
	l = b.label()
	b.place(l)
	b.add(bpf.RetConstant{Val: 0})
	b.jumpIf(bpf.JumpEqual, 1, l, next)
	b.add(bpf.RetConstant{Val: 0})
	if _, err := b.program(); err == nil {
		t.Error("a backward jump: no error")
	}
}

func TestHtons(t *testing.T) {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], Htons(ethertype.DMP))
	if b != [2]byte{0x88, 0xb5} {
		t.Errorf("Htons(0x88B5) is % x in memory, want 88 b5", b)
	}
}
