package condition

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"
)

// The flow-stats request, byte for byte as OpenFlow 1.3.x lays out
// ofp_header + ofp_multipart_request + ofp_flow_stats_request (§7.3.5.2).
func TestFlowStatsRequestLayout(t *testing.T) {
	got := flowStatsRequest(0x01020304, 0x9, 7)
	want := []byte{
		0x04, 18, 0x00, 56, 0x01, 0x02, 0x03, 0x04, // OF1.3, MULTIPART_REQUEST, length 56, xid
		0x00, 0x01, 0x00, 0x00, 0, 0, 0, 0, // OFPMP_FLOW, flags 0, pad
		0xff, 0, 0, 0, // table_id OFPTT_ALL, pad
		0, 0, 0, 7, // out_port
		0xff, 0xff, 0xff, 0xff, // out_group OFPG_ANY
		0, 0, 0, 0, // pad
		0, 0, 0, 0, 0, 0, 0, 0x9, // cookie
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // cookie_mask
		0x00, 0x01, 0x00, 0x04, 0, 0, 0, 0, // ofp_match: OXM, length 4, pad
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("request\n got % x\nwant % x", got, want)
	}
	if any := flowStatsRequest(1, 0x9, ofAny); binary.BigEndian.Uint32(any[20:]) != 0xffffffff {
		t.Fatalf("out_port ANY: % x", any[20:24])
	}
}

// flowStatsEntry is one ofp_flow_stats with an in_port match and a
// goto-table instruction, as OVS sends them.
func flowStatsEntry(cookie, packets uint64) []byte {
	e := []byte{
		0, 0, 1, 0, // length (set below), table_id 1, pad
		0, 0, 0, 5, 0, 0, 0, 9, // duration sec, nsec
		0x3a, 0x98, 0, 0, 0, 0, 0, 0, // priority 15000, idle, hard, flags
		0, 0, 0, 0, // pad
		0, 0, 0, 0, 0, 0, 0, 0, // cookie
		0, 0, 0, 0, 0, 0, 0, 0, // packet_count
		0, 0, 0, 0, 0, 0, 0x05, 0xdc, // byte_count
		// ofp_match: OXM, length 12: in_port=3; padded to 16
		0x00, 0x01, 0x00, 0x0c, 0x80, 0x00, 0x00, 0x04, 0, 0, 0, 3, 0, 0, 0, 0,
		// OFPIT_APPLY_ACTIONS, length 24: output:2 (max_len 0)
		0x00, 0x04, 0x00, 0x18, 0, 0, 0, 0,
		0x00, 0x00, 0x00, 0x10, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0,
	}
	binary.BigEndian.PutUint16(e, uint16(len(e)))
	binary.BigEndian.PutUint64(e[24:], cookie)
	binary.BigEndian.PutUint64(e[32:], packets)
	return e
}

func flowStatsBody(more bool, entries ...[]byte) []byte {
	b := []byte{0x00, 0x01, 0x00, 0x00, 0, 0, 0, 0}
	if more {
		b[3] = 1
	}
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

func TestParseFlowStats(t *testing.T) {
	n, more, err := parseFlowStats(flowStatsBody(true, flowStatsEntry(9, 40), flowStatsEntry(9, 2)))
	if err != nil || n != 42 || !more {
		t.Fatalf("got %d, more %v, %v; want 42, more", n, more, err)
	}
	if n, more, err := parseFlowStats(flowStatsBody(false)); err != nil || n != 0 || more {
		t.Fatalf("empty reply: %d %v %v", n, more, err)
	}
	bad := flowStatsBody(false, flowStatsEntry(9, 1))
	binary.BigEndian.PutUint16(bad[8:], 200) // entry longer than the message
	if _, _, err := parseFlowStats(bad); err == nil {
		t.Fatal("an entry past the end parsed")
	}
	port := flowStatsBody(false)
	binary.BigEndian.PutUint16(port, 4) // OFPMP_PORT_STATS
	if _, _, err := parseFlowStats(port); err == nil {
		t.Fatal("a port-stats reply parsed as flow stats")
	}
}

// A reply split with OFPMPF_REPLY_MORE is summed over its parts, and an
// OpenFlow error for the request's xid ends the wait with an error
// without counting as a rejected FlowMod.
func TestFlowStatsReplyMore(t *testing.T) {
	a, b := net.Pipe()
	o := &ofConn{c: a, wait: map[uint32]chan struct{}{}, stats: map[uint32]*statsWait{}, done: make(chan struct{})}
	go o.read()
	defer o.close()
	defer b.Close()
	msg := func(typ uint8, xid uint32, body []byte) []byte {
		h := header(typ, 8+len(body), xid)
		copy(h[8:], body)
		return h
	}
	req, ch := o.statsMsg(9, ofAny)
	xid := xidOf(req)
	go func() {
		b.Write(msg(ofMultipartRep, xid, flowStatsBody(true, flowStatsEntry(9, 5))))
		b.Write(msg(ofMultipartRep, xid+1000, flowStatsBody(false, flowStatsEntry(9, 1000)))) // not ours
		b.Write(msg(ofMultipartRep, xid, flowStatsBody(false, flowStatsEntry(9, 7), flowStatsEntry(9, 1))))
	}()
	n, err := o.waitStats(req, ch, 2*time.Second)
	if err != nil || n != 13 {
		t.Fatalf("got %d, %v; want 13", n, err)
	}
	req, ch = o.statsMsg(9, ofAny)
	go b.Write(msg(ofError, xidOf(req), []byte{0, 1, 0, 2})) // BAD_REQUEST, BAD_MULTIPART
	if _, err := o.waitStats(req, ch, 2*time.Second); err == nil {
		t.Fatal("an error reply gave a count")
	}
	if o.errs.Load() != 0 {
		t.Fatal("a stats error counted as a FlowMod error")
	}
}
