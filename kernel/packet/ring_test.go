package packet

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/ethertype"
)

// Frames sent across a veth arrive in a receive ring in order, whole,
// stamped by the kernel between their send and their read; a block not
// full is handed over after Retire; Wait returns once the socket is
// closed, and a closed ring reads nothing.
func TestRingReceivesInOrder(t *testing.T) {
	a, b := pair(t)
	tx := open(t, a, Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	rx, err := Open(b, "eth0", Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	probe := open(t, b, Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true})
	linkUp(t, tx, probe, ethertype.Traffic)
	r, err := rx.Ring(RingConfig{BlockSize: 16 << 10, Blocks: 8, Retire: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// 300 frames of 1000 bytes: more than the ring holds at once (14 a
	// block, 8 blocks), so blocks are read and given back as they fill.
	const n, size = 300, 1000
	before := time.Now().UnixNano()
	var got []uint32
	read := func() {
		r.Read(func(f []byte, wall int64) {
			if len(f) != size || f[18] == warmup {
				return
			}
			if wall == 0 || wall < before || wall > time.Now().UnixNano() {
				t.Errorf("stamp %d outside [%d, now]", wall, before)
			}
			got = append(got, binary.BigEndian.Uint32(f[20:]))
		})
	}
	f := make([]byte, size)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	binary.BigEndian.PutUint16(f[12:], ethertype.Traffic)
	for i := range n {
		binary.BigEndian.PutUint32(f[20:], uint32(i))
		if err := tx.Send(f); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			// Wait for the blocks the frames so far filled or retired.
			rx.SetReadDeadline(time.Now().Add(2 * time.Second))
			if err := r.Wait(); err != nil {
				t.Fatalf("wait after %d frames: %v", i+1, err)
			}
			read()
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		rx.SetReadDeadline(time.Now().Add(time.Second))
		if r.Wait() == nil {
			read()
		}
	}
	if len(got) != n {
		d, _ := rx.Drops()
		t.Fatalf("read %d of %d frames (%d dropped)", len(got), n, d)
	}
	for i, s := range got {
		if s != uint32(i) {
			t.Fatalf("frame %d read as %d: out of order", i, s)
		}
	}
	if d, err := rx.Drops(); err != nil || d != 0 {
		t.Errorf("drops %d, %v", d, err)
	}
	done := make(chan error)
	rx.SetReadDeadline(time.Time{})
	go func() { done <- r.Wait() }()
	time.Sleep(10 * time.Millisecond)
	rx.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Wait returned no error on a closed socket")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait still blocked 5 s after Close")
	}
	if k := r.Read(func([]byte, int64) {}); k != 0 {
		t.Errorf("a closed ring read %d frames", k)
	}
}
