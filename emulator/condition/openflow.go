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

	"github.com/ethfab/ethfab/controller"
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
	ofSetConfig    = 9
	ofPacketIn     = 10
	ofPacketOut    = 13
	ofFlowMod      = 14
	ofBarrierReq   = 20
	ofBarrierReply = 21

	ofpController = 0xfffffffd // OFPP_CONTROLLER
	ofpatOutput   = 0
	oxmInPort     = 0x80000004 // OXM_OF_IN_PORT: class 0x8000, field 0, length 4

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
	errs   atomic.Uint64
	lastEr atomic.Value // string
	done   chan struct{}
	// packetIn, when set, gets every PACKET_IN: the port the frame came in
	// on, its first bytes (valid only during the call) and when it was read.
	packetIn atomic.Pointer[func(inPort uint32, frame []byte, at time.Time)]
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
	o := &ofConn{c: c, wait: map[uint32]chan struct{}{}, done: make(chan struct{})}
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

// writeTimeout bounds one OpenFlow message to a switch: a FlowMod is a
// few hundred bytes into a unix socket, written in microseconds when the
// switch is alive.
const writeTimeout = 5 * time.Second

func (o *ofConn) write(b []byte) error {
	_, err := o.writeAt(b)
	return err
}

// writeAt writes b and returns the instant just before the bytes went to
// the socket: the switch cannot act on them earlier, so a frame it
// forwards by them is seen after that instant (a time taken after Write
// returns can be later than such a frame: 0.14 ms was seen in CI).
func (o *ofConn) writeAt(b []byte) (time.Time, error) {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	// A switch that stopped reading (wedged, or its socket buffer full)
	// must fail the FlowMod, not block the condition logic for ever.
	at := time.Now()
	o.c.SetWriteDeadline(at.Add(writeTimeout))
	if _, err := o.c.Write(b); err != nil {
		return at, fmt.Errorf("openflow write: %w", err)
	}
	return at, nil
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
			o.errs.Add(1)
			if msg != "" {
				o.lastEr.Store(msg)
			}
		case ofPacketIn:
			if fn := o.packetIn.Load(); fn != nil {
				if in, frame, err := parsePacketIn(body); err == nil {
					(*fn)(in, frame, time.Now())
				} else {
					o.errs.Add(1)
					o.lastEr.Store(err.Error())
				}
			}
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

// receivePacketIns hands fn every PACKET_IN from now on. The management
// socket is a service connection, and Open vSwitch sends those no
// asynchronous message until they set a nonzero miss_send_len
// (connmgr.c, ofconn_receives_async_msg): so this sends SET_CONFIG with
// miss_send_len maxLen (spec §0.5's pitfall) and a barrier, so that PACKET_INs
// flow when it returns.
func (o *ofConn) receivePacketIns(maxLen uint16, fn func(inPort uint32, frame []byte, at time.Time)) error {
	o.packetIn.Store(&fn)
	b := header(ofSetConfig, 12, o.xid.Add(1))
	// flags 0: OFPC_FRAG_NORMAL
	binary.BigEndian.PutUint16(b[10:], maxLen)
	if err := o.write(b); err != nil {
		return err
	}
	return o.barrier(5 * time.Second)
}

// packetOutMsg is an OFPT_PACKET_OUT of frame from the controller
// (buffer_id NO_BUFFER, in_port CONTROLLER) with one action: output on
// port.
func packetOutMsg(xid uint32, port uint32, frame []byte) []byte {
	const actions = 16 // one ofp_action_output
	b := header(ofPacketOut, 24+actions+len(frame), xid)
	be := binary.BigEndian
	be.PutUint32(b[8:], ofNoBuffer)
	be.PutUint32(b[12:], ofpController)
	be.PutUint16(b[16:], actions)
	a := b[24:]
	be.PutUint16(a[0:], ofpatOutput)
	be.PutUint16(a[2:], actions)
	be.PutUint32(a[4:], port)
	// max_len 0: only for output to the controller
	copy(b[24+actions:], frame)
	return b
}

// sendFrame sends frame out of the switch's port: a PACKET_OUT on the
// switch's own connection.
func (o *ofConn) sendFrame(port int, frame []byte) error {
	return o.write(packetOutMsg(o.xid.Add(1), uint32(port), frame))
}

// parsePacketIn reads an OpenFlow 1.3 PACKET_IN body (after the header):
// buffer_id, total_len, reason, table_id, cookie, an OXM match carrying
// in_port, padded to 8, 2 bytes of pad, then the frame.
func parsePacketIn(body []byte) (inPort uint32, frame []byte, err error) {
	be := binary.BigEndian
	const fixed = 16 // buffer_id 4, total_len 2, reason 1, table_id 1, cookie 8
	if len(body) < fixed+4 {
		return 0, nil, fmt.Errorf("packet-in: %d bytes", len(body))
	}
	m := body[fixed:]
	if typ := be.Uint16(m); typ != 1 {
		return 0, nil, fmt.Errorf("packet-in: match type %d, want OXM", typ)
	}
	mlen := int(be.Uint16(m[2:]))
	padded := (mlen + 7) / 8 * 8
	if mlen < 4 || len(m) < padded+2 {
		return 0, nil, fmt.Errorf("packet-in: match of %d bytes in %d", mlen, len(m))
	}
	found := false
	for f := m[4:mlen]; len(f) >= 4; {
		h := be.Uint32(f)
		n := 4 + int(h&0xff)
		if len(f) < n {
			return 0, nil, fmt.Errorf("packet-in: OXM field %#x of %d bytes in %d", h, n, len(f))
		}
		if h == oxmInPort {
			inPort, found = be.Uint32(f[4:]), true
		}
		f = f[n:]
	}
	if !found {
		return 0, nil, fmt.Errorf("packet-in without in_port")
	}
	return inPort, m[padded+2:], nil
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
func (o *ofConn) setMaskAcked(mask uint64) (<-chan struct{}, time.Time, error) {
	xid := o.xid.Add(1)
	ch := make(chan struct{})
	o.mu.Lock()
	o.wait[xid] = ch
	o.mu.Unlock()
	msg := append(conditionFlowMod(o.xid.Add(1), mask), header(ofBarrierReq, 8, xid)...)
	at, err := o.writeAt(msg)
	if err != nil {
		o.mu.Lock()
		delete(o.wait, xid)
		o.mu.Unlock()
		return nil, at, err
	}
	return ch, at, nil
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

func (o *ofConn) rejected() uint64 { return o.errs.Load() }

func (o *ofConn) close() {
	o.c.Close()
	<-o.done
}
