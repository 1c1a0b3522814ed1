package omx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ethfab/ethfab/hostagent/ether"
	"github.com/ethfab/ethfab/internal/ethertype"
)

var (
	macA = ether.MAC{0x02, 0x00, 0x00, 0x01, 0x00, 0x01}
	macB = ether.MAC{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc}
)

func TestAnnouncementLayout(t *testing.T) {
	b := Announcement{Header: ether.Header{Dst: ether.Broadcast, Src: macA}, PeerIndex: 0x0102, NIC: macB, Serial: 0xdeadbeef}.Marshal()
	if len(b) != 64 {
		t.Fatalf("length %d, want 64", len(b))
	}
	want := make([]byte, 64)
	copy(want[0:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(want[6:], macA[:])
	want[12], want[13] = 0x86, 0xdf
	want[14], want[15] = 0x01, 0x02                 // peer index
	want[16] = 1                                    // RAW
	copy(want[32:], []byte{0, 0, 0x12, 0x34})       // nic_id_hi: upper 16 bits
	copy(want[36:], []byte{0x56, 0x78, 0x9a, 0xbc}) // nic_id_lo: lower 32 bits
	copy(want[40:], []byte{0xde, 0xad, 0xbe, 0xef}) // serial
	if !bytes.Equal(b, want) {
		t.Fatalf("frame\n% x\nwant\n% x", b, want)
	}
	a, err := ParseAnnouncement(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.NIC != macB || a.Src != macA || a.Dst != ether.Broadcast || a.Serial != 0xdeadbeef || a.PeerIndex != 0x0102 {
		t.Fatalf("parsed %+v", a)
	}
}

func TestAnnouncementRejects(t *testing.T) {
	good := Announcement{Header: ether.Header{Dst: ether.Broadcast, Src: macA}, NIC: macA, Serial: 7}.Marshal()
	cases := []struct {
		name string
		mod  func([]byte) []byte
		want error
	}{
		{"empty", func(b []byte) []byte { return nil }, ether.ErrShort},
		{"header only", func(b []byte) []byte { return b[:14] }, ether.ErrShort},
		{"truncated before serial", func(b []byte) []byte { return b[:43] }, ether.ErrShort},
		{"foreign ethertype", func(b []byte) []byte { b[12], b[13] = 0x08, 0x00; return b }, ErrForeign},
		{"other type", func(b []byte) []byte { b[16] = 9; return b }, ErrType},
		{"nic_id_hi too big", func(b []byte) []byte { b[33] = 1; return b }, ErrNICID},
	}
	for _, c := range cases {
		b := c.mod(append([]byte(nil), good...))
		if _, err := ParseAnnouncement(b); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	// The serial is the last field a receiver needs: 44 bytes suffice.
	if _, err := ParseAnnouncement(good[:44]); err != nil {
		t.Errorf("44-byte announcement: %v", err)
	}
}

func TestConnectRoundTrip(t *testing.T) {
	for _, reply := range []bool{false, true} {
		c := Connect{Header: ether.Header{Dst: macB, Src: macA}, Reply: reply, PeerIndex: 3, Seq: 0x01020304, Serial: 99}
		b := c.Marshal()
		if len(b) != FrameLen || binary.BigEndian.Uint16(b[12:]) != ethertype.OpenMX {
			t.Fatalf("frame % x", b)
		}
		wantType := byte(TypeConnectRequest)
		if reply {
			wantType = TypeConnectReply
		}
		if b[16] != wantType {
			t.Fatalf("type byte %#x, want %#x", b[16], wantType)
		}
		got, err := ParseConnect(b)
		if err != nil {
			t.Fatal(err)
		}
		c.EtherType = ethertype.OpenMX
		if got != c {
			t.Fatalf("round trip %+v, want %+v", got, c)
		}
		if _, err := ParseAnnouncement(b); !errors.Is(err, ErrType) {
			t.Fatalf("connect frame parsed as announcement: %v", err)
		}
		if _, err := ParseConnect(b[:27]); !errors.Is(err, ether.ErrShort) {
			t.Fatalf("truncated connect: %v", err)
		}
	}
}

func FuzzParseAnnouncement(f *testing.F) {
	f.Add(Announcement{Header: ether.Header{Dst: ether.Broadcast, Src: macA}, NIC: macB, Serial: 1}.Marshal())
	f.Add([]byte{0, 1, 2})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseAnnouncement(b)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to the same fields.
		a2, err := ParseAnnouncement(a.Marshal())
		if err != nil || a2 != a {
			t.Fatalf("re-encode: %+v vs %+v (%v)", a2, a, err)
		}
	})
}

func FuzzParseConnect(f *testing.F) {
	f.Add(Connect{Header: ether.Header{Dst: macB, Src: macA}, Seq: 5}.Marshal())
	f.Add(Connect{Header: ether.Header{Dst: macB, Src: macA}, Reply: true}.Marshal()[:30])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConnect(b)
		if err != nil {
			return
		}
		c2, err := ParseConnect(c.Marshal())
		if err != nil || c2 != c {
			t.Fatalf("re-encode: %+v vs %+v (%v)", c2, c, err)
		}
	})
}
