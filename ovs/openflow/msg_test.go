package openflow

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/ethfab/ethfab/controller"
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
	m = be.AppendUint32(m, OXMInPort)
	m = be.AppendUint32(m, inPort)
	be.PutUint16(m[2:], uint16(len(m)))
	for len(m)%8 != 0 {
		m = append(m, 0)
	}
	b := make([]byte, 16) // buffer_id, total_len, reason, table_id, cookie
	be.PutUint32(b, NoBuffer)
	be.PutUint16(b[4:], uint16(len(frame)))
	b = append(b, m...)
	b = append(b, 0, 0)
	return append(b, frame...)
}

func TestParsePacketIn(t *testing.T) {
	frame := []byte("0123456789abcdef-a-cnm")
	for _, extra := range []bool{false, true} {
		in, f, err := ParsePacketIn(packetInBody(7, frame, extra))
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
		if _, _, err := ParsePacketIn(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	// PACKET_OUT: header, NO_BUFFER from CONTROLLER, one output action.
	out := PacketOut(9, 5, frame)
	be := binary.BigEndian
	if out[1] != TypePacketOut || int(be.Uint16(out[2:])) != len(out) || be.Uint32(out[12:]) != PortController ||
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
		_, frame, err := ParsePacketIn(b)
		if err == nil && len(frame) > len(b) {
			t.Fatalf("frame of %d bytes from a body of %d", len(frame), len(b))
		}
	})
}

// flowStatsBody is one OFPMP_FLOW reply body (after the multipart header)
// with an entry per match, each carrying instrs.
func flowStatsBody(matches [][]byte, instrs []byte) []byte {
	be := binary.BigEndian
	var b []byte
	for k, m := range matches {
		e := make([]byte, 48)
		e[2] = byte(k)
		be.PutUint16(e[12:], uint16(100+k))
		be.PutUint64(e[24:], uint64(k+1))
		mt := be.AppendUint16(be.AppendUint16(nil, 1), uint16(4+len(m)))
		mt = append(mt, m...)
		for len(mt)%8 != 0 {
			mt = append(mt, 0)
		}
		e = append(append(e, mt...), instrs...)
		be.PutUint16(e, uint16(len(e)))
		b = append(b, e...)
	}
	return b
}

func TestParseFlowStats(t *testing.T) {
	inPort := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, OXMInPort), 3)
	instr := []byte{0, 1, 0, 8, 2, 0, 0, 0} // goto_table:2
	flows, err := parseFlowStats(nil, flowStatsBody([][]byte{nil, inPort}, instr))
	if err != nil || len(flows) != 2 {
		t.Fatalf("%d flows, %v", len(flows), err)
	}
	if f := flows[1]; f.Table != 1 || f.Priority != 101 || f.Cookie != 2 || !bytes.Equal(f.Match, inPort) || !bytes.Equal(f.Instructions, instr) {
		t.Errorf("flow %+v", f)
	}
	good := flowStatsBody([][]byte{inPort}, instr)
	for name, b := range map[string][]byte{
		"short":     good[:40],
		"long":      append(slices.Clone(good), 0),
		"truncated": good[:len(good)-1],
	} {
		if _, err := parseFlowStats(nil, b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// FuzzParseFlowStats: whatever a switch sends, the parser never reads
// past the body, and what it returns lies inside it.
func FuzzParseFlowStats(f *testing.F) {
	inPort := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, OXMInPort), 3)
	f.Add(flowStatsBody([][]byte{nil, inPort}, []byte{0, 1, 0, 8, 2, 0, 0, 0}))
	f.Add(flowStatsBody([][]byte{inPort}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		flows, err := parseFlowStats(nil, b)
		if err != nil {
			return
		}
		n := 0
		for _, fl := range flows {
			n += 48 + len(fl.Match) + len(fl.Instructions)
			key(fl.Table, fl.Priority, fl.Match)
		}
		if n > len(b) {
			t.Fatalf("%d bytes of flows from a body of %d", n, len(b))
		}
	})
}

func portStatsBody(ports ...uint32) []byte {
	var b []byte
	for k, p := range ports {
		e := make([]byte, portStatsLen)
		binary.BigEndian.PutUint32(e, p)
		for i := range 8 {
			binary.BigEndian.PutUint64(e[8+8*i:], uint64(100*k+i))
		}
		b = append(b, e...)
	}
	return b
}

func TestParsePortStats(t *testing.T) {
	ps, err := parsePortStats(nil, portStatsBody(1, PortLocal))
	if err != nil || len(ps) != 2 {
		t.Fatalf("%d ports, %v", len(ps), err)
	}
	if p := ps[1]; p.Port != PortLocal || p.RxPackets != 100 || p.TxPackets != 101 || p.RxBytes != 102 || p.TxBytes != 103 ||
		p.RxDrops != 104 || p.TxDrops != 105 || p.RxErrors != 106 || p.TxErrors != 107 {
		t.Errorf("port %+v", p)
	}
	if _, err := parsePortStats(nil, portStatsBody(1)[:100]); err == nil {
		t.Error("a truncated entry parsed")
	}
}

// FuzzParsePortStats: whatever a switch sends, the parser takes whole
// entries only and never reads past the body.
func FuzzParsePortStats(f *testing.F) {
	f.Add(portStatsBody(1, 2))
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := parsePortStats(nil, b)
		if err == nil && len(ps)*portStatsLen != len(b) {
			t.Fatalf("%d ports from %d bytes", len(ps), len(b))
		}
	})
}

// A rule too long for one bundled OpenFlow message is refused, not
// truncated by the 16-bit length.
func TestFlowModTooLong(t *testing.T) {
	r := controller.Rule{Priority: 1, Out: make([]int32, 5000)}
	for i := range r.Out {
		r.Out[i] = int32(i + 1)
	}
	if _, err := AppendFlowMod(nil, 1, FlowAdd, &r); err == nil {
		t.Fatal("a flow mod of 5,000 outputs (80 kB) was encoded")
	}
	r.Out = r.Out[:100]
	b, err := AppendFlowMod(nil, 1, FlowAdd, &r)
	if err != nil || int(binary.BigEndian.Uint16(b[2:])) != len(b) {
		t.Fatalf("100 outputs: %d bytes, header says %d, %v", len(b), binary.BigEndian.Uint16(b[2:]), err)
	}
}
