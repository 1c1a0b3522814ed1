package condition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethfab/ethfab/emulator/controller"
)

// OpenFlow 1.3 message types and constants this package speaks. The
// messages are few and fixed, so they are encoded by hand: no library
// round trip, no allocation per flip beyond one 88-byte buffer.
const (
	ofVersion      = 0x04
	ofHello        = 0
	ofError        = 1
	ofEchoRequest  = 2
	ofEchoReply    = 3
	ofFlowMod      = 14
	ofBarrierReq   = 20
	ofBarrierReply = 21
	ofMultipartReq = 18
	ofMultipartRep = 19

	ofmpFlow       = 1    // OFPMP_FLOW
	ofmpfReplyMore = 1    // OFPMPF_REPLY_MORE
	ofTableAll     = 0xff // OFPTT_ALL

	ofModifyStrict = 2
	ofNoBuffer     = 0xffffffff
	ofAny          = 0xffffffff

	ofInstGoto          = 1
	ofInstWriteMetadata = 2
)

// ofConn is a persistent OpenFlow 1.3 connection to one bridge's
// management socket. Writes are serialized; a reader goroutine answers
// echo requests, wakes barrier waiters and counts errors.
type ofConn struct {
	c      net.Conn
	wmu    sync.Mutex
	xid    atomic.Uint32
	mu     sync.Mutex
	wait   map[uint32]chan struct{}
	stats  map[uint32]*statsWait
	errs   atomic.Uint64
	lastEr atomic.Value // string
	done   chan struct{}
}

// dialOF connects to "unix:PATH" (fabric.Switch.Mgmt) and says hello.
func dialOF(mgmt string) (*ofConn, error) {
	path, ok := strings.CutPrefix(mgmt, "unix:")
	if !ok {
		return nil, fmt.Errorf("management socket %q: want unix:PATH", mgmt)
	}
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("openflow connect: %w", err)
	}
	o := &ofConn{c: c, wait: map[uint32]chan struct{}{}, stats: map[uint32]*statsWait{}, done: make(chan struct{})}
	if err := o.write(header(ofHello, 8, 0)); err != nil {
		c.Close()
		return nil, err
	}
	// The switch's hello comes first; anything but OpenFlow 1.3 means the
	// bridge does not speak it.
	var h [8]byte
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, h[:]); err != nil {
		c.Close()
		return nil, fmt.Errorf("openflow hello: %w", err)
	}
	if h[0] != ofVersion || h[1] != ofHello {
		c.Close()
		return nil, fmt.Errorf("openflow hello: version %d type %d, want OpenFlow 1.3 hello", h[0], h[1])
	}
	if n := int(binary.BigEndian.Uint16(h[2:])) - 8; n > 0 {
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.SetReadDeadline(time.Time{})
	go o.read()
	return o, nil
}

func header(typ uint8, length int, xid uint32) []byte {
	b := make([]byte, length)
	b[0], b[1] = ofVersion, typ
	binary.BigEndian.PutUint16(b[2:], uint16(length))
	binary.BigEndian.PutUint32(b[4:], xid)
	return b
}

func (o *ofConn) write(b []byte) error {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	if _, err := o.c.Write(b); err != nil {
		return fmt.Errorf("openflow write: %w", err)
	}
	return nil
}

