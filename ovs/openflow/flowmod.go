package openflow

import (
	"encoding/binary"
	"fmt"

	"github.com/ethfab/ethfab/controller"
)

// OXM and Nicira match fields and action codes the controller's rules use
// (openflow-1.3.h, nicira-ext.h, meta-flow.xml).
const (
	matchOXM = 1 // OFPMT_OXM

	oxmMetadataMasked = 0x80000510 // OXM_OF_METADATA_W
	oxmEthDst         = 0x80000606
	oxmEthDstMasked   = 0x8000070c
	oxmEthSrc         = 0x80000806
	oxmEthType        = 0x80000a02
	oxmVLANVID        = 0x80000c02
	oxmVLANVIDMasked  = 0x80000d04
	nxmReg0           = 0x00010004 // NXM_NX_REG0
	nxmInPort         = 0x00000002 // NXM_OF_IN_PORT
	nxmEthDst         = 0x00000206
	nxmEthSrc         = 0x00000406
	nxmVLANTCI        = 0x00000802

	vidPresent = 0x1000 // OFPVID_PRESENT

	actionPushVLAN = 17
	actionPopVLAN  = 18
	actionSetField = 25
	actionVendor   = 0xffff
	nxVendor       = 0x00002320
	nxRegLoad      = 7  // NXAST_REG_LOAD
	nxResubmitTbl  = 14 // NXAST_RESUBMIT_TABLE
	nxLearn        = 16 // NXAST_LEARN
	ofppInPort10   = 0xfff8

	// learn's flow_mod_spec header bits (nicira-ext.h).
	learnSrcField = 0 << 13
	learnDstMatch = 0 << 11
	learnDstLoad  = 1 << 11
)

// be is the byte order of every OpenFlow field.
var be = binary.BigEndian

// AppendFlowMod appends an OFPT_FLOW_MOD for rule r with command cmd
// (FlowAdd; FlowDeleteStrict and FlowModifyStrict match r's table,
// priority and match).
func AppendFlowMod(b []byte, xid uint32, cmd uint8, r *controller.Rule) ([]byte, error) {
	start := len(b)
	b = append(b, make([]byte, 48)...)
	m := b[start:]
	be.PutUint64(m[8:], r.Kind.Cookie())
	m[24], m[25] = r.Table, cmd
	// idle and hard timeout 0: permanent
	be.PutUint16(m[30:], r.Priority)
	be.PutUint32(m[32:], NoBuffer)
	be.PutUint32(m[36:], PortAny)
	be.PutUint32(m[40:], GroupAny)
	// flags 0: a replaced flow keeps its counters
	b = appendMatch(b, r)
	if cmd != FlowDeleteStrict {
		var err error
		if b, err = appendInstructions(b, r); err != nil {
			return nil, err
		}
	}
	// It must fit OpenFlow's 16-bit length inside a bundle message too.
	if limit := maxMessage - experimenterFixed - 8; len(b)-start > limit {
		return nil, fmt.Errorf("flow mod of %d bytes: a bundled one holds at most %d", len(b)-start, limit)
	}
	putHeader(b[start:], TypeFlowMod, len(b)-start, xid)
	return b, nil
}

// appendMatch appends r's ofp_match: its OXM fields, padded to 8 bytes.
func appendMatch(b []byte, r *controller.Rule) []byte {
	start := len(b)
	b = append(b, 0, matchOXM, 0, 0)
	mt := &r.Match
	if mt.InPort != 0 {
		b = be.AppendUint32(be.AppendUint32(b, OXMInPort), uint32(mt.InPort))
	}
	if r.Cond != 0 {
		// metadata=0/(1<<CondBit): the rule holds while its port's bit is clear
		b = be.AppendUint64(be.AppendUint64(be.AppendUint32(b, oxmMetadataMasked), 0), uint64(1)<<r.CondBit)
	}
	if mt.Reg0Set {
		b = be.AppendUint32(be.AppendUint32(b, nxmReg0), uint32(mt.Reg0))
	}
	if mt.Src != 0 {
		b = appendMAC(be.AppendUint32(b, oxmEthSrc), uint64(mt.Src))
	}
	switch mt.DstMask {
	case 0:
	case controller.Broadcast:
		b = appendMAC(be.AppendUint32(b, oxmEthDst), uint64(mt.Dst))
	default:
		b = appendMAC(appendMAC(be.AppendUint32(b, oxmEthDstMasked), uint64(mt.Dst)), uint64(mt.DstMask))
	}
	if mt.DlType != 0 {
		b = be.AppendUint16(be.AppendUint32(b, oxmEthType), mt.DlType)
	}
	switch mt.VLAN {
	case 0:
	case controller.VLANUntagged:
		b = be.AppendUint16(be.AppendUint32(b, oxmVLANVID), 0) // OFPVID_NONE
	case controller.VLANTagged:
		b = be.AppendUint16(be.AppendUint16(be.AppendUint32(b, oxmVLANVIDMasked), vidPresent), vidPresent)
	default:
		b = be.AppendUint16(be.AppendUint32(b, oxmVLANVID), vidPresent|mt.VLAN)
	}
	be.PutUint16(b[start+2:], uint16(len(b)-start))
	return append(b, make([]byte, pad8(len(b)-start)-(len(b)-start))...)
}

func appendMAC(b []byte, mac uint64) []byte {
	return append(b, byte(mac>>40), byte(mac>>32), byte(mac>>24), byte(mac>>16), byte(mac>>8), byte(mac))
}

