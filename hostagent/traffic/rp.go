package traffic

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/qcn"
	pat "github.com/ethfab/ethfab/traffic"
)

// Reaction points (seed 003, 802.1Qau): each sending host keeps a rate
// limiter per destination that congestion notifications (CNMs) addressed
// to it create and lower (package qcn's ReactionPoint), and its frames to
// a limited destination wait in a queue of their own until the limiter
// lets them go ("separately enqueue rate-limited flows"). The limiter
// counts the bytes it lets through, raises its rate by them, and is
// dropped once back at the line rate. Frames of unlimited destinations
// go on their schedule as before.
//
// What waits is the model's, not the machine's: a frame held by its
// limiter is not late and not unsent. Held past the queue's room it is
// dropped at the source (RPStats.Dropped), still offered; held at the end
// of the window it is counted apart (RPStats.HeldAtEnd).

// RPConfig turns the hosts' reaction points on (Config.RP).
type RPConfig struct {
	// Queue is how many frames one limited flow may hold (default 256).
	Queue int
	// Timed runs the limiters' increases on time, not on the bytes
	// their flows send (qcn.ReactionPoint.Timed).
	Timed bool
}

// defaultRPQueue is RPConfig.Queue's default: 256 frames of 1 KB, 100 ms
// of a 20 Mbit/s link.
const defaultRPQueue = 256

// RPStats is what the reaction points did over a run (every frame, the
// warm-up's too, for CNMs and limiters; measured frames for the counts).
type RPStats struct {
	CNMs      uint64 `json:"cnms_received"`
	Limiters  uint64 `json:"limiters_created"`
	Released  uint64 `json:"limiters_released"`
	Held      uint64 `json:"frames_held"`        // measured frames that waited for their limiter
	Dropped   uint64 `json:"frames_dropped"`     // measured frames that found the flow's queue full
	HeldAtEnd uint64 `json:"frames_held_at_end"` // measured frames still waiting when the window closed
	Unknown   uint64 `json:"cnms_for_no_host"`   // CNMs whose flow destination is no host of the lab
	Malformed uint64 `json:"cnms_malformed"`
	ReadErrs  uint64 `json:"cnm_read_errors"` // the CNM socket's failed reads (each retried)
}

// limiter is one limited flow at a source: its reaction point, when its
// next frame may leave (ns since the run's start), and the arrivals
// waiting (their scheduled times).
type limiter struct {
	rp   *qcn.ReactionPoint
	free int64
	held []int64
	// clock is how far a timed limiter's clock has run (ns since start):
	// it runs on lazily, to each CNM's arrival and each frame's release,
	// which is exact, the increases being a function of the time alone
	// between those events.
	clock int64
}

// rpState is a run's reaction points: per source, its limiters under the
// source's mutex (the CNM readers and the senders share them).
type rpState struct {
	queue    int
	timed    bool
	start    int64 // the run's start, CLOCK_MONOTONIC ns
	line     float64
	frameNs  func(cr float64) int64 // a frame's time at rate cr
	frameLen int
	byMAC    map[[6]byte]int32
	socks    []*packet.Socket
	wg       sync.WaitGroup
	cnms     atomic.Uint64
	created  atomic.Uint64
	unknown  atomic.Uint64
	readErrs atomic.Uint64
	bad      atomic.Uint64
	released atomic.Uint64
}

// startRP opens a CNM socket on every host and starts its reader.
func (e *Engine) startRP(cfg *Config, srcs []*source, start int64) (*rpState, error) {
	q := cfg.RP.Queue
	if q <= 0 {
		q = defaultRPQueue
	}
	line := float64(cfg.RateBps)
	bits := float64(cfg.FrameSize * 8)
	r := &rpState{queue: q, timed: cfg.RP.Timed, start: start, line: line, frameLen: cfg.FrameSize, byMAC: map[[6]byte]int32{},
		frameNs: func(cr float64) int64 { return int64(bits * 1e9 / cr) }}
	for i, h := range e.hosts {
		var m [6]byte
		copy(m[:], h.MAC)
		r.byMAC[m] = int32(i)
	}
	for i, h := range e.hosts {
		p, err := packet.Open(h.NetNS, h.Iface, packet.Config{Protocol: ethertype.CNM, IgnoreOutgoing: true})
		if err != nil {
			r.stop()
			return nil, fmt.Errorf("host %s: CNM socket: %w", h.Name, err)
		}
		r.socks = append(r.socks, p)
		s := srcs[i]
		s.limited = map[int32]*limiter{}
		r.wg.Go(func() { r.read(p, s) })
	}
	return r, nil
}

// read applies the CNMs host s receives until its socket closes.
func (r *rpState) read(p *packet.Socket, s *source) {
	buf := make([]byte, qcn.MaxLen+64)
	var c qcn.CNM
	for {
		n, err := p.Recv(buf)
		if err != nil {
			if p.Closed() {
				return
			}
			// A failing read (ENOBUFS, ENETDOWN ...) must not end the
			// host's reaction point for the rest of the run: its flows
			// would go on unthrottled while CNMs arrive. A minute-long
			// run's CM once lost its hold after 350 s this way or another.
			r.readErrs.Add(1)
			time.Sleep(time.Millisecond)
			continue
		}
		if qcn.DecodeCut(buf[:n], &c) != nil {
			r.bad.Add(1)
			continue
		}
		r.cnms.Add(1)
		d, ok := r.byMAC[c.VictimDst]
		if !ok {
			r.unknown.Add(1)
			continue
		}
		now := monoNow() - r.start
		s.mu.Lock()
		l := s.limited[d]
		if l == nil {
			l = &limiter{rp: qcn.NewReactionPoint(r.line), clock: now}
			l.rp.Timed = r.timed
			s.limited[d] = l
			r.created.Add(1)
		}
		r.elapse(l, now) // a timed limiter released here is cut at once
		l.rp.CNM(c.Fbq)
		s.mu.Unlock()
	}
}

