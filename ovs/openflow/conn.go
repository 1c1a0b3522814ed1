// Package openflow speaks OpenFlow 1.3 to an Open vSwitch bridge over its
// management socket: one persistent connection per bridge, on which a
// bridge's whole table goes in as one atomic bundle and is read back with
// flow-stats multipart requests (table.go), and on which the switch-local
// logic of conditional routing and QCN-Switch rewrites its rules and
// exchanges frames (emulator/condition).
//
// The messages are encoded by hand: the one Go library that knows Open
// vSwitch's extensions (antrea-io/libOpenflow) is not served by the module
// proxy here, and ethfab needs a dozen fixed message shapes. Forking
// ovs-ofctl instead cost 0.3 s a bridge (DF(4,8,4): 16,894 rules in 5.1 s
// of an 11.4 s up).
package openflow

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is a persistent OpenFlow 1.3 connection to one bridge. Writes are
// serialized; a reader goroutine answers echo requests, hands each reply to
// whoever waits for its xid, passes PACKET_INs on and keeps the errors no
// one waited for.
type Conn struct {
	c       net.Conn
	wmu     sync.Mutex
	xid     atomic.Uint32
	mu      sync.Mutex
	wait    map[uint32]*Pending
	errs    atomic.Uint64
	lastErr atomic.Pointer[Error]
	done    chan struct{}
	// packetIn, when set, gets every PACKET_IN: the port the frame came in
	// on, its first bytes (valid only during the call) and when it was read.
	packetIn atomic.Pointer[func(inPort uint32, frame []byte, at time.Time)]
}

// Pending is a request's replies, complete when Done is closed: every part
// of a multipart reply, or the one reply, or the error the switch sent.
type Pending struct {
	xid   uint32
	done  chan struct{}
	parts [][]byte // message bodies, after the 8-byte header
	err   *Error
}

// Done is closed once the reply is complete.
func (p *Pending) Done() <-chan struct{} { return p.done }

// dialTimeout bounds connecting and the hello exchange: a live switch
// answers in microseconds.
const dialTimeout = 5 * time.Second

