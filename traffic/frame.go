package traffic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/ethfab/ethfab/internal/ethertype"
)

// Traffic frames carry ethertype.Traffic, the same as `ethfab ping`
// (emulator/fabric/ping.go) and the controller's probes, so the fabric
// forwards them all by destination MAC alone. The payload's magic tells
// them apart: a ping's bytes 14..17 are its source host ID, a small
// integer, never "EFTR" (0x45465452 ≈ 1.16e9).

// Layout of a traffic frame, offsets from the start of the Ethernet header:
//
//	 0..5   destination MAC
//	 6..11  source MAC
//	12..13  EtherType 0x88B6
//	14..17  magic "EFTR"
//	18      version (1)
//	19      flags (FlagMeasured, FlagProbe)
//	20..23  run: which measurement the frame belongs to
//	24..27  source host (index into the run's host list)
//	28..31  destination host
//	32..39  sequence number within the flow (source, destination), from 0
//	40..47  send time, ns of CLOCK_MONOTONIC (namespaces share it)
//	48..51  CRC-32 (IEEE) of bytes 14..47
//	52..    zero padding up to the frame size
//
// The frame size counts everything from the destination MAC to the end of
// the padding: the bytes handed to the packet socket, which is also what
// tbf shapes on a veth. It excludes the 4-byte FCS (veths carry none) as
// well as preamble and inter-frame gap: the papers' 1 KB frames are 1000
// bytes here.
const (
	HeaderLen    = 52
	MinFrameSize = 60 // the Ethernet minimum without FCS
	MaxFrameSize = 9000
	Version      = 1
	magic        = 0x45465452 // "EFTR"
)

// Magic is bytes 14..17 of every traffic frame, for filters that pick
// them out in the kernel (classic BPF).
const Magic = magic

// LatenessFloor is the least lateness a sender's schedule is allowed,
// whatever its slot (the fidelity verdict's limit is a slot or this, the
// larger; results.LatenessFloorUS): the sender's own timer. A sender
// that sleeps until a frame is due wakes 50-100 µs late here when the
// machine idles (vlan-tagging's idle phase, 100 Mbit/s at load 0.1, 5%
// busy: 78-83 µs late on average, one 80 µs slot), as any host's would;
// that is the operating system's granularity, not the machine falling
// behind.
const LatenessFloor = 250 * time.Microsecond

// FlagMeasured marks frames sent inside the measurement window; sinks count
// only these, so warm-up frames and stragglers of the drain do not bias the
// figures.
const FlagMeasured = 1 << 0

// FlagProbe marks a probe: a small frame a host sends to another at fixed
// times beside the traffic (seed 002's ping every 100 ms). Its sequence
// number is its tick; sinks record it apart from the traffic's frames.
const FlagProbe = 1 << 1

// Header is the part of a traffic frame that the sink reads.
type Header struct {
	Dst, Src [6]byte
	Flags    uint8
	Run      uint32
	SrcHost  uint32
	DstHost  uint32
	Seq      uint64
	SendNs   uint64
}

// Decode errors. ErrNotTraffic is a frame of the same EtherType that is not
// ours (a ping): expected, counted apart from malformed frames.
var (
	ErrNotTraffic = errors.New("not a traffic frame")
	ErrMalformed  = errors.New("malformed traffic frame")
)

// Encode writes h's header into frame, whose length is the frame size;
// the padding is left as it is (zero it once, reuse the buffer).
func Encode(frame []byte, h *Header) error {
	if len(frame) < HeaderLen || len(frame) < MinFrameSize {
		return fmt.Errorf("frame of %d bytes is shorter than the %d-byte minimum", len(frame), max(HeaderLen, MinFrameSize))
	}
	copy(frame[0:6], h.Dst[:])
	copy(frame[6:12], h.Src[:])
	binary.BigEndian.PutUint16(frame[12:], ethertype.Traffic)
	binary.BigEndian.PutUint32(frame[14:], magic)
	frame[18] = Version
	frame[19] = h.Flags
	binary.BigEndian.PutUint32(frame[20:], h.Run)
	binary.BigEndian.PutUint32(frame[24:], h.SrcHost)
	binary.BigEndian.PutUint32(frame[28:], h.DstHost)
	binary.BigEndian.PutUint64(frame[32:], h.Seq)
	binary.BigEndian.PutUint64(frame[40:], h.SendNs)
	binary.BigEndian.PutUint32(frame[48:], crc32.ChecksumIEEE(frame[14:48]))
	return nil
}

// Decode reads the header of a received frame. It never panics: anything
// short, of another EtherType, version or checksum is an error wrapping
// ErrMalformed (or ErrNotTraffic when the magic is not ours).
func Decode(frame []byte, h *Header) error {
	if len(frame) < 18 || binary.BigEndian.Uint16(frame[12:]) != ethertype.Traffic || binary.BigEndian.Uint32(frame[14:]) != magic {
		return ErrNotTraffic
	}
	if len(frame) < HeaderLen {
		return fmt.Errorf("%w: %d bytes, header needs %d", ErrMalformed, len(frame), HeaderLen)
	}
	if frame[18] != Version {
		return fmt.Errorf("%w: version %d, want %d", ErrMalformed, frame[18], Version)
	}
	if got, want := binary.BigEndian.Uint32(frame[48:]), crc32.ChecksumIEEE(frame[14:48]); got != want {
		return fmt.Errorf("%w: header checksum %08x, want %08x", ErrMalformed, got, want)
	}
	copy(h.Dst[:], frame[0:6])
	copy(h.Src[:], frame[6:12])
	h.Flags = frame[19]
	h.Run = binary.BigEndian.Uint32(frame[20:])
	h.SrcHost = binary.BigEndian.Uint32(frame[24:])
	h.DstHost = binary.BigEndian.Uint32(frame[28:])
	h.Seq = binary.BigEndian.Uint64(frame[32:])
	h.SendNs = binary.BigEndian.Uint64(frame[40:])
	return nil
}
