// Package qcn is IEEE 802.1Qau congestion notification as ethfab's
// switches and hosts speak it (seeds 003 and 004): a congestion point's
// feedback, its 6-bit quantization, and the congestion notification
// message (CNM) that carries it back to the source of a sampled frame.
// It is the pure part, shared by the switches' congestion points and
// the hosts' reaction points: no kernel, no emulator.
package qcn

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ethfab/ethfab/internal/ethertype"
)

// Layout of a CNM, offsets from the start of the Ethernet header (802.1Qau
// as DESIGN.md records it; the spec's §0.4 gives each field's value):
//
//	 0..5   destination MAC: the sampled (victim) frame's source
//	 6..11  source MAC: the congestion point's switch
//	12..13  EtherType 0x22E7
//	14..15  version (4 bits, 0), reserved (6 bits, 0), QntzFb (6 bits)
//	16..23  congestion point ID: the switch's MAC and the port number
//	24..25  cnmQOffset, signed, in units of QUnit bytes
//	26..27  cnmQDelta, signed, in units of QUnit bytes
//	28..29  encapsulated priority: the victim's PCP in the top 3 bits
//	30..35  encapsulated destination MAC: the victim's destination
//	36..37  encapsulated MSDU length: the victim's length
//	38..    the victim's MSDU (from its EtherType on), at most MaxMSDU
//	        bytes, then zero padding up to the Ethernet minimum
const (
	HeaderLen = 38
	MaxMSDU   = 64
	MaxLen    = HeaderLen + MaxMSDU
	// MinFrame is the Ethernet minimum without FCS: a shorter CNM is
	// padded with zeros.
	MinFrame = 60
	// QUnit is the unit of QOffset and QDelta, in bytes.
	QUnit = 64
	// MaxFbq is the largest quantized feedback (6 bits).
	MaxFbq = 63
)

// CNM is one congestion notification message.
type CNM struct {
	Dst, Src [6]byte
	// Fbq is the quantized feedback, 0..MaxFbq: larger is more congested.
	Fbq uint8
	// CPSwitch and CPPort identify the congestion point.
	CPSwitch [6]byte
	CPPort   uint16
	// QOffset and QDelta are Q-Qeq and Q-Qold in units of QUnit bytes.
	QOffset, QDelta int16
	// Priority is the victim's PCP, 0..7 (0 for an untagged frame).
	Priority uint8
	// VictimDst and VictimLen are the victim's destination and length.
	VictimDst [6]byte
	VictimLen uint16
	// MSDU is the start of the victim's MSDU: its first
	// min(VictimLen, MaxMSDU) bytes.
	MSDU []byte
}

// ErrNotCNM: the frame does not carry the CNM EtherType. ErrMalformed: it
// does, but a field is out of range or the frame is cut short.
var (
	ErrNotCNM    = errors.New("not a CNM")
	ErrMalformed = errors.New("malformed CNM")
)

// Len is the CNM's frame length, padding included.
func (c *CNM) Len() int { return max(HeaderLen+len(c.MSDU), MinFrame) }

// Append appends the CNM's frame to b, padded to the Ethernet minimum.
func (c *CNM) Append(b []byte) ([]byte, error) {
	if c.Fbq > MaxFbq {
		return b, fmt.Errorf("%w: QntzFb %d above %d", ErrMalformed, c.Fbq, MaxFbq)
	}
	if c.Priority > 7 {
		return b, fmt.Errorf("%w: priority %d above 7", ErrMalformed, c.Priority)
	}
	// Fewer bytes than the victim had are what a tap captured of it (the
	// receiver reads such a CNM with DecodeCut).
	if want := min(int(c.VictimLen), MaxMSDU); len(c.MSDU) > want {
		return b, fmt.Errorf("%w: %d MSDU bytes of a %d-byte victim, at most %d", ErrMalformed, len(c.MSDU), c.VictimLen, want)
	}
	start := len(b)
	b = append(b, make([]byte, c.Len())...)
	f := b[start:]
	copy(f[0:6], c.Dst[:])
	copy(f[6:12], c.Src[:])
	binary.BigEndian.PutUint16(f[12:], ethertype.CNM)
	binary.BigEndian.PutUint16(f[14:], uint16(c.Fbq))
	copy(f[16:22], c.CPSwitch[:])
	binary.BigEndian.PutUint16(f[22:], c.CPPort)
	binary.BigEndian.PutUint16(f[24:], uint16(c.QOffset))
	binary.BigEndian.PutUint16(f[26:], uint16(c.QDelta))
	binary.BigEndian.PutUint16(f[28:], uint16(c.Priority)<<13)
	copy(f[30:36], c.VictimDst[:])
	binary.BigEndian.PutUint16(f[36:], c.VictimLen)
	copy(f[HeaderLen:], c.MSDU)
	return b, nil
}

// Decode reads a CNM frame into c. c.MSDU aliases frame: the victim's
// bytes it carries, min(VictimLen, MaxMSDU) of them.
func Decode(frame []byte, c *CNM) error { return decode(frame, c, false) }

// DecodeCut reads a CNM of which only the start was captured (a tap's
// snap): the header must be whole, c.MSDU holds what of the victim's
// bytes the capture kept.
func DecodeCut(frame []byte, c *CNM) error { return decode(frame, c, true) }

func decode(frame []byte, c *CNM, cut bool) error {
	if len(frame) < 14 || binary.BigEndian.Uint16(frame[12:]) != ethertype.CNM {
		return ErrNotCNM
	}
	if len(frame) < HeaderLen {
		return fmt.Errorf("%w: %d bytes, the header needs %d", ErrMalformed, len(frame), HeaderLen)
	}
	w := binary.BigEndian.Uint16(frame[14:])
	if v := w >> 12; v != 0 {
		return fmt.Errorf("%w: version %d", ErrMalformed, v)
	}
	if r := (w >> 6) & 0x3f; r != 0 {
		return fmt.Errorf("%w: reserved bits %#x set", ErrMalformed, r)
	}
	p := binary.BigEndian.Uint16(frame[28:])
	if p&0x1fff != 0 {
		return fmt.Errorf("%w: encapsulated priority %#04x has bits below the PCP", ErrMalformed, p)
	}
	vlen := binary.BigEndian.Uint16(frame[36:])
	n := min(int(vlen), MaxMSDU)
	if len(frame) < HeaderLen+n {
		if !cut {
			return fmt.Errorf("%w: %d bytes, a %d-byte victim's MSDU needs %d", ErrMalformed, len(frame), vlen, HeaderLen+n)
		}
		n = len(frame) - HeaderLen
	}
	*c = CNM{Fbq: uint8(w & 0x3f), CPPort: binary.BigEndian.Uint16(frame[22:]),
		QOffset: int16(binary.BigEndian.Uint16(frame[24:])), QDelta: int16(binary.BigEndian.Uint16(frame[26:])),
		Priority: uint8(p >> 13), VictimLen: vlen, MSDU: frame[HeaderLen : HeaderLen+n]}
	copy(c.Dst[:], frame[0:6])
	copy(c.Src[:], frame[6:12])
	copy(c.CPSwitch[:], frame[16:22])
	copy(c.VictimDst[:], frame[30:36])
	return nil
}

// Units converts a queue quantity in bytes to QOffset/QDelta units,
// rounding toward zero and saturating at the int16 range.
func Units(bytes int) int16 {
	u := bytes / QUnit
	return int16(min(max(u, -1<<15), 1<<15-1))
}
