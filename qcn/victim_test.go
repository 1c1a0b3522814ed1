package qcn

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ethfab/ethfab/internal/ethertype"
)

func departed(src byte, size int) []byte {
	f := make([]byte, size)
	copy(f, []byte{2, 0, 0, 9, 9, 9, 2, 0, 0, 1, 1, src})
	binary.BigEndian.PutUint16(f[12:], ethertype.Traffic)
	f[14] = src
	return f
}

// A victim is drawn among the frames the queue held (the last qlen
// departures), never one the switch's own hosts sent, and its CNM goes
// back to its source with its header, through an encode and decode.
func TestVictimAndItsCNM(t *testing.T) {
	var r Ring
	for i := range RingSize + 10 { // wraps
		r.Add(departed(byte(i), 1000))
	}
	r.Add(departed(0xaa, 1000))
	r.Add(departed(0xbb, 1000))
	own := func(src [6]byte) bool { return src[5] != 0xbb } // 0xbb: an own host's
	seen := map[byte]int{}
	for k := range 100 {
		v, ok := r.Pick(2, func(n int) int { return k % n }, own)
		if !ok {
			t.Fatal("no victim among the last 2 departures")
		}
		seen[v.Src[5]]++
	}
	if len(seen) != 1 || seen[0xaa] != 100 {
		t.Fatalf("victims %v, want only 0xaa (0xbb is the switch's own host)", seen)
	}
	// qlen 0 still samples the last departure; none eligible: no CNM.
	if _, ok := r.Pick(0, func(int) int { return 0 }, own); ok {
		t.Error("qlen 0: the last departure is the switch's own host's, yet a victim")
	}
	// Draws spread over the queue's frames.
	seen = map[byte]int{}
	for k := range 40 {
		v, _ := r.Pick(4, func(n int) int { return k % n }, nil)
		seen[v.Src[5]]++
	}
	if len(seen) != 4 {
		t.Errorf("4 frames in the queue, victims %v", seen)
	}

	v, _ := r.Pick(2, func(int) int { return 0 }, own)
	s := Sample{Q: 32 << 10, Qoff: 16 << 10, Qdelta: -(1 << 10), Fb: -(48 << 10), Fbq: 37}
	c := NewCNM([6]byte{2, 0, 0, 1, 0, 0}, 5, s, v)
	if c.Dst != v.Src || c.VictimDst != v.Dst || c.VictimLen != 1000-12 || len(c.MSDU) != MaxMSDU || c.QOffset != 256 || c.QDelta != -16 {
		t.Fatalf("CNM %+v from victim %+v", c, v)
	}
	f, err := c.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	var d CNM
	if err := Decode(f, &d); err != nil || !equal(c, d) || !bytes.Equal(d.MSDU[:3], []byte{0x88, 0xb6, 0xaa}) {
		t.Fatalf("decoded %+v, %v; want %+v", d, err, c)
	}

	// A tagged victim: its PCP, and the MSDU after the tag.
	tagged := append([]byte{}, departed(0xcc, 100)[:12]...)
	tagged = append(tagged, 0x81, 0x00, 0xa0, 0x07) // PCP 5, VID 7
	tagged = append(tagged, departed(0xcc, 100)[12:]...)
	r.Add(tagged)
	v, _ = r.Pick(1, func(int) int { return 0 }, nil)
	if v.Priority != 5 || v.Len != 100-12 || binary.BigEndian.Uint16(v.MSDU()) != ethertype.Traffic {
		t.Errorf("tagged victim %+v", v)
	}
	tc := NewCNM([6]byte{2}, 1, s, v)
	if _, err := tc.Append(nil); err != nil {
		t.Errorf("a tagged victim's CNM: %v", err)
	}
}

// A tap's capture: the victim keeps the frame's whole length and what
// the capture held; its CNM, captured in turn, decodes cut.
func TestCutCaptures(t *testing.T) {
	var r Ring
	f := departed(7, 1000)
	r.AddCut(f[:52], 1000)
	v, ok := r.Pick(1, func(int) int { return 0 }, nil)
	if !ok || v.Len != 1000-12 || len(v.MSDU()) != 52-12 {
		t.Fatalf("victim %+v from a 52-byte capture of 1000", v)
	}
	r.AddCut(f[:52], 40) // a capture longer than its frame is no frame
	if v2, _ := r.Pick(1, func(int) int { return 0 }, nil); v2.Len != v.Len {
		t.Fatalf("a bad capture replaced the last departure: %+v", v2)
	}
	c := NewCNM([6]byte{2, 0, 0, 1, 0, 0}, 5, Sample{Fbq: 9}, v)
	b, err := c.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	var d CNM
	if err := Decode(b[:52], &d); err == nil {
		t.Fatal("Decode took a cut CNM")
	}
	if err := DecodeCut(b[:52], &d); err != nil || d.Fbq != 9 || d.VictimLen != v.Len || !bytes.Equal(d.MSDU, b[HeaderLen:52]) {
		t.Fatalf("DecodeCut: %v, %+v", err, d)
	}
	if err := DecodeCut(b[:HeaderLen-1], &d); err == nil {
		t.Fatal("DecodeCut took a cut header")
	}
}
