package dmp

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ethfab/ethfab/hostagent/ether"
)

var (
	orig   = ether.MAC{0x5a, 0x11, 0x22, 0x33, 0x44, 0x55}
	pseudo = ether.MAC{0x02, 0x00, 0x00, 0x01, 0x00, 0x01}
)

func TestRequestLayout(t *testing.T) {
	b := Request(orig, 0x01020304, 7)
	want := make([]byte, FrameLen)
	copy(want[0:], orig[:])
	copy(want[6:], orig[:])
	want[12], want[13] = 0x88, 0xb5
	want[14], want[15], want[16] = Version, TypeRequest, 7
	copy(want[18:], []byte{1, 2, 3, 4})
	if !bytes.Equal(b, want) {
		t.Fatalf("request\n% x\nwant\n% x", b, want)
	}
	m, err := Parse(b)
	if err != nil || m.Src != orig || m.Dst != orig || m.TxID != 0x01020304 || m.Attempt != 7 || m.Type != TypeRequest {
		t.Fatalf("parsed %+v, %v", m, err)
	}
}

func TestParseRejects(t *testing.T) {
	good := Request(orig, 1, 0)
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"short":   {good[:13], ether.ErrShort},
		"no txid": {good[:21], ether.ErrShort},
		"foreign": {append(append([]byte(nil), good[:12]...), 0x86, 0xdf, 1, 1, 0, 0, 0, 0, 0, 0), ErrForeign},
		"version": {func() []byte { b := Request(orig, 1, 0); b[14] = 9; return b }(), ErrVersion},
		"type":    {func() []byte { b := Request(orig, 1, 0); b[15] = 0; return b }(), ErrType},
	} {
		if _, err := Parse(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// bouncer plays the access switch's DMP rule: it rewrites the source of
// the requests it is allowed to answer and hands them back.
type bouncer struct {
	mu      sync.Mutex
	sends   []time.Time
	answer  func(attempt int) bool
	replies chan Message
}

func (b *bouncer) send(frame []byte) error {
	b.mu.Lock()
	b.sends = append(b.sends, time.Now())
	n := len(b.sends)
	b.mu.Unlock()
	m, err := Parse(frame)
	if err != nil {
		return err
	}
	if b.answer(n) {
		m.Src = pseudo
		b.replies <- m
	}
	return nil
}

func TestRunRetriesWithBackoff(t *testing.T) {
	b := &bouncer{answer: func(n int) bool { return n == 4 }, replies: make(chan Message, 8)}
	// Noise first: another exchange's reply and a multicast source.
	b.replies <- Message{Header: ether.Header{Src: pseudo}, TxID: 0}
	bo := Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Timeout: 2 * time.Second}
	x, err := Run(context.Background(), orig, b.send, b.replies, bo)
	if err != nil {
		t.Fatal(err)
	}
	if x.MAC != pseudo || x.Attempts != 4 {
		t.Fatalf("exchange %+v", x)
	}
	// Waits 20, 40, 50 (capped) ms between the four requests.
	want := []time.Duration{20, 40, 50}
	for i, w := range want {
		gap := b.sends[i+1].Sub(b.sends[i])
		if gap < w*time.Millisecond || gap > w*time.Millisecond+40*time.Millisecond {
			t.Errorf("gap %d: %v, want ~%dms", i, gap, w)
		}
	}
	if x.RTT > x.Elapsed || x.Elapsed < 110*time.Millisecond {
		t.Errorf("rtt %v elapsed %v", x.RTT, x.Elapsed)
	}
}

func TestRunIgnoresOtherReplies(t *testing.T) {
	replies := make(chan Message, 4)
	send := func(frame []byte) error {
		m, _ := Parse(frame)
		bad := m
		bad.TxID++
		bad.Src = pseudo
		replies <- bad // another host's exchange
		mc := m
		mc.Src = ether.MAC{0x03, 0, 0, 0, 0, 1}
		replies <- mc // a group address cannot be adopted
		return nil
	}
	_, err := Run(context.Background(), orig, send, replies, Backoff{Initial: 10 * time.Millisecond, Timeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrNoReply) {
		t.Fatalf("error %v, want ErrNoReply", err)
	}
}

func TestRunTimesOut(t *testing.T) {
	var n int
	send := func([]byte) error { n++; return errors.New("link down") }
	start := time.Now()
	x, err := Run(context.Background(), orig, send, nil, Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond, Timeout: 150 * time.Millisecond})
	took := time.Since(start)
	if !errors.Is(err, ErrNoReply) {
		t.Fatalf("error %v, want ErrNoReply", err)
	}
	if took < 150*time.Millisecond || took > 400*time.Millisecond {
		t.Fatalf("gave up after %v, want ~150ms", took)
	}
	// 0, 10, 30, 70, 110, 150: five or six requests within the bound.
	if x.Attempts != n || n < 4 || n > 6 {
		t.Fatalf("%d attempts (%d sends)", x.Attempts, n)
	}
	t.Log(err)
}

func TestRunHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, orig, func([]byte) error { return nil }, nil, Backoff{Timeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Request(orig, 1, 0))
	f.Add(Request(orig, 1, 0)[:20])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		if m.Type == TypeRequest {
			m2, err := Parse(Request(m.Src, m.TxID, m.Attempt))
			if err != nil || m2.TxID != m.TxID || m2.Attempt != m.Attempt || m2.Src != m.Src {
				t.Fatalf("re-encode %+v vs %+v: %v", m2, m, err)
			}
		}
	})
}

// The exchange is timed to when the reply reached the host (Message.At),
// not to when Run got round to reading it: a reply read long after its
// arrival (after a retry or two) still counts as arriving then.
func TestRunTimesTheReplyAtTheHost(t *testing.T) {
	replies := make(chan Message, 8)
	var first time.Time
	send := func(frame []byte) error {
		now := time.Now()
		m, _ := Parse(frame)
		m.Src = pseudo
		m.At = now.Add(3 * time.Millisecond) // arrived 3 ms after its request ...
		if first.IsZero() {
			first = now
			go func() {
				time.Sleep(30 * time.Millisecond) // ... read 30 ms later
				replies <- m
			}()
		}
		return nil
	}
	t0 := time.Now()
	x, err := Run(context.Background(), orig, send, replies, Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The first request went out between t0 and first.
	if x.Elapsed < 3*time.Millisecond || x.Elapsed > 3*time.Millisecond+first.Sub(t0) || x.RTT != x.Elapsed {
		t.Errorf("elapsed %v rtt %v, want 3 ms from the first request (sent within %v of the start)", x.Elapsed, x.RTT, first.Sub(t0))
	}
	if x.MAC != pseudo {
		t.Errorf("adopted %v", x.MAC)
	}
}
