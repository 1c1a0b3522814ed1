package traffic

import (
	"errors"
	"os"
	"unsafe"

	"time"

	pat "github.com/ethfab/ethfab/traffic"
)

// flow is what a sink knows of one source: the highest sequence number seen
// and a 64-frame window behind it (bit i: max-i arrived), enough to tell a
// duplicate from a late frame for any reordering a fabric of a few hops
// produces. Frames further behind are counted as reordered (and as new:
// a duplicate that late cannot be told apart).
type flow struct {
	max  uint64
	win  uint64
	recv uint64
	// reordered counts the frames that arrived after a later one of
	// the flow (seed 003's receivers "check frame order").
	reordered uint64
	any       bool
	// hist is the flow's own latency histogram, for the pairs of a flows
	// pattern (Result.Flows); nil elsewhere.
	hist *pat.Histogram
}

// sink is one host's receiving side. Only its goroutine touches it until
// the run ends.
type sink struct {
	host  int
	run   uint32
	flows []flow // by source host
	hist  pat.Histogram
	st    sinkStats
	// probes are the probes that arrived (probe.go), in arrival order.
	probes []probeRx
	// remote, when the machines' clocks do not agree, are the hosts
	// whose frames' latency is not taken (Config.LocalLatency).
	remote []bool
	// shift, by source host, is Config.ClockShift.
	shift []int64
}

type sinkStats struct {
	received   uint64 // unique measured frames
	duplicates uint64
	reordered  uint64
	farBehind  uint64 // reordered by more than the window
	unmeasured uint64 // warm-up frames
	stray      uint64 // addressed to another host
	staleRun   uint64 // frames of an earlier run
	foreign    uint64 // other frames of the EtherType (pings)
	malformed  uint64
	// unclocked are received frames from another machine whose clock
	// does not agree with this one's: no latency taken.
	unclocked uint64
}

func newSink(host, n int, run uint32) *sink {
	return &sink{host: host, run: run, flows: make([]flow, n)}
}

// prefault writes to every page of the sink's per-source state and
// histogram, before the measurement starts (measure, for this machine's
// hosts). The Go runtime hands out fresh
// heap pages unwritten, and only measured frames touch them (warm-up
// frames are counted and dropped), so each page's first frame took a page
// fault inside the measurement window, in the sink's goroutine: 48 bytes
// per source, 50 KB a sink on DF(4,8,4) and 53 MB in all. The senders
// then fell 50-300 ms behind in the window's first second, nearly every
// run. DF(4,8,4) at 1 Mbit/s, uniform 0.4, alternating on 2026-11-29:
// faithful in 3 of 3 runs with the pages written first (mean lateness
// 0.45-0.57 slot, busy 0.70-0.74), 0 of 3 without (10-51 slots, busy
// 0.82-0.87); over that afternoon's runs 22 of 36 with, 3 of 36 without.
// The failures left are slips at other times, in the machine's slow
// stretches (plots/lateness-<phase>).
func (k *sink) prefault() {
	prefault(k.flows)
	prefault(k.hist.Counts[:])
}

// prefault writes the zero value to one element of every page of a, and
// to its last.
func prefault[T any](a []T) {
	if len(a) == 0 {
		return
	}
	var zero T
	step := max(1, os.Getpagesize()/int(unsafe.Sizeof(zero)))
	for i := 0; i < len(a); i += step {
		a[i] = zero
	}
	a[len(a)-1] = zero // a stride can step over the last page
}

// serve reads the host's ring until the socket's read deadline passes,
// then reads what the kernel has handed over by then. Each frame's time
// is the kernel's stamp as it reached the host's interface, so a sink
// scheduled late does not add to the fabric's latency.
func (k *sink) serve(s *sock) {
	var h pat.Header
	var off int64 // wall - monotonic, taken once per batch
	read := func(b []byte, wall int64) {
		at := wall - off
		if wall == 0 {
			at = monoNow()
		}
		k.frame(b, &h, at)
	}
	for {
		now := time.Now()
		off = now.UnixNano() - (clockBaseMono + int64(now.Sub(clockBase)))
		s.ring.Read(read)
		if err := s.ring.Wait(); err != nil {
			s.ring.Read(read)
			return // deadline: the run is over (or the socket closed)
		}
	}
}

func (k *sink) frame(b []byte, h *pat.Header, now int64) {
	if err := pat.Decode(b, h); err != nil {
		if errors.Is(err, pat.ErrNotTraffic) {
			k.st.foreign++
		} else {
			k.st.malformed++
		}
		return
	}
	switch {
	case h.Run != k.run:
		k.st.staleRun++
		return
	case int(h.DstHost) != k.host || int(h.SrcHost) >= len(k.flows):
		k.st.stray++
		return
	case h.Flags&pat.FlagProbe != 0:
		k.probes = append(k.probes, probeRx{src: h.SrcHost, seq: h.Seq, latNs: now - int64(h.SendNs)})
		return
	case h.Flags&pat.FlagMeasured == 0:
		k.st.unmeasured++
		return
	}
	f := &k.flows[h.SrcHost]
	switch {
	case !f.any:
		f.any, f.max, f.win = true, h.Seq, 1
	case h.Seq > f.max:
		if d := h.Seq - f.max; d >= 64 {
			f.win = 1
		} else {
			f.win = f.win<<d | 1
		}
		f.max = h.Seq
	default:
		d := f.max - h.Seq
		if d >= 64 {
			k.st.farBehind++
		} else if f.win&(1<<d) != 0 {
			k.st.duplicates++
			return
		} else {
			f.win |= 1 << d
		}
		k.st.reordered++
		f.reordered++
	}
	f.recv++
	k.st.received++
	if k.remote != nil && k.remote[h.SrcHost] {
		k.st.unclocked++
		return
	}
	sent := int64(h.SendNs)
	if k.shift != nil {
		sent += k.shift[h.SrcHost]
	}
	lat := uint64(max(now-sent, 0))
	k.hist.Add(lat)
	if f.hist != nil {
		f.hist.Add(lat)
	}
}
