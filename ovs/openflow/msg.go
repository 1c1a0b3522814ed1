package openflow

import (
	"encoding/binary"
	"fmt"
)

// OpenFlow 1.3 message types and constants (openflow-1.3.h).
const (
	Version = 0x04

	TypeHello           = 0
	TypeError           = 1
	TypeEchoRequest     = 2
	TypeEchoReply       = 3
	TypeExperimenter    = 4
	TypeSetConfig       = 9
	TypePacketIn        = 10
	TypePacketOut       = 13
	TypeFlowMod         = 14
	TypeMultipartReq    = 18
	TypeMultipartReply  = 19
	TypeBarrierRequest  = 20
	multipartMore       = 1 // OFPMPF_REPLY_MORE
	multipartFlow       = 1 // OFPMP_FLOW
	PortController      = 0xfffffffd
	PortInPort          = 0xfffffff8
	PortAny             = 0xffffffff
	GroupAny            = 0xffffffff
	NoBuffer            = 0xffffffff
	TableAll            = 0xff
	OXMInPort           = 0x80000004 // OXM_OF_IN_PORT: class 0x8000, field 0, length 4
	actionOutput        = 0
	InstructionGoto     = 1
	InstructionMetadata = 2
	instructionApply    = 4

	// FlowMod commands.
	FlowAdd          = 0
	FlowModifyStrict = 2
	FlowDelete       = 3
	FlowDeleteStrict = 4
)

// Header returns a zeroed message of length bytes with its header filled.
func Header(typ uint8, length int, xid uint32) []byte {
	b := make([]byte, length)
	putHeader(b, typ, length, xid)
	return b
}

func putHeader(b []byte, typ uint8, length int, xid uint32) {
	b[0], b[1] = Version, typ
	binary.BigEndian.PutUint16(b[2:], uint16(length))
	binary.BigEndian.PutUint32(b[4:], xid)
}

// PacketOut is an OFPT_PACKET_OUT of frame from the controller
// (buffer_id NO_BUFFER, in_port CONTROLLER) with one action: output on
// port.
func PacketOut(xid uint32, port uint32, frame []byte) []byte {
	const actions = 16 // one ofp_action_output
	b := Header(TypePacketOut, 24+actions+len(frame), xid)
	be := binary.BigEndian
	be.PutUint32(b[8:], NoBuffer)
	be.PutUint32(b[12:], PortController)
	be.PutUint16(b[16:], actions)
	a := b[24:]
	be.PutUint16(a[0:], actionOutput)
	be.PutUint16(a[2:], actions)
	be.PutUint32(a[4:], port)
	// max_len 0: only for output to the controller
	copy(b[24+actions:], frame)
	return b
}

// ParsePacketIn reads an OpenFlow 1.3 PACKET_IN body (after the header):
// buffer_id, total_len, reason, table_id, cookie, an OXM match carrying
// in_port, padded to 8, 2 bytes of pad, then the frame.
func ParsePacketIn(body []byte) (inPort uint32, frame []byte, err error) {
	be := binary.BigEndian
	const fixed = 16 // buffer_id 4, total_len 2, reason 1, table_id 1, cookie 8
	if len(body) < fixed+4 {
		return 0, nil, fmt.Errorf("packet-in: %d bytes", len(body))
	}
	m := body[fixed:]
	if typ := be.Uint16(m); typ != matchOXM {
		return 0, nil, fmt.Errorf("packet-in: match type %d, want OXM", typ)
	}
	mlen := int(be.Uint16(m[2:]))
	padded := pad8(mlen)
	if mlen < 4 || len(m) < padded+2 {
		return 0, nil, fmt.Errorf("packet-in: match of %d bytes in %d", mlen, len(m))
	}
	found := false
	err = eachOXM(m[4:mlen], func(h uint32, _ []byte, v []byte) {
		if h == OXMInPort {
			inPort, found = be.Uint32(v), true
		}
	})
	if err != nil {
		return 0, nil, fmt.Errorf("packet-in: %w", err)
	}
	if !found {
		return 0, nil, fmt.Errorf("packet-in without in_port")
	}
	return inPort, m[padded+2:], nil
}

// eachOXM calls fn with each OXM field of fields: its header, the whole
// field, and its value (and mask, if any).
func eachOXM(fields []byte, fn func(header uint32, field, value []byte)) error {
	for f := fields; len(f) > 0; {
		if len(f) < 4 {
			return fmt.Errorf("OXM field of %d bytes", len(f))
		}
		h := binary.BigEndian.Uint32(f)
		n := 4 + int(h&0xff)
		if len(f) < n {
			return fmt.Errorf("OXM field %#x of %d bytes in %d", h, n, len(f))
		}
		fn(h, f[:n], f[4:n])
		f = f[n:]
	}
	return nil
}

func pad8(n int) int { return (n + 7) &^ 7 }

// Error is an OFPT_ERROR from the switch (or a malformed message it sent).
type Error struct {
	XID        uint32
	Type, Code uint16
	Text       string // set instead of Type and Code for a malformed message
}

// errorTypes names OpenFlow 1.3's error types (ofp_error_type).
var errorTypes = map[uint16]string{
	0: "HELLO_FAILED", 1: "BAD_REQUEST", 2: "BAD_ACTION", 3: "BAD_INSTRUCTION", 4: "BAD_MATCH",
	5: "FLOW_MOD_FAILED", 6: "GROUP_MOD_FAILED", 7: "PORT_MOD_FAILED", 8: "TABLE_MOD_FAILED",
	9: "QUEUE_OP_FAILED", 10: "SWITCH_CONFIG_FAILED", 11: "ROLE_REQUEST_FAILED", 12: "METER_MOD_FAILED",
	13: "TABLE_FEATURES_FAILED", 0xffff: "EXPERIMENTER",
}

func (e *Error) Error() string {
	if e.Text != "" {
		return e.Text
	}
	return fmt.Sprintf("OpenFlow error %s (type %d) code %d", errorTypes[e.Type], e.Type, e.Code)
}

func parseError(xid uint32, body []byte) *Error {
	if len(body) < 4 {
		return &Error{XID: xid, Text: fmt.Sprintf("OpenFlow error message of %d bytes", len(body))}
	}
	return &Error{XID: xid, Type: binary.BigEndian.Uint16(body), Code: binary.BigEndian.Uint16(body[2:])}
}
