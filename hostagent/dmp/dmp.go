// Package dmp is the host side of the Dynamic MAC Protocol (seed 000 §IV,
// Fig. 7): a host sends a request whose source and destination are its
// current MAC; its access switch bounces it out of the same port with the
// source rewritten to the host's hierarchical pseudo-MAC; the host adopts
// that source address. Nothing but that one rule per host port answers.
package dmp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ethfab/ethfab/hostagent/ether"
	"github.com/ethfab/ethfab/internal/ethertype"
)

// Version is the payload version this package speaks.
const Version = 1

// Message types. The switch bounces a request unchanged but for the
// source, so a reply usually still says TypeRequest; TypeReply exists for
// a responder that is not a plain OpenFlow rule.
const (
	TypeRequest = 1
	TypeReply   = 2
)

// FrameLen is the length of a request: the Ethernet minimum (without FCS).
const FrameLen = 60

// Payload layout after the Ethernet header: version, type, attempt, one
// reserved byte, transaction id (big endian). The rest is zero padding.
const (
	offVersion = ether.HeaderLen
	offType    = ether.HeaderLen + 1
	offAttempt = ether.HeaderLen + 2
	offTxID    = ether.HeaderLen + 4
	minLen     = ether.HeaderLen + 8
)

// Parse errors. ErrForeign frames are not DMP at all; the others are DMP
// frames this package cannot use.
var (
	ErrForeign = errors.New("not a DMP frame")
	ErrVersion = errors.New("unknown DMP version")
	ErrType    = errors.New("unknown DMP message type")
)

// Message is a parsed DMP frame.
type Message struct {
	ether.Header
	Type    uint8
	Attempt uint8
	TxID    uint32
	// At is when the frame reached the host's socket (the kernel's stamp),
	// set by the receiver; zero: when Run reads it.
	At time.Time
}

// Request builds a request from a host whose current address is mac.
func Request(mac ether.MAC, txid uint32, attempt uint8) []byte {
	b := make([]byte, FrameLen)
	ether.Header{Dst: mac, Src: mac, EtherType: ethertype.DMP}.Put(b)
	b[offVersion] = Version
	b[offType] = TypeRequest
	b[offAttempt] = attempt
	binary.BigEndian.PutUint32(b[offTxID:], txid)
	return b
}

// Parse reads a DMP frame. Frames may be longer than FrameLen (padding).
func Parse(frame []byte) (Message, error) {
	h, err := ether.ParseHeader(frame)
	if err != nil {
		return Message{}, err
	}
	if h.EtherType != ethertype.DMP {
		return Message{}, ErrForeign
	}
	if len(frame) < minLen {
		return Message{}, ether.ErrShort
	}
	if frame[offVersion] != Version {
		return Message{}, ErrVersion
	}
	m := Message{Header: h, Type: frame[offType], Attempt: frame[offAttempt], TxID: binary.BigEndian.Uint32(frame[offTxID:])}
	if m.Type != TypeRequest && m.Type != TypeReply {
		return Message{}, ErrType
	}
	return m, nil
}

// Backoff bounds an exchange: the first reply is awaited Initial, each
// retry waits twice as long up to Max, and after Timeout in all the
// exchange fails.
type Backoff struct {
	Initial, Max, Timeout time.Duration
}

// DefaultBackoff suits an emulated fabric, whose userspace switches answer
// in milliseconds but may drop a request while a thousand hosts boot.
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Timeout: 10 * time.Second}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultBackoff.Initial
	}
	if b.Max < b.Initial {
		b.Max = max(DefaultBackoff.Max, b.Initial)
	}
	if b.Timeout <= 0 {
		b.Timeout = DefaultBackoff.Timeout
	}
	return b
}

// Exchange is the outcome of one DMP exchange.
type Exchange struct {
	MAC      ether.MAC     // the address the switch gave
	Attempts int           // requests sent
	Elapsed  time.Duration // first request to the reply reaching the host
	RTT      time.Duration // the answered request to its reply reaching the host
	TxID     uint32
}

// ErrNoReply means no reply came within the backoff's timeout.
var ErrNoReply = errors.New("no DMP reply (is the access switch's DMP rule installed?)")

// Run performs one exchange for a host whose address is mac: it sends
// requests through send, with backoff, and takes the first reply with its
// transaction id that arrives on replies (the caller feeds every DMP
// frame the interface receives, already parsed; its own transmissions
// must not be among them). A reply's source becomes the new address; a
// reply whose source cannot be an interface address is ignored.
func Run(ctx context.Context, mac ether.MAC, send func([]byte) error, replies <-chan Message, b Backoff) (Exchange, error) {
	b = b.withDefaults()
	txid := rand.Uint32()
	deadline := time.Now().Add(b.Timeout)
	wait := b.Initial
	var sent [256]time.Time // by attempt number, for the RTT
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	x := Exchange{TxID: txid}
	var lastErr error
	// reply takes m if it answers this exchange. Its time is when it
	// reached the host (Message.At), not when this goroutine got to it:
	// a thousand agents share the machine's cores, and the network's
	// answer is what DMP's figure is about (seed 000 §IV).
	reply := func(m Message) bool {
		if m.TxID != txid || !m.Src.IsUnicast() {
			return false
		}
		got := m.At
		if got.IsZero() {
			got = time.Now()
		}
		x.MAC = m.Src
		x.Elapsed = got.Sub(sent[0])
		if t := sent[m.Attempt]; !t.IsZero() {
			x.RTT = got.Sub(t)
		}
		return true
	}
	for {
		now := time.Now()
		if !now.Before(deadline) {
			err := fmt.Errorf("%w: %d requests from %s in %v", ErrNoReply, x.Attempts, mac, b.Timeout)
			if lastErr != nil {
				err = fmt.Errorf("%w (last send error: %v)", err, lastErr)
			}
			return x, err
		}
		attempt := uint8(x.Attempts)
		sent[attempt] = now
		x.Attempts++
		if err := send(Request(mac, txid, attempt)); err != nil {
			lastErr = err
		}
		timer.Reset(min(wait, deadline.Sub(now)))
		wait = min(2*wait, b.Max)
	await:
		for {
			select {
			case <-ctx.Done():
				return x, ctx.Err()
			case <-timer.C:
				// A reply already waiting wins over the timer (select
				// picks at random among ready cases): a late reader must
				// not send a request the switch already answered.
				for len(replies) > 0 {
					if reply(<-replies) {
						return x, nil
					}
				}
				break await
			case m := <-replies:
				if reply(m) {
					return x, nil
				}
			}
		}
	}
}
