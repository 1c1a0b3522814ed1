package packet

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
)

// ethfabFilters are the filters ethfab attaches: the host agent's, `ethfab
// ping`'s, the traffic sink's snap length, and the condition monitor's
// taps both ways, with and without a source prefix.
func ethfabFilters(t testing.TB) map[string][]bpf.Instruction {
	t.Helper()
	fs := map[string][]bpf.Instruction{
		"snap": {bpf.RetConstant{Val: 64}},
	}
	var err error
	if fs["agent"], err = EtherTypes(ethertype.DMP, ethertype.OpenMX); err != nil {
		t.Fatal(err)
	}
	if fs["ping"], err = EtherTypes(ethertype.Traffic); err != nil {
		t.Fatal(err)
	}
	for name, tap := range map[string]Tap{
		"tap-sent":   {Dir: Sent, EtherType: ethertype.Traffic, Magic: 0x45464142, Snap: 52},
		"tap-recv":   {Dir: Received, EtherType: ethertype.Traffic, Magic: 0x45464142, Snap: 52},
		"tap-prefix": {Dir: Received, EtherType: ethertype.Traffic, Magic: 0x45464142, SrcPrefix: 0x020000010000, SrcMask: 0xffffffff0000, Snap: 52},
	} {
		if fs[name], err = tap.Filter(); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

// loadTranslated loads the eBPF rendering of f.
func loadTranslated(t testing.TB, f []bpf.Instruction) *ebpf.Program {
	t.Helper()
	ins, err := Translate(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: ins})
	if err != nil {
		t.Fatalf("load: %v\n%v", err, ins)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// runKernel runs a loaded filter on frame f in the kernel
// (BPF_PROG_TEST_RUN) with the packet type pkttype (0..3) and returns the
// bytes a packet socket would get. The test run takes its input's first 14
// bytes as an Ethernet header (setting the packet type from its
// destination, against the loopback's all-zero address) and gives the
// program the rest: so a dummy header goes in front of f, and the program
// sees f from its first byte, as a packet socket's filter does.
func runKernel(t testing.TB, p *ebpf.Program, pkttype uint32, f []byte) int {
	t.Helper()
	dest := map[uint32][6]byte{
		unix.PACKET_HOST:      {},
		unix.PACKET_BROADCAST: {0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		unix.PACKET_MULTICAST: {0x01, 0, 0x5e, 0, 0, 1},
		unix.PACKET_OTHERHOST: {0x02, 0, 0, 0, 0, 1},
	}[pkttype]
	in := append(append(append(make([]byte, 0, 14+len(f)), dest[:]...), 0x02, 0, 0, 0, 0, 2, 0x88, 0xb5), f...)
	n, err := p.Run(&ebpf.RunOptions{Data: in})
	if err != nil {
		t.Fatalf("test run: %v", err)
	}
	return min(int(n), len(f))
}

// frames is a spread of frames every filter is tried on: each EtherType
// ethfab uses and others, tagged, with and without the taps' magic, from
// sources inside and outside the prefix, and frames too short for each
// field the filters load.
func frames() [][]byte {
	var fs [][]byte
	magic := []byte{0x45, 0x46, 0x41, 0x42}
	for _, et := range []uint16{ethertype.DMP, ethertype.OpenMX, ethertype.Traffic, ethertype.CNM, 0x0800, 0x8100, 0} {
		for _, s := range [][6]byte{src, {0x02, 0, 0, 0x02, 0, 0}, {0x0e, 1, 2, 3, 4, 5}} {
			fs = append(fs, frame(64, s, et, magic...), frame(64, s, et), frame(1514, s, et, magic...),
				tagged(frame(64, s, et, magic...)))
		}
	}
	full := frame(64, src, ethertype.Traffic, magic...)
	for n := 14; n < 20; n++ {
		fs = append(fs, full[:n])
	}
	return fs
}

// The translation is the classic filter, frame for frame: the kernel runs
// each translated filter on every frame and packet type and returns what
// x/net/bpf's VM returns for the classic one.
func TestTranslateMatchesClassic(t *testing.T) {
	roottest.Need(t)
	for name, f := range ethfabFilters(t) {
		p := loadTranslated(t, f)
		for i, fr := range frames() {
			for pt := uint32(0); pt < 4; pt++ {
				if got, want := runKernel(t, p, pt, fr), run(t, f, pt, fr); got != want {
					t.Errorf("%s: frame %d (%d bytes), packet type %d: eBPF %d, classic %d", name, i, len(fr), pt, got, want)
				}
			}
		}
	}
}

// What is not translated is refused, not filtered differently.
func TestTranslateRefuses(t *testing.T) {
	for _, f := range [][]bpf.Instruction{
		nil,
		{bpf.LoadIndirect{Off: 0, Size: 1}, bpf.RetA{}},
		{bpf.LoadExtension{Num: bpf.ExtProto}, bpf.RetA{}},
		{bpf.LoadAbsolute{Off: 0, Size: 3}, bpf.RetA{}},
		{bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipTrue: 5}, bpf.RetA{}},
		{bpf.ALUOpConstant{Op: bpf.ALUOpDiv, Val: 2}, bpf.RetA{}},
	} {
		if _, err := Translate(f); err == nil {
			t.Errorf("%v translated", f)
		}
	}
}

// FuzzTranslate: the translated agent and tap filters agree with the
// classic ones on any frame and packet type.
func FuzzTranslate(f *testing.F) {
	for _, fr := range frames() {
		f.Add(fr, uint8(0))
	}
	f.Fuzz(func(t *testing.T, fr []byte, pt uint8) {
		roottest.Need(t)
		if len(fr) > 1600 {
			return // the test run takes at most a page less its head and tail room
		}
		for name, filter := range fuzzFilters(t) {
			if got, want := runKernel(t, fuzzProgs[name], uint32(pt%4), fr), run(t, filter, uint32(pt%4), fr); got != want {
				t.Errorf("%s: packet type %d, frame %x: eBPF %d, classic %d", name, pt%4, fr, got, want)
			}
		}
	})
}

// The fuzzer's programs are loaded once for all its inputs.
var fuzzProgs map[string]*ebpf.Program

func fuzzFilters(t *testing.T) map[string][]bpf.Instruction {
	fs := ethfabFilters(t)
	if fuzzProgs == nil {
		fuzzProgs = map[string]*ebpf.Program{}
		for name, f := range fs {
			ins, err := Translate(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: ins})
			if err != nil {
				t.Fatal(err)
			}
			fuzzProgs[name] = p
		}
	}
	return fs
}

// ethfabPrograms counts the kernel's loaded filter programs named as
// attachShared names them.
func ethfabPrograms(t *testing.T) int {
	t.Helper()
	n := 0
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, os.ErrNotExist) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // freed since
		}
		if info, err := p.Info(); err == nil && info.Name == "ethfab_filter" && info.Type == ebpf.SocketFilter {
			n++
		}
		p.Close()
	}
}

