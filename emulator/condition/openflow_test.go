package condition

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// packetInBody is an OpenFlow 1.3 PACKET_IN body as Open vSwitch sends
// one for output:CONTROLLER: a match with in_port (and, as OVS adds,
// another field), padded to 8, 2 bytes of pad, the frame.
func packetInBody(inPort uint32, frame []byte, extra bool) []byte {
	be := binary.BigEndian
	var m []byte
	m = be.AppendUint16(m, 1) // OXM
	m = be.AppendUint16(m, 0) // length, set below
	if extra {
		m = be.AppendUint32(m, 0x80000408) // OXM_OF_METADATA
		m = be.AppendUint64(m, 0)
	}
	m = be.AppendUint32(m, oxmInPort)
	m = be.AppendUint32(m, inPort)
	be.PutUint16(m[2:], uint16(len(m)))
	for len(m)%8 != 0 {
		m = append(m, 0)
	}
	b := make([]byte, 16) // buffer_id, total_len, reason, table_id, cookie
	be.PutUint32(b, ofNoBuffer)
	be.PutUint16(b[4:], uint16(len(frame)))
	b = append(b, m...)
	b = append(b, 0, 0)
	return append(b, frame...)
}

func TestParsePacketIn(t *testing.T) {
	frame := []byte("0123456789abcdef-a-cnm")
	for _, extra := range []bool{false, true} {
		in, f, err := parsePacketIn(packetInBody(7, frame, extra))
		if err != nil || in != 7 || !bytes.Equal(f, frame) {
			t.Errorf("extra field %v: in_port %d frame %q err %v", extra, in, f, err)
		}
	}
	for name, b := range map[string][]byte{
		"empty":       nil,
		"short match": packetInBody(7, nil, false)[:22],
		"no in_port":  append(make([]byte, 16), 0, 1, 0, 4, 0, 0, 0, 0, 0, 0),
		"not OXM":     append(make([]byte, 16), 0, 0, 0, 8, 0, 0, 0, 0, 0, 0),
	} {
		if _, _, err := parsePacketIn(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	// PACKET_OUT: header, NO_BUFFER from CONTROLLER, one output action.
	out := packetOutMsg(9, 5, frame)
	be := binary.BigEndian
	if out[1] != ofPacketOut || int(be.Uint16(out[2:])) != len(out) || be.Uint32(out[12:]) != ofpController ||
		be.Uint16(out[16:]) != 16 || be.Uint32(out[28:]) != 5 || !bytes.Equal(out[40:], frame) {
		t.Errorf("packet-out % x", out)
	}
}

// FuzzParsePacketIn: whatever a switch sends, the parser never reads past
// the body, and a frame it returns lies inside it.
func FuzzParsePacketIn(f *testing.F) {
	f.Add(packetInBody(3, []byte("frame"), false))
	f.Add(packetInBody(0xfffffffe, nil, true))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, frame, err := parsePacketIn(b)
		if err == nil && len(frame) > len(b) {
			t.Fatalf("frame of %d bytes from a body of %d", len(frame), len(b))
		}
	})
}
