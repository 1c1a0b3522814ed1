// Package ether holds what the host agent's protocols share: MAC
// addresses and the Ethernet header. Their socket is kernel/packet's.
package ether

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// MAC is an Ethernet address as a value, so it can key maps and be
// compared without allocating.
type MAC [6]byte

// Broadcast is the all-ones destination.
var Broadcast = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ParseMAC reads the usual colon-separated form.
func ParseMAC(s string) (MAC, error) {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return MAC{}, err
	}
	if len(hw) != 6 {
		return MAC{}, fmt.Errorf("MAC %q: not 6 bytes", s)
	}
	return MAC(hw), nil
}

func (m MAC) String() string { return net.HardwareAddr(m[:]).String() }

// IsUnicast says whether m can be an interface's address: not zero and the
// group bit clear.
func (m MAC) IsUnicast() bool { return m != MAC{} && m[0]&1 == 0 }

// HeaderLen is the length of an untagged Ethernet header.
const HeaderLen = 14

// ErrShort is returned for frames too short for what they claim to be.
var ErrShort = errors.New("frame too short")

// Header is an untagged Ethernet header.
type Header struct {
	Dst, Src  MAC
	EtherType uint16
}

// Put writes h into the first HeaderLen bytes of b.
func (h Header) Put(b []byte) {
	copy(b[0:6], h.Dst[:])
	copy(b[6:12], h.Src[:])
	binary.BigEndian.PutUint16(b[12:14], h.EtherType)
}

// ParseHeader reads the Ethernet header of a frame.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, ErrShort
	}
	var h Header
	copy(h.Dst[:], b[0:6])
	copy(h.Src[:], b[6:12])
	h.EtherType = binary.BigEndian.Uint16(b[12:14])
	return h, nil
}