// A hundred sockets with the same filter hold one program between them,
// which goes when the last of them closes; a socket whose filter is in
// use still filters (the agent's EtherTypes pass, others do not).
func TestSocketsShareOneFilter(t *testing.T) {
	a, b := pair(t)
	before := ethfabPrograms(t)
	f, err := EtherTypes(ethertype.DMP, ethertype.OpenMX)
	if err != nil {
		t.Fatal(err)
	}
	var socks []*Socket
	for range 100 {
		s, err := Open(b, "eth0", Config{Filter: f, IgnoreOutgoing: true})
		if err != nil {
			t.Fatal(err)
		}
		socks = append(socks, s)
	}
	if got := ethfabPrograms(t) - before; got != 1 {
		t.Errorf("100 sockets with one filter: %d programs loaded, want 1", got)
	}
	tx := open(t, a, Config{})
	rx := socks[len(socks)-1]
	linkUp(t, tx, rx, ethertype.DMP)
	if err := tx.Send(marked(ethertype.Traffic, 1)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Send(marked(ethertype.OpenMX, 2)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 128)
	if n, err := recvWithin(t, rx, buf, 2*time.Second); err != nil || n != 60 || binary.BigEndian.Uint16(buf[12:]) != ethertype.OpenMX || buf[18] != 2 {
		t.Errorf("read %d bytes (%v) of EtherType %#x, frame %d; want the Open-MX frame 2 (the traffic one filtered out)", n, err, binary.BigEndian.Uint16(buf[12:]), buf[18])
	}
	for _, s := range socks[:50] {
		s.Close()
	}
	if got := ethfabPrograms(t) - before; got != 1 {
		t.Errorf("50 of 100 sockets closed: %d programs loaded, want 1", got)
	}
	for _, s := range socks[50:] {
		s.Close()
	}
	// Our descriptor of the program closes with the last socket; the
	// kernel frees the program after an RCU grace period.
	if LoadedFilters() != 0 {
		t.Errorf("%d filters still held after every socket closed", LoadedFilters())
	}
	for deadline := time.Now().Add(10 * time.Second); ethfabPrograms(t) != before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("programs still loaded 10 s after every socket closed: %d, before %d", ethfabPrograms(t), before)
		}
	}
}

// BenchmarkLoadFilter: what a filter costs when no open socket shares it
// (a tap's, whose source prefix is its port's): translation, the
// verifier, the JIT.
func BenchmarkLoadFilter(b *testing.B) {
	roottest.Need(b)
	tap := Tap{Dir: Received, EtherType: ethertype.Traffic, Magic: 0x45464142, SrcMask: 0xffffffff0000, Snap: 52}
	for i := 0; b.Loop(); i++ {
		tap.SrcPrefix = uint64(i) << 16
		f, err := tap.Filter()
		if err != nil {
			b.Fatal(err)
		}
		loadTranslated(b, f).Close()
	}
}