func (o *ofConn) read() {
	defer close(o.done)
	var h [8]byte
	for {
		if _, err := io.ReadFull(o.c, h[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(h[2:]))
		body := make([]byte, max(n-8, 0))
		if _, err := io.ReadFull(o.c, body); err != nil {
			return
		}
		xid := binary.BigEndian.Uint32(h[4:])
		switch h[1] {
		case ofEchoRequest:
			r := header(ofEchoReply, n, xid)
			copy(r[8:], body)
			o.write(r)
		case ofError:
			var msg string
			if len(body) >= 4 {
				msg = fmt.Sprintf("OpenFlow error type %d code %d", binary.BigEndian.Uint16(body), binary.BigEndian.Uint16(body[2:]))
			}
			// A refused stats request is the prober's error, not a
			// rejected FlowMod.
			if o.finishStats(xid, 0, errors.New(msg)) {
				continue
			}
			o.errs.Add(1)
			if msg != "" {
				o.lastEr.Store(msg)
			}
		case ofMultipartRep:
			o.flowStatsReply(xid, body)
		case ofBarrierReply:
			o.mu.Lock()
			if ch, ok := o.wait[xid]; ok {
				close(ch)
				delete(o.wait, xid)
			}
			o.mu.Unlock()
		}
	}
}

// conditionFlowMod rewrites the table-0 rule that loads the condition
// bitmask (controller: KindCondition, priority 0, no match): one
// OFPFC_MODIFY_STRICT, so the switch swaps the value atomically and keeps
// the rule's counters.
func conditionFlowMod(xid uint32, mask uint64) []byte {
	const n = 48 + 8 + 24 + 8
	b := header(ofFlowMod, n, xid)
	be := binary.BigEndian
	cookie := controller.KindCondition.Cookie()
	be.PutUint64(b[8:], cookie)
	be.PutUint64(b[16:], ^uint64(0)) // cookie_mask: only ethfab's loader
	b[24] = controller.TableCondition
	b[25] = ofModifyStrict
	// idle/hard timeout 0, priority 0 (controller.PrioMiss)
	be.PutUint16(b[30:], controller.PrioMiss)
	be.PutUint32(b[32:], ofNoBuffer)
	be.PutUint32(b[36:], ofAny) // out_port
	be.PutUint32(b[40:], ofAny) // out_group
	// flags 0: keep the counters
	// ofp_match: OXM, no fields, padded to 8.
	be.PutUint16(b[48:], 1)
	be.PutUint16(b[50:], 4)
	i := b[56:]
	be.PutUint16(i[0:], ofInstWriteMetadata)
	be.PutUint16(i[2:], 24)
	be.PutUint64(i[8:], mask)
	be.PutUint64(i[16:], ^uint64(0))
	be.PutUint16(i[24:], ofInstGoto)
	be.PutUint16(i[26:], 8)
	i[28] = controller.TableRouting
	return b
}

// setMask sends the FlowMod; with sync it also waits for a barrier, so the
// switch has applied it on return.
func (o *ofConn) setMask(mask uint64, sync bool) error {
	if err := o.write(conditionFlowMod(o.xid.Add(1), mask)); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	return o.barrier(5 * time.Second)
}

// setMaskAcked sends the FlowMod followed by a barrier in one write and
// returns the channel the barrier reply closes: the switch has applied
// the change to its flow table (its datapath follows when revalidated).
func (o *ofConn) setMaskAcked(mask uint64) (<-chan struct{}, error) {
	xid := o.xid.Add(1)
	ch := make(chan struct{})
	o.mu.Lock()
	o.wait[xid] = ch
	o.mu.Unlock()
	msg := append(conditionFlowMod(o.xid.Add(1), mask), header(ofBarrierReq, 8, xid)...)
	if err := o.write(msg); err != nil {
		o.mu.Lock()
		delete(o.wait, xid)
		o.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

func (o *ofConn) barrier(timeout time.Duration) error {
	xid := o.xid.Add(1)
	ch := make(chan struct{})
	o.mu.Lock()
	o.wait[xid] = ch
	o.mu.Unlock()
	errs := o.errs.Load()
	if err := o.write(header(ofBarrierReq, 8, xid)); err != nil {
		return err
	}
	select {
	case <-ch:
	case <-o.done:
		return errors.New("openflow connection closed")
	case <-time.After(timeout):
		return errors.New("openflow barrier timed out")
	}
	if o.errs.Load() != errs {
		s, _ := o.lastEr.Load().(string)
		return fmt.Errorf("switch rejected the condition FlowMod: %s", s)
	}
	return nil
}

func (o *ofConn) close() {
	o.c.Close()
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	for xid, w := range o.stats {
		w.ch <- statsResult{err: errors.New("openflow connection closed")}
		delete(o.stats, xid)
	}
}

// flowStatsRequest asks for the rules of every table with this exact
// cookie (and, unless outPort is ofAny, an output to outPort):
// OFPT_MULTIPART_REQUEST, OFPMP_FLOW, an empty match. 56 bytes.
func flowStatsRequest(xid uint32, cookie uint64, outPort uint32) []byte {
	const n = 16 + 32 + 8
	b := header(ofMultipartReq, n, xid)
	be := binary.BigEndian
	be.PutUint16(b[8:], ofmpFlow)
	// flags 0, pad 4
	r := b[16:]
	r[0] = ofTableAll
	be.PutUint32(r[4:], outPort)
	be.PutUint32(r[8:], ofAny) // out_group
	be.PutUint64(r[16:], cookie)
	be.PutUint64(r[24:], ^uint64(0)) // cookie_mask: exactly this cookie
	be.PutUint16(r[32:], 1)          // OFPMT_OXM
	be.PutUint16(r[34:], 4)          // no fields
	return b
}

// parseFlowStats sums packet_count over the ofp_flow_stats entries of one
// OFPMP_FLOW reply body (after the 8-byte header); more is
// OFPMPF_REPLY_MORE: further replies with the same xid follow.
func parseFlowStats(body []byte) (packets uint64, more bool, err error) {
	be := binary.BigEndian
	if len(body) < 8 {
		return 0, false, fmt.Errorf("multipart reply: %d bytes", len(body))
	}
	if t := be.Uint16(body); t != ofmpFlow {
		return 0, false, fmt.Errorf("multipart reply type %d, want OFPMP_FLOW", t)
	}
	more = be.Uint16(body[2:])&ofmpfReplyMore != 0
	for e := body[8:]; len(e) > 0; {
		// ofp_flow_stats: length, table_id, pad, duration (8), priority,
		// idle/hard timeout, flags, pad (4), cookie, packet_count at 32.
		if len(e) < 48 {
			return 0, false, fmt.Errorf("flow stats entry: %d bytes left", len(e))
		}
		l := int(be.Uint16(e))
		if l < 48 || l > len(e) {
			return 0, false, fmt.Errorf("flow stats entry length %d, %d bytes left", l, len(e))
		}
		packets += be.Uint64(e[32:])
		e = e[l:]
	}
	return packets, more, nil
}

type statsResult struct {
	packets uint64
	err     error
}

type statsWait struct {
	sum uint64
	ch  chan statsResult // buffered: the reader never blocks on it
}

// statsMsg registers a flow-stats request and returns it unsent, so a
// caller can put it in the same write as a FlowMod: the switch handles a
// connection's messages in order, so a request written just before the
// FlowMod reads the counters as they were before it.
func (o *ofConn) statsMsg(cookie uint64, outPort uint32) ([]byte, <-chan statsResult) {
	xid := o.xid.Add(1)
	w := &statsWait{ch: make(chan statsResult, 1)}
	o.mu.Lock()
	o.stats[xid] = w
	o.mu.Unlock()
	return flowStatsRequest(xid, cookie, outPort), w.ch
}

// flowPackets is one flow-stats round trip: the summed packet count of the
// rules with this cookie (and output port).
func (o *ofConn) flowPackets(cookie uint64, outPort uint32, timeout time.Duration) (uint64, error) {
	msg, ch := o.statsMsg(cookie, outPort)
	if err := o.write(msg); err != nil {
		o.finishStats(binary.BigEndian.Uint32(msg[4:]), 0, err)
		<-ch
		return 0, err
	}
	return o.waitStats(msg, ch, timeout)
}

// waitStats waits for the reply to msg (from statsMsg).
func (o *ofConn) waitStats(msg []byte, ch <-chan statsResult, timeout time.Duration) (uint64, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.packets, r.err
	case <-t.C:
		o.finishStats(binary.BigEndian.Uint32(msg[4:]), 0, nil) // forget it
		return 0, errors.New("openflow flow stats timed out")
	}
}

func (o *ofConn) flowStatsReply(xid uint32, body []byte) {
	n, more, err := parseFlowStats(body)
	o.mu.Lock()
	w, ok := o.stats[xid]
	if ok {
		w.sum += n
	}
	o.mu.Unlock()
	if ok && (!more || err != nil) {
		o.finishStats(xid, 0, err)
	}
}

// finishStats hands the summed count (plus add) or err to the waiter of
// xid; false if nobody waits on xid.
func (o *ofConn) finishStats(xid uint32, add uint64, err error) bool {
	o.mu.Lock()
	w, ok := o.stats[xid]
	delete(o.stats, xid)
	o.mu.Unlock()
	if ok {
		w.ch <- statsResult{packets: w.sum + add, err: err}
	}
	return ok
}

func xidOf(msg []byte) uint32 {
	return uint32(msg[4])<<24 | uint32(msg[5])<<16 | uint32(msg[6])<<8 | uint32(msg[7])
}
