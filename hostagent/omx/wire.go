// Package omx speaks the Open-MX-style peer discovery seed 000 §IV is
// about: the omxoed announcement (a 64-byte broadcast carrying the
// sender's MAC in its payload), the peer table a listener builds from it,
// and a CONNECT-like request/reply whose receiver drops frames from
// sources missing in its peer table, as Open-MX does (DROP_BAD_PEER_ADDR).
// That drop is what turns a peer table holding the wrong MACs into failed
// connections.
package omx

import (
	"encoding/binary"
	"errors"

	"github.com/ethfab/ethfab/hostagent/ether"
	"github.com/ethfab/ethfab/internal/ethertype"
)

// FrameLen is the length of every frame here (announcements are 64 bytes
// in omxoed; connect frames are made the same size).
const FrameLen = 64

// Packet types (byte 16). TypeRaw is the announcement's, as in omxoed.
// The connect types are ethfab's own: Open-MX's real CONNECT carries
// endpoint and session state this check does not need.
const (
	TypeRaw            = 1
	TypeConnectRequest = 0x40
	TypeConnectReply   = 0x41
)

// Byte offsets in a frame (omxoed for the announcement; connect frames
// keep peer index and type where the announcement has them).
const (
	offPeerIndex = 14 // u16, sender's peer index
	offType      = 16
	offNICHi     = 32 // u32, upper 16 bits of the MAC
	offNICLo     = 36 // u32, lower 32 bits of the MAC
	offSerial    = 40 // u32, random per run of the sender
	announceMin  = 44

	offSeq     = 20 // connect: u32 request number, echoed in the reply
	offCSerial = 24 // connect: u32 sender's serial
	connectMin = 28
)

// Parse errors: ErrForeign frames are not Open-MX at all, ErrType are
// Open-MX frames of a kind this package does not speak.
var (
	ErrForeign = errors.New("not an Open-MX frame")
	ErrType    = errors.New("unknown Open-MX packet type")
	ErrNICID   = errors.New("nic_id_hi has bits above the MAC's 16")
)

// Announcement is one omxoed announcement.
type Announcement struct {
	ether.Header
	PeerIndex uint16
	NIC       ether.MAC // the MAC written in the payload
	Serial    uint32
}

// Marshal builds the 64-byte broadcast frame.
func (a Announcement) Marshal() []byte {
	b := make([]byte, FrameLen)
	a.Put(b)
	return b
}

// Put writes the frame into b (at least FrameLen bytes); the Header's
// EtherType is ignored.
func (a Announcement) Put(b []byte) {
	clear(b[:FrameLen])
	h := a.Header
	h.EtherType = ethertype.OpenMX
	h.Put(b)
	binary.BigEndian.PutUint16(b[offPeerIndex:], a.PeerIndex)
	b[offType] = TypeRaw
	binary.BigEndian.PutUint32(b[offNICHi:], uint32(a.NIC[0])<<8|uint32(a.NIC[1]))
	copy(b[offNICLo:offNICLo+4], a.NIC[2:6])
	binary.BigEndian.PutUint32(b[offSerial:], a.Serial)
}

// Type returns the packet type of an Open-MX frame.
func Type(frame []byte) (uint8, error) {
	h, err := ether.ParseHeader(frame)
	if err != nil {
		return 0, err
	}
	if h.EtherType != ethertype.OpenMX {
		return 0, ErrForeign
	}
	if len(frame) <= offType {
		return 0, ether.ErrShort
	}
	return frame[offType], nil
}

// ParseAnnouncement reads an announcement. Short or truncated frames,
// other packet types and impossible NIC ids are errors.
func ParseAnnouncement(frame []byte) (Announcement, error) {
	t, err := Type(frame)
	if err != nil {
		return Announcement{}, err
	}
	if t != TypeRaw {
		return Announcement{}, ErrType
	}
	if len(frame) < announceMin {
		return Announcement{}, ether.ErrShort
	}
	a := Announcement{PeerIndex: binary.BigEndian.Uint16(frame[offPeerIndex:]), Serial: binary.BigEndian.Uint32(frame[offSerial:])}
	a.Header, _ = ether.ParseHeader(frame)
	hi := binary.BigEndian.Uint32(frame[offNICHi:])
	if hi > 0xffff {
		return Announcement{}, ErrNICID
	}
	a.NIC[0], a.NIC[1] = byte(hi>>8), byte(hi)
	copy(a.NIC[2:], frame[offNICLo:offNICLo+4])
	return a, nil
}

// Connect is a connect request or reply.
type Connect struct {
	ether.Header
	Reply     bool
	PeerIndex uint16
	Seq       uint32 // chosen by the requester, echoed by the reply
	Serial    uint32 // the sender's serial
}

// Marshal builds the frame.
func (c Connect) Marshal() []byte {
	b := make([]byte, FrameLen)
	h := c.Header
	h.EtherType = ethertype.OpenMX
	h.Put(b)
	binary.BigEndian.PutUint16(b[offPeerIndex:], c.PeerIndex)
	b[offType] = TypeConnectRequest
	if c.Reply {
		b[offType] = TypeConnectReply
	}
	binary.BigEndian.PutUint32(b[offSeq:], c.Seq)
	binary.BigEndian.PutUint32(b[offCSerial:], c.Serial)
	return b
}

// ParseConnect reads a connect request or reply.
func ParseConnect(frame []byte) (Connect, error) {
	t, err := Type(frame)
	if err != nil {
		return Connect{}, err
	}
	if t != TypeConnectRequest && t != TypeConnectReply {
		return Connect{}, ErrType
	}
	if len(frame) < connectMin {
		return Connect{}, ether.ErrShort
	}
	c := Connect{
		Reply:     t == TypeConnectReply,
		PeerIndex: binary.BigEndian.Uint16(frame[offPeerIndex:]),
		Seq:       binary.BigEndian.Uint32(frame[offSeq:]),
		Serial:    binary.BigEndian.Uint32(frame[offCSerial:]),
	}
	c.Header, _ = ether.ParseHeader(frame)
	return c, nil
}