// elapse runs a timed limiter's clock on to t (ns since start); one
// counting bytes is left as it is. Called with the source's mu held.
func (r *rpState) elapse(l *limiter, t int64) {
	if !l.rp.Timed || t <= l.clock {
		return
	}
	l.rp.Elapse(float64(t-l.clock) * r.line / 8e9)
	l.clock = t
}

// stop closes the sockets and waits for the readers.
func (r *rpState) stop() {
	for _, p := range r.socks {
		p.Close() // a close error leaves nothing to undo: the readers end either way
	}
	r.wg.Wait()
}

// finish gathers the counts once the senders have stopped; the measured
// frames still held count as offered (they were).
func (r *rpState) finish(srcs []*source, measFrom, measTo int64) *RPStats {
	st := RPStats{CNMs: r.cnms.Load(), Limiters: r.created.Load(), Released: r.released.Load(), Unknown: r.unknown.Load(), Malformed: r.bad.Load(),
		ReadErrs: r.readErrs.Load()}
	for _, s := range srcs {
		s.mu.Lock()
		st.Held += s.stats.rpHeld
		st.Dropped += s.stats.rpDropped
		for _, l := range s.limited {
			for _, at := range l.held {
				if at >= measFrom && at < measTo {
					st.HeldAtEnd++
					s.stats.offered++
				}
			}
		}
		s.mu.Unlock()
	}
	return &st
}

// setDue puts s's place in the senders' heap: its next arrival or, if
// sooner, its first held frame's release.
func (s *source) setDue(slot int64) {
	s.due = s.next * slot
	if s.limited == nil {
		return
	}
	s.mu.Lock()
	if t := s.release(); t >= 0 && t < s.due {
		s.due = t
	}
	s.mu.Unlock()
}

// takeLimited is loop's batch filling for a source with reaction points:
// held frames whose limiter lets them go first, then its due arrivals,
// each sent, held or dropped as its flow's limiter says.
func (w *senders) takeLimited(b *batch, s *source, now, end int64) {
	slot := w.sched.slot
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := 0; k < maxPerHost && len(b.srcs) < len(b.frames); {
		if d, at, due, ok := s.takeHeld(w.rp, now); ok {
			b.add(s, at, due, int(d))
			k++
			continue
		}
		at := s.next * slot
		if at > now || at >= end {
			return
		}
		d := w.cfg.Pattern.Dest(s.host, time.Duration(at), s.rng)
		s.next += s.gap()
		if d == pat.Silent {
			b.add(s, at, at, d)
			k++
		} else if due, ok := s.admit(w.rp, int32(d), at, now, at >= w.sched.measFrom); ok {
			b.add(s, at, due, d)
			k++
		}
	}
}

// release is the earliest time a held frame of s may leave (ns since
// start; -1: none held). Called with s.mu held.
func (s *source) release() int64 {
	t := int64(-1)
	for _, l := range s.limited {
		if len(l.held) > 0 {
			if at := max(l.free, l.held[0]); t < 0 || at < t {
				t = at
			}
		}
	}
	return t
}

// takeHeld takes a held frame that may leave by now: its destination, its
// scheduled time and when its limiter let it go. Called with s.mu held.
func (s *source) takeHeld(r *rpState, now int64) (d int32, at, due int64, ok bool) {
	best := int64(-1)
	for dst, l := range s.limited {
		if len(l.held) == 0 {
			continue
		}
		if t := max(l.free, l.held[0]); t <= now && (best < 0 || t < best) {
			best, d = t, dst
		}
	}
	if best < 0 {
		return 0, 0, 0, false
	}
	l := s.limited[d]
	at = l.held[0]
	l.held = l.held[1:]
	r.charge(s, d, l, best)
	return d, at, best, true
}

// admit decides an arrival for destination d at time at: true sends it
// now (charging its limiter, if any), and due is when it could go, its
// time or its limiter's release (lateness counts from there); false holds
// or drops it. Called with s.mu held.
func (s *source) admit(r *rpState, d int32, at, now int64, measured bool) (due int64, ok bool) {
	l := s.limited[d]
	if l == nil {
		return at, true
	}
	if len(l.held) == 0 && l.free <= now {
		due = max(l.free, at)
		r.charge(s, d, l, due)
		return due, true
	}
	if len(l.held) >= r.queue {
		if measured {
			s.stats.offered++
			s.stats.rpDropped++
		}
		return 0, false
	}
	if measured {
		s.stats.rpHeld++
	}
	l.held = append(l.held, at)
	return 0, false
}

// charge lets one frame of flow d through its limiter, due at due (when
// the limiter let it go): the next may leave a frame time at the current
// rate after that, not after the sender got to it, so a sender that woke
// late sends the frames due meanwhile together and the flow keeps its
// rate (from the send time, a late wake-up's delay was lost at every
// frame: 0.6 of the line rate at 100 Mbit/s). A limiter back at the line
// rate with nothing held is dropped; the byte counter runs.
func (r *rpState) charge(s *source, d int32, l *limiter, due int64) {
	r.elapse(l, due)
	l.free = max(l.free, due) + r.frameNs(l.rp.CR)
	if l.rp.Sent(r.frameLen) && len(l.held) == 0 {
		delete(s.limited, d)
		r.released.Add(1)
	}
}
