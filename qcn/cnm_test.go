package qcn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/traffic"
)

// victim is the start of a traffic frame's MSDU (from its EtherType on),
// as a congestion point samples it.
func victim(t testing.TB, size int) []byte {
	t.Helper()
	f := make([]byte, size)
	err := traffic.Encode(f, &traffic.Header{Dst: [6]byte{2, 0, 0, 1, 2, 3}, Src: [6]byte{2, 0, 0, 4, 5, 6}, SrcHost: 7, DstHost: 9, Seq: 11})
	if err != nil {
		t.Fatal(err)
	}
	return f[12:]
}

func sample(t testing.TB, msdu []byte) CNM {
	return CNM{
		Dst: [6]byte{2, 0, 0, 4, 5, 6}, Src: [6]byte{2, 0, 0, 1, 0, 0},
		Fbq: 37, CPSwitch: [6]byte{2, 0, 0, 1, 0, 0}, CPPort: 5,
		QOffset: Units(16 << 10), QDelta: Units(-(3 << 10)), Priority: 5,
		VictimDst: [6]byte{2, 0, 0, 1, 2, 3}, VictimLen: uint16(len(msdu)), MSDU: msdu[:min(len(msdu), MaxMSDU)],
	}
}

// A CNM survives encoding, negative QOffset and QDelta included, at every
// victim size around the MSDU limit, and its frame is what 802.1Qau lays
// out: EtherType 0x22E7, QntzFb in the low 6 bits, padding to 60 bytes.
func TestCNMRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, 20, MaxMSDU - 1, MaxMSDU, MaxMSDU + 1, 986} {
		msdu := make([]byte, size)
		if size >= 40 {
			msdu = victim(t, size+12)
		}
		c := sample(t, msdu)
		c.QOffset, c.QDelta = -300, -1
		f, err := c.Append(nil)
		if err != nil {
			t.Fatalf("victim %d bytes: %v", size, err)
		}
		if want := max(HeaderLen+min(size, MaxMSDU), MinFrame); len(f) != want {
			t.Errorf("victim %d bytes: frame %d bytes, want %d", size, len(f), want)
		}
		if et := binary.BigEndian.Uint16(f[12:]); et != 0x22E7 {
			t.Errorf("EtherType %#x", et)
		}
		if w := binary.BigEndian.Uint16(f[14:]); w != 37 {
			t.Errorf("version/reserved/QntzFb word %#04x, want 37", w)
		}
		var d CNM
		if err := Decode(f, &d); err != nil {
			t.Fatalf("victim %d bytes: decode: %v", size, err)
		}
		if !equal(c, d) {
			t.Errorf("victim %d bytes: decoded %+v, want %+v", size, d, c)
		}
	}
}

func equal(a, b CNM) bool {
	return a.Dst == b.Dst && a.Src == b.Src && a.Fbq == b.Fbq && a.CPSwitch == b.CPSwitch && a.CPPort == b.CPPort &&
		a.QOffset == b.QOffset && a.QDelta == b.QDelta && a.Priority == b.Priority && a.VictimDst == b.VictimDst &&
		a.VictimLen == b.VictimLen && bytes.Equal(a.MSDU, b.MSDU)
}

// Bad CNMs are refused with the reason, not read.
func TestCNMRefused(t *testing.T) {
	c := sample(t, victim(t, 1000))
	good, err := c.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want error
	}{
		{"other EtherType", func(f []byte) []byte { binary.BigEndian.PutUint16(f[12:], ethertype.Traffic); return f }, ErrNotCNM},
		{"no EtherType", func(f []byte) []byte { return f[:13] }, ErrNotCNM},
		{"short header", func(f []byte) []byte { return f[:HeaderLen-1] }, ErrMalformed},
		{"version 1", func(f []byte) []byte { f[14] |= 0x10; return f }, ErrMalformed},
		{"reserved bit", func(f []byte) []byte { f[15] |= 0x40; return f }, ErrMalformed},
		{"priority low bits", func(f []byte) []byte { f[29] = 1; return f }, ErrMalformed},
		{"MSDU cut", func(f []byte) []byte { return f[:HeaderLen+MaxMSDU-1] }, ErrMalformed},
	} {
		f := tc.edit(bytes.Clone(good))
		var d CNM
		if err := Decode(f, &d); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, bad := range []CNM{
		func() CNM { x := c; x.Fbq = 64; return x }(),
		func() CNM { x := c; x.Priority = 8; return x }(),
		func() CNM { x := c; x.MSDU = append(c.MSDU, 0); return x }(),
		func() CNM { x := c; x.VictimLen = 10; return x }(),
	} {
		if _, err := bad.Append(nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("encoding %+v: %v, want ErrMalformed", bad, err)
		}
	}
}

// QOffset and QDelta count 64-byte units toward zero and saturate.
func TestUnits(t *testing.T) {
	for _, c := range []struct {
		bytes int
		want  int16
	}{{0, 0}, {63, 0}, {64, 1}, {-64, -1}, {-127, -1}, {16 << 10, 256}, {math.MaxInt32, math.MaxInt16}, {math.MinInt32, math.MinInt16}} {
		if got := Units(c.bytes); got != c.want {
			t.Errorf("Units(%d) = %d, want %d", c.bytes, got, c.want)
		}
	}
}

// Whatever Decode accepts encodes back to the same bytes (up to the
// padding it ignores), and nothing makes it panic.
func FuzzDecode(f *testing.F) {
	c := sample(f, victim(f, 1000))
	good, _ := c.Append(nil)
	f.Add(good)
	short := sample(f, make([]byte, 3))
	s, _ := short.Append(nil)
	f.Add(s)
	f.Add([]byte{})
	f.Add(good[:HeaderLen])
	f.Fuzz(func(t *testing.T, frame []byte) {
		var d CNM
		// A cut CNM decodes whenever the whole one does, to the same
		// header and a prefix of its MSDU.
		cutErr := DecodeCut(frame, &d)
		cut := d
		if Decode(frame, &d) != nil {
			return
		}
		if cutErr != nil || cut.Fbq != d.Fbq || cut.VictimLen != d.VictimLen || !bytes.HasPrefix(d.MSDU, cut.MSDU) {
			t.Fatalf("DecodeCut %v %+v, Decode %+v", cutErr, cut, d)
		}
		again, err := d.Append(nil)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", d, err)
		}
		n := HeaderLen + len(d.MSDU)
		if !bytes.Equal(again[:n], frame[:n]) {
			t.Fatalf("re-encoded\n%x\nfrom\n%x", again[:n], frame[:n])
		}
	})
}