// appendInstructions appends r's instructions in the order OpenFlow 1.3
// runs them: apply its actions, write the metadata, go to a table.
func appendInstructions(b []byte, r *controller.Rule) ([]byte, error) {
	start := len(b)
	b = append(b, 0, instructionApply, 0, 0, 0, 0, 0, 0)
	if r.LoadReg0 {
		// NXAST_REG_LOAD of 0 into bits 0..31 (ofs_nbits: offset 0 << 6 |
		// n_bits - 1), as ovs-ofctl encodes load:0->NXM_NX_REG0[].
		b = be.AppendUint16(be.AppendUint16(b, actionVendor), 24)
		b = be.AppendUint16(be.AppendUint32(b, nxVendor), nxRegLoad)
		b = be.AppendUint64(be.AppendUint32(be.AppendUint16(b, 31), nxmReg0), 0)
	}
	if l := r.Learn; l != nil {
		b = appendLearn(b, l)
	}
	for _, t := range r.Resubmit {
		b = be.AppendUint16(be.AppendUint16(b, actionVendor), 16)
		b = be.AppendUint16(be.AppendUint32(b, nxVendor), nxResubmitTbl)
		b = append(be.AppendUint16(b, ofppInPort10), t, 0, 0, 0)
	}
	if r.PopVLAN {
		b = append(be.AppendUint16(be.AppendUint16(b, actionPopVLAN), 8), 0, 0, 0, 0)
	}
	if r.PushVLAN != 0 {
		if r.PushVLAN > 0xfff {
			return nil, fmt.Errorf("push VLAN %d: 802.1Q has 12 bits", r.PushVLAN)
		}
		b = append(be.AppendUint16(be.AppendUint16(be.AppendUint16(b, actionPushVLAN), 8), 0x8100), 0, 0)
		b = appendSetField(b, oxmVLANVID, be.AppendUint16(nil, vidPresent|r.PushVLAN))
	}
	if r.SetSrc != 0 {
		b = appendSetField(b, oxmEthSrc, appendMAC(nil, uint64(r.SetSrc)))
	}
	if r.SetDst != 0 {
		b = appendSetField(b, oxmEthDst, appendMAC(nil, uint64(r.SetDst)))
	}
	if r.Controller != 0 {
		b = appendOutput(b, PortController, r.Controller)
	}
	for _, p := range r.Out {
		b = appendOutput(b, outPort(p), 0)
	}
	if len(r.Untagged) > 0 {
		b = append(be.AppendUint16(be.AppendUint16(b, actionPopVLAN), 8), 0, 0, 0, 0)
		for _, p := range r.Untagged {
			b = appendOutput(b, outPort(p), 0)
		}
	}
	if len(b)-start == 8 {
		b = b[:start] // no actions: drop; Open vSwitch lists no empty instruction
	} else {
		be.PutUint16(b[start+2:], uint16(len(b)-start))
	}
	if r.WriteCond {
		b = append(be.AppendUint16(be.AppendUint16(b, InstructionMetadata), 24), 0, 0, 0, 0)
		b = be.AppendUint64(be.AppendUint64(b, 0), ^uint64(0))
	}
	if r.Goto != 0 {
		b = append(be.AppendUint16(be.AppendUint16(b, InstructionGoto), 8), r.Goto, 0, 0, 0)
	}
	return b, nil
}

func outPort(p int32) uint32 {
	if p == controller.PortInPort {
		return PortInPort
	}
	return uint32(p)
}

// appendOutput appends an ofp_action_output; maxLen matters only for the
// controller.
func appendOutput(b []byte, port uint32, maxLen uint16) []byte {
	b = be.AppendUint16(be.AppendUint16(b, actionOutput), 16)
	b = be.AppendUint16(be.AppendUint32(b, port), maxLen)
	return append(b, 0, 0, 0, 0, 0, 0)
}

// appendSetField appends an OFPAT_SET_FIELD of one OXM (or NXM) field.
func appendSetField(b []byte, header uint32, value []byte) []byte {
	n := pad8(4 + 4 + len(value))
	b = be.AppendUint16(be.AppendUint16(b, actionSetField), uint16(n))
	b = append(be.AppendUint32(b, header), value...)
	return append(b, make([]byte, n-8-len(value))...)
}

// appendLearn appends the NXAST_LEARN of the learning VLAN bridge
// (controller.Learn): match NXM_OF_VLAN_TCI[0..11] and
// NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[], load NXM_OF_IN_PORT[] into
// NXM_NX_REG0[0..15].
func appendLearn(b []byte, l *controller.Learn) []byte {
	start := len(b)
	b = be.AppendUint16(be.AppendUint16(b, actionVendor), 0) // length below
	b = be.AppendUint16(be.AppendUint32(b, nxVendor), nxLearn)
	b = be.AppendUint16(be.AppendUint16(be.AppendUint16(b, 0), l.HardTimeout), l.Priority) // idle, hard, priority
	b = be.AppendUint64(b, 0)                                                              // cookie
	b = append(be.AppendUint16(b, 0), l.Table, 0)                                          // flags, table, pad
	b = be.AppendUint16(be.AppendUint16(b, 0), 0)                                          // fin idle and hard timeouts
	spec := func(hdr uint16, src, dst uint32) {
		b = be.AppendUint16(b, hdr)
		b = be.AppendUint16(be.AppendUint32(b, src), 0)
		b = be.AppendUint16(be.AppendUint32(b, dst), 0)
	}
	spec(learnSrcField|learnDstMatch|12, nxmVLANTCI, nxmVLANTCI)
	spec(learnSrcField|learnDstMatch|48, nxmEthSrc, nxmEthDst)
	spec(learnSrcField|learnDstLoad|16, nxmInPort, nxmReg0)
	b = append(b, make([]byte, pad8(len(b)-start)-(len(b)-start))...)
	be.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}