// Dial connects to "unix:PATH" (a bridge's management socket) and says
// hello.
func Dial(mgmt string) (*Conn, error) {
	path, ok := strings.CutPrefix(mgmt, "unix:")
	if !ok {
		return nil, fmt.Errorf("management socket %q: want unix:PATH", mgmt)
	}
	// ovs-vswitchd opens a new bridge's socket on its next reconfiguration,
	// a few milliseconds after the database says the bridge exists.
	deadline := time.Now().Add(dialTimeout)
	var c net.Conn
	var err error
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		c, err = net.DialTimeout("unix", path, dialTimeout)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return nil, fmt.Errorf("openflow connect: %w", err)
		}
		time.Sleep(wait)
	}
	o := &Conn{c: c, wait: map[uint32]*Pending{}, done: make(chan struct{})}
	if err := o.Write(Header(TypeHello, 8, 0)); err != nil {
		c.Close()
		return nil, err
	}
	// The switch's hello comes first; anything but OpenFlow 1.3 means the
	// bridge does not speak it.
	var h [8]byte
	c.SetReadDeadline(time.Now().Add(dialTimeout))
	if _, err := io.ReadFull(c, h[:]); err != nil {
		c.Close()
		return nil, fmt.Errorf("openflow hello: %w", err)
	}
	if h[0] != Version || h[1] != TypeHello {
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

// NextXID returns a fresh transaction id.
func (o *Conn) NextXID() uint32 { return o.xid.Add(1) }

// writeTimeout bounds one write to a switch: a bridge's whole table is a
// few megabytes into a unix socket, written in milliseconds when the
// switch is alive.
const writeTimeout = 10 * time.Second

// Write sends b, one or more whole messages.
func (o *Conn) Write(b []byte) error {
	_, err := o.WriteAt(b)
	return err
}

// WriteAt writes b and returns the instant just before the bytes went to
// the socket: the switch cannot act on them earlier, so a frame it
// forwards by them is seen after that instant (a time taken after Write
// returns can be later than such a frame: 0.14 ms was seen in CI).
func (o *Conn) WriteAt(b []byte) (time.Time, error) {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	// A switch that stopped reading (wedged, or its socket buffer full)
	// must fail the write, not block its caller for ever.
	at := time.Now()
	o.c.SetWriteDeadline(at.Add(writeTimeout))
	if _, err := o.c.Write(b); err != nil {
		return at, fmt.Errorf("openflow write: %w", err)
	}
	return at, nil
}

// Expect registers interest in the reply to xid; call it before writing
// the request.
func (o *Conn) Expect(xid uint32) *Pending {
	p := &Pending{xid: xid, done: make(chan struct{})}
	o.mu.Lock()
	o.wait[xid] = p
	o.mu.Unlock()
	return p
}

// Forget drops interest in a reply that will not come (its request was
// never written).
func (o *Conn) Forget(p *Pending) {
	o.mu.Lock()
	delete(o.wait, p.xid)
	o.mu.Unlock()
}

// Await returns the reply's message bodies once complete, the switch's
// error, or an error when the connection closes, ctx ends or timeout
// passes (a switch that stopped answering: its database gone, say).
func (o *Conn) Await(ctx context.Context, p *Pending, timeout time.Duration) ([][]byte, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-o.done:
		o.Forget(p)
		return nil, errors.New("openflow connection closed")
	case <-ctx.Done():
		o.Forget(p)
		return nil, fmt.Errorf("openflow: %w", ctx.Err())
	case <-t.C:
		o.Forget(p)
		return nil, fmt.Errorf("openflow: no reply in %s", timeout)
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.parts, nil
}

// Request sends msg (its xid set by the caller, from NextXID) and waits
// for its reply.
func (o *Conn) Request(ctx context.Context, msg []byte, timeout time.Duration) ([][]byte, error) {
	p := o.Expect(binary.BigEndian.Uint32(msg[4:]))
	if err := o.Write(msg); err != nil {
		o.Forget(p)
		return nil, err
	}
	return o.Await(ctx, p, timeout)
}

// Barrier returns once the switch has processed every message sent
// before it: any error they caused has been counted by then.
func (o *Conn) Barrier(ctx context.Context, timeout time.Duration) error {
	_, err := o.Request(ctx, Header(TypeBarrierRequest, 8, o.NextXID()), timeout)
	return err
}

// BarrierMsg is a barrier request with a fresh xid, and its Pending, for
// a caller that sends it in one write with what it orders.
func (o *Conn) BarrierMsg() ([]byte, *Pending) {
	xid := o.NextXID()
	return Header(TypeBarrierRequest, 8, xid), o.Expect(xid)
}

// Rejected counts the switch's errors for messages no one awaited a reply
// to (e.g. FlowMods), and LastError is the latest of them.
func (o *Conn) Rejected() uint64 { return o.errs.Load() }

// LastError is the latest error counted by Rejected, or nil.
func (o *Conn) LastError() *Error { return o.lastErr.Load() }

// Close closes the connection and waits for its reader.
func (o *Conn) Close() {
	o.c.Close()
	<-o.done
}

// maxMessage is OpenFlow's largest message: its length is 16 bits.
const maxMessage = 65535

func (o *Conn) read() {
	defer close(o.done)
	defer o.failWaiters()
	// Small: a message longer than the buffer is read straight into its
	// body, and InstallAll holds hundreds of connections at once.
	r := bufio.NewReaderSize(o.c, 8<<10)
	var h [8]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(h[2:]))
		if n < 8 {
			return // a switch that sends this is not speaking OpenFlow
		}
		body := make([]byte, n-8)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		xid := binary.BigEndian.Uint32(h[4:])
		switch h[1] {
		case TypeEchoRequest:
			rep := Header(TypeEchoReply, n, xid)
			copy(rep[8:], body)
			o.Write(rep)
			continue
		case TypePacketIn:
			if fn := o.packetIn.Load(); fn != nil {
				if in, frame, err := ParsePacketIn(body); err == nil {
					(*fn)(in, frame, time.Now())
				} else {
					o.lastErr.Store(&Error{XID: xid, Text: err.Error()})
					o.errs.Add(1)
				}
			}
			continue
		}
		o.mu.Lock()
		p := o.wait[xid]
		if p == nil {
			o.mu.Unlock()
			if h[1] == TypeError {
				// The error first: whoever sees the count move reads it.
				o.lastErr.Store(parseError(xid, body))
				o.errs.Add(1)
			}
			continue
		}
		more := false
		if h[1] == TypeError {
			p.err = parseError(xid, body)
		} else {
			p.parts = append(p.parts, body)
			more = h[1] == TypeMultipartReply && len(body) >= 4 && binary.BigEndian.Uint16(body[2:])&multipartMore != 0
		}
		if !more {
			delete(o.wait, xid)
			close(p.done)
		}
		o.mu.Unlock()
	}
}

// failWaiters ends every wait when the connection goes: a caller watching
// a Pending's Done sees it closed, with the error Await returns.
func (o *Conn) failWaiters() {
	o.mu.Lock()
	for _, p := range o.wait {
		p.err = &Error{XID: p.xid, Text: "openflow connection closed"}
		close(p.done)
	}
	o.wait = map[uint32]*Pending{}
	o.mu.Unlock()
}

// ReceivePacketIns hands fn every PACKET_IN from now on. The management
// socket is a service connection, and Open vSwitch sends those no
// asynchronous message until they set a nonzero miss_send_len
// (connmgr.c, ofconn_receives_async_msg): so this sends SET_CONFIG with
// miss_send_len maxLen and a barrier, so that PACKET_INs flow when it
// returns.
func (o *Conn) ReceivePacketIns(maxLen uint16, fn func(inPort uint32, frame []byte, at time.Time)) error {
	o.packetIn.Store(&fn)
	b := Header(TypeSetConfig, 12, o.NextXID())
	// flags 0: OFPC_FRAG_NORMAL
	binary.BigEndian.PutUint16(b[10:], maxLen)
	if err := o.Write(b); err != nil {
		return err
	}
	return o.Barrier(context.Background(), dialTimeout)
}

// SendFrame sends frame out of the switch's port: a PACKET_OUT.
func (o *Conn) SendFrame(port int, frame []byte) error {
	return o.Write(PacketOut(o.NextXID(), uint32(port), frame))
}
