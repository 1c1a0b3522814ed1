package traffic

import (
	"testing"
	"time"
	"unsafe"

	pat "github.com/ethfab/ethfab/traffic"
)

// TestSinkCounts feeds a sink frames in a known order and checks what it
// makes of duplicates, reordering, warm-up, other runs and strays.
func TestSinkCounts(t *testing.T) {
	k := newSink(1, 3, 77)
	f := make([]byte, 100)
	send := func(src, dst int, seq uint64, run uint32, flags uint8) {
		pat.Encode(f, &pat.Header{Run: run, SrcHost: uint32(src), DstHost: uint32(dst), Seq: seq, SendNs: 1000, Flags: flags})
		var h pat.Header
		k.frame(f, &h, 1500)
	}
	m := uint8(pat.FlagMeasured)
	for _, s := range []uint64{0, 1, 3, 2, 2, 5, 4, 100, 4, 30} {
		send(0, 1, s, 77, m)
	}
	// 2 and 4 come late (reordered), the second 2 is a duplicate; after 100
	// the second 4 and 30 are beyond the window: reordered, counted as new.
	send(2, 1, 0, 77, 0) // warm-up
	send(2, 1, 0, 76, m) // an earlier run
	send(2, 0, 0, 77, m) // not for host 1
	send(2, 9, 0, 77, m) // not for host 1
	k.frame(f[:20], &pat.Header{}, 0)
	want := sinkStats{received: 9, duplicates: 1, reordered: 4, farBehind: 2, unmeasured: 1, staleRun: 1, stray: 2, malformed: 1}
	if k.st != want {
		t.Errorf("stats %+v\nwant  %+v", k.st, want)
	}
	if k.flows[0].recv != 9 || k.flows[0].max != 100 {
		t.Errorf("flow 0: %+v", k.flows[0])
	}
	if k.hist.N != 9 || k.hist.Min != 500 {
		t.Errorf("latency histogram: %d samples, min %d; want 9 of 500 ns", k.hist.N, k.hist.Min)
	}
}

// The emulator's memory check counts 52 bytes of engine state per host
// pair (emulator/resources' PairB): a sink's flow per source and a
// source's sequence number per destination, all of it written before a
// measurement (prefault).
func TestStatePerPair(t *testing.T) {
	var s source
	if got := unsafe.Sizeof(flow{}) + unsafe.Sizeof(s.seq[0]); got != 52 {
		t.Errorf("a sink's flow and a source's sequence number take %d bytes; emulator/resources.PairB says 52: change both", got)
	}
}

// Lateness bins: 100 ms up to a 20 s window, then whole 100 ms steps
// wide enough for 200 bins; a frame due outside the window is not put.
func TestLateBins(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{time.Second: 100 * time.Millisecond, 20 * time.Second: 100 * time.Millisecond,
		30 * time.Second: 200 * time.Millisecond, 400 * time.Second: 2 * time.Second} {
		cfg := &Config{Duration: d}
		if got := time.Duration(lateBinNs(cfg)); got != want {
			t.Errorf("%v window: bins of %v, want %v", d, got, want)
		}
		if n := len(lateBinsOf(cfg).N); n > maxLateBins {
			t.Errorf("%v window: %d bins", d, n)
		}
	}
	l := lateBinsOf(&Config{Duration: 250 * time.Millisecond}) // 3 bins, the last 50 ms
	w := int64(100 * time.Millisecond)
	l.put(0, 1000, w)
	l.put(249_000_000, 3000, w)
	l.put(-1, 5, w)
	l.put(300_000_000, 5, w)
	if got := l.means(); len(got) != 3 || got[0] != 1 || got[1] != -1 || got[2] != 3 {
		t.Errorf("means %v, want [1 -1 3] µs", got)
	}
}
