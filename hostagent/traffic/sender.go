package traffic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel/uring"
	pat "github.com/ethfab/ethfab/traffic"
)

// schedule is a run's time frame, in CLOCK_MONOTONIC ns; slot times are
// relative to start.
type schedule struct {
	slot             int64
	start            int64
	measFrom, measTo int64 // measurement window, relative to start
}

// source is one host's arrival process. Bernoulli trials per slot are drawn
// as geometric gaps between successes (exactly the same process), so a
// sender touches a host only when it has a frame to send.
type source struct {
	host int
	rng  *rand.Rand
	logq float64 // log(1-load); 0 at load 1
	next int64   // slot of the next arrival
	due  int64   // the senders' heap key: ns of the next arrival or held frame's release
	// seq is the next sequence number by destination host: an array,
	// written before the measurement (prefault) where the host sends
	// here. As a map it grew as destinations appeared, and its lookups
	// were 0.7-1.2% of the machine's samples in DF(4,8,4) uniform runs.
	seq   []uint32
	stats srcStats
	// limited are the reaction points' limiters by destination (rp.go),
	// under mu; nil without reaction points.
	mu      sync.Mutex
	limited map[int32]*limiter
	// sentTo counts the measured frames the kernel took, by destination,
	// for a flows pattern's pairs (Result.Flows); nil elsewhere.
	sentTo map[int32]uint64
	// remote: the host is another machine's, whose engine sends for it.
	remote bool
}

type srcStats struct {
	offered   uint64 // arrivals in the window with a destination
	sent      uint64 // of which the kernel took
	errNoBufs uint64 // ENOBUFS: the host link's queue was full
	// errNoBufsLate: of those, frames sent more than a slot late. The
	// engine fell behind and then sent its backlog at once: a queue that
	// overflows then overflows for the machine's delay, not the model's.
	errNoBufsLate   uint64
	errAgain        uint64 // EAGAIN: the socket's send buffer was full
	errOther        uint64
	unsent          uint64 // arrivals the sender never reached (behind schedule at the end)
	unsentEstimated bool
	late            uint64 // frames sent more than a slot after their time
	lateSum         float64
	lateMax         int64
	rpHeld          uint64 // measured frames held by their reaction point
	rpDropped       uint64 // and dropped for its queue's room
}

func newSource(host, n int, seed int64, load float64) *source {
	s := &source{
		host: host,
		rng:  rand.New(rand.NewPCG(uint64(seed), uint64(host)|1<<40)),
		seq:  make([]uint32, n),
	}
	if load < 1 {
		s.logq = math.Log1p(-load)
	}
	s.next = s.gap() - 1
	return s
}

// gap draws the number of slots to the next arrival (>= 1).
func (s *source) gap() int64 {
	if s.logq == 0 {
		return 1
	}
	u := s.rng.Float64()
	return 1 + int64(math.Log1p(-u)/s.logq)
}

// senders share one schedule: a min-heap of every host's next arrival,
// under a mutex. A sender takes the host whose frame is due, sends it and
// puts the host back with its next arrival; a host out of the heap is
// being sent by one sender, so its frames keep their order. A write can
// take long: it runs the softirq that forwards frames, its own and
// others', through the fabric's switches (up to 300 frames, 2 ms), and
// with one heap the other senders keep the schedule meanwhile. With a
// fixed share of hosts each, a sender whose writes were doing the fabric's
// work fell behind while the other slept: DF(2,3,2), adv+1 at 20 Mbit/s,
// load 0.5, left 3-26% of the offered frames unsent with the machine 15%
// idle.
type senders struct {
	e     *Engine
	cfg   *Config
	sched schedule
	run   uint32
	mu    sync.Mutex
	heap  []*source
	// inflight counts the hosts out of the heap, being sent.
	inflight int
	// rp is the reaction points (nil: none).
	rp *rpState
	// late is the senders' lateness by bin of the window, under mu (each
	// sender adds its own at its end).
	late LateBins
}

func newSenders(e *Engine, cfg *Config, sched schedule, run uint32, srcs []*source, rp *rpState) *senders {
	w := &senders{e: e, cfg: cfg, sched: sched, run: run, rp: rp, late: lateBinsOf(cfg)}
	for _, s := range srcs {
		if s.remote {
			continue
		}
		s.setDue(sched.slot)
		if s.due < sched.measTo {
			w.push(s)
		}
	}
	return w
}

// defaultBatch is Config.Batch's default.
const defaultBatch = 16

// maxPerHost bounds one host's frames in a batch, so that one host far
// behind does not fill a batch while others wait. With one frame per host
// per batch, a host that fell behind caught up at one frame per batch
// time: conditional routing on DF(2,3,2), adv+1 at 20 Mbit/s, load 0.5,
// had senders up to 851 ms late (3 runs: 0-9.4% unsent), and up to
// 218 ms with 4 (4 runs: 0-3.2%).
const maxPerHost = 4

// batch is one sender's frames due at once: up to Config.Batch frames,
// up to maxPerHost of each host, in order (a host out of the heap is this
// sender's until it goes back), sent in one io_uring submission.
type batch struct {
	ring   *uring.Ring // nil: write(2) per frame
	srcs   []*source   // each frame's source (a host may have several)
	hosts  []*source   // the distinct sources, out of the heap meanwhile
	at     []int64     // each frame's scheduled time
	due    []int64     // and when it could go: its time, or its limiter's release
	dst    []int       // and destination (pat.Silent: none)
	frames [][]byte
	fds    []int
	bufs   [][]byte
	meas   []bool
	late   []bool   // sent more than a slot after it could go
	bins   LateBins // this sender's lateness by bin of the window
	binNs  int64
	sent   []*source // the sources of bufs
	dsts   []int32   // and their destinations
	res    []int32
}

func newBatch(n, frameSize int) *batch {
	b := &batch{frames: make([][]byte, n), res: make([]int32, n)}
	for i := range b.frames {
		b.frames[i] = make([]byte, frameSize)
	}
	if n > 1 {
		// Without io_uring (kernel.io_uring_disabled, seccomp) the batch
		// is sent a write(2) at a time.
		b.ring, _ = uring.New(uint32(n))
	}
	return b
}

// add puts a frame in the batch.
func (b *batch) add(s *source, at, due int64, dst int) {
	b.srcs = append(b.srcs, s)
	b.at = append(b.at, at)
	b.due = append(b.due, due)
	b.dst = append(b.dst, dst)
}

func (b *batch) close() {
	if b.ring != nil {
		b.ring.Close()
	}
}

// loop is one sender: it sends due frames until the window ends.
func (w *senders) loop(ctx context.Context) {
	b := newBatch(w.cfg.Batch, w.cfg.FrameSize)
	defer b.close()
	b.bins, b.binNs = lateBinsOf(w.cfg), lateBinNs(w.cfg)
	defer func() {
		w.mu.Lock()
		w.late.add(b.bins, len(b.bins.N))
		w.mu.Unlock()
	}()
	end, slot := w.sched.measTo, w.sched.slot
	stop := end + sendGrace(slot)
	var h pat.Header
	h.Run = w.run
	for ctx.Err() == nil {
		w.mu.Lock()
		now := monoNow() - w.sched.start
		if now >= stop || (len(w.heap) == 0 && w.inflight == 0) {
			w.mu.Unlock()
			return // behind schedule at the end: finish counts what is left
		}
		if len(w.heap) == 0 {
			// Every host left is being sent by another sender, and may
			// come back with a frame due.
			w.mu.Unlock()
			sleep(int64(50 * time.Microsecond))
			continue
		}
		if wait := w.heap[0].due - now; wait > 0 {
			w.mu.Unlock()
			sleep(wait)
			continue
		}
		b.srcs, b.at, b.due, b.dst, b.hosts = b.srcs[:0], b.at[:0], b.due[:0], b.dst[:0], b.hosts[:0]
		for len(b.srcs) < len(b.frames) && len(w.heap) > 0 && w.heap[0].due <= now {
			s := w.heap[0]
			w.pop()
			if s.limited != nil {
				w.takeLimited(b, s, now, end)
				b.hosts = append(b.hosts, s)
				continue
			}
			// A host behind its schedule sends its due frames together,
			// in order: one frame per host per batch held a host that had
			// fallen behind to one frame per batch time.
			for k := 0; k < maxPerHost && len(b.srcs) < len(b.frames) && s.next*slot <= now && s.next*slot < end; k++ {
				// The destination, then the next arrival: a source's
				// draws come in this order however its frames are
				// batched, so a seed gives the same arrivals every run.
				at := s.next * slot
				b.add(s, at, at, w.cfg.Pattern.Dest(s.host, time.Duration(at), s.rng))
				s.next += s.gap()
			}
			b.hosts = append(b.hosts, s)
		}
		w.inflight += len(b.hosts)
		w.mu.Unlock()
		w.send(b, now, &h)
		w.mu.Lock()
		for _, s := range b.hosts {
			s.setDue(slot)
			if s.due < end {
				w.push(s)
			}
		}
		w.inflight -= len(b.hosts)
		w.mu.Unlock()
	}
}

// sendGrace is how long past the window's end the senders go on sending
// the frames due within it (and no others): as long as the lateness the
// fidelity verdict allows, a slot or traffic.LatenessFloor. Stopped at
// the end, a schedule that ran a few milliseconds behind left that many
// milliseconds of due frames unsent, reported as offered load the hosts
// could not offer: DF(4,8,4) at 1 Mbit/s, uniform 0.4, 2.3-3.5 ms late
// on average throughout (a third of its 8 ms slot), ended with 344 of
// 316,674 frames (0.11%) never sent, past the unsent check's 0.1%. Sent
// in the grace, such a frame counts as sent, and as late as it was; one
// the senders do not reach by then is unsent, as before.
func sendGrace(slot int64) int64 { return max(slot, int64(pat.LatenessFloor)) }

// finish counts, once every sender has stopped, the arrivals they did not
// reach: they still belong to the offered load. Drawing them is exact but
// costs as much as a slot each, so past a budget the rest is the
// expectation (load x slots left, silent periods of the pattern included
// as arrivals).
func (w *senders) finish() {
	end, slot := w.sched.measTo, w.sched.slot
	stop := end + sendGrace(slot) // when the senders gave up
	budget, binNs := unsentDrawBudget, lateBinNs(w.cfg)
	for _, s := range w.heap {
		for ; s.next*slot < end && budget > 0; s.next += s.gap() {
			budget--
			if t := s.next * slot; t >= w.sched.measFrom && w.cfg.Pattern.Dest(s.host, time.Duration(t), s.rng) != pat.Silent {
				s.stats.offered++
				s.stats.unsent++
				// In the lateness series, as late as the senders' stop
				// (at least): a series of the sent frames alone would
				// fall at its end, as if the engine had caught up.
				w.late.put(t-w.sched.measFrom, stop-t, binNs)
			}
		}
		if t := max(s.next*slot, w.sched.measFrom); t < end {
			est := uint64(math.Round(w.cfg.Load * float64((end-t+slot-1)/slot)))
			s.stats.offered += est
			s.stats.unsent += est
			s.stats.unsentEstimated = true
		}
	}
}

// unsentDrawBudget bounds the arrivals finish draws.
const unsentDrawBudget = 1 << 20

// send sends the batch's frames: each source's destination is drawn, its
// frame built, and all go to the kernel in one io_uring submission (or a
// write(2) each).
func (w *senders) send(b *batch, now int64, h *pat.Header) {
	b.fds, b.bufs, b.meas, b.late, b.sent, b.dsts = b.fds[:0], b.bufs[:0], b.meas[:0], b.late[:0], b.sent[:0], b.dsts[:0]
	for i, s := range b.srcs {
		at, d := b.at[i], b.dst[i]
		if d == pat.Silent {
			continue
		}
		measured := at >= w.sched.measFrom
		late := false
		if measured {
			// Late from when it could go: a frame its reaction point
			// held waited for the model, not for the machine.
			s.stats.offered++
			if by := now - b.due[i]; by > w.sched.slot {
				late = true
				s.stats.late++
				s.stats.lateMax = max(s.stats.lateMax, by)
			}
			s.stats.lateSum += float64(now - b.due[i])
			b.bins.put(at-w.sched.measFrom, now-b.due[i], b.binNs)
		}
		h.Flags = 0
		if measured {
			h.Flags = pat.FlagMeasured
		}
		copy(h.Dst[:], w.e.hosts[d].MAC)
		copy(h.Src[:], w.e.hosts[s.host].MAC)
		h.SrcHost, h.DstHost = uint32(s.host), uint32(d)
		// Numbered as built: a batch can hold several frames of a host
		// to one destination. A refused frame leaves a gap, which a sink
		// takes for a loss, not a reordering.
		h.Seq = uint64(s.seq[d])
		s.seq[d]++
		h.SendNs = uint64(monoNow())
		frame := b.frames[len(b.bufs)]
		pat.Encode(frame, h)
		b.fds = append(b.fds, w.e.socks[s.host].tx.FD())
		b.bufs = append(b.bufs, frame)
		b.meas = append(b.meas, measured)
		b.late = append(b.late, late)
		b.sent = append(b.sent, s)
		b.dsts = append(b.dsts, int32(d))
	}
	if len(b.bufs) == 0 {
		return
	}
	var err error
	if b.ring != nil && len(b.bufs) > 1 {
		if err = b.ring.Send(b.fds, b.bufs, unix.MSG_DONTWAIT, b.res); err != nil {
			// A ring that failed is not used again: this sender goes on
			// with write(2).
			b.ring.Close()
			b.ring = nil
		}
	}
	switch {
	case errors.Is(err, uring.ErrPartial):
		// Some frames may have gone: sending them again would duplicate
		// them, so all count as refused.
		for i := range b.bufs {
			b.res[i] = -int32(unix.EIO)
		}
	case b.ring == nil || len(b.bufs) == 1:
		for i := range b.bufs {
			b.res[i] = 0
			if _, err := unix.Write(b.fds[i], b.bufs[i]); err != nil {
				var errno unix.Errno
				if !errors.As(err, &errno) {
					errno = unix.EIO
				}
				b.res[i] = -int32(errno)
			}
		}
	}
	for i, s := range b.sent {
		r := b.res[i]
		switch {
		case r >= 0:
			if b.meas[i] {
				s.stats.sent++
				if s.sentTo != nil {
					s.sentTo[b.dsts[i]]++
				}
			}
		case !b.meas[i]:
		case unix.Errno(-r) == unix.ENOBUFS:
			s.stats.errNoBufs++
			if b.late[i] {
				s.stats.errNoBufsLate++
			}
		case unix.Errno(-r) == unix.EAGAIN:
			s.stats.errAgain++
		default:
			s.stats.errOther++
		}
	}
}

// sleep waits d ns. The runtime's timers round sub-millisecond waits up to
// a millisecond when the process is otherwise idle, which would send each
// host's frames in 1 ms clumps; nanosleep(2) is accurate to tens of µs.
func sleep(d int64) {
	if d > 2*int64(time.Millisecond) {
		time.Sleep(time.Duration(d - int64(time.Millisecond)))
		return
	}
	ts := unix.NsecToTimespec(d)
	unix.Nanosleep(&ts, nil)
}

// A binary min-heap on due (the next arrival, or a held frame's release); container/heap's interface calls cost
// more than the sends at a few hundred thousand frames per second.
func (w *senders) push(s *source) {
	w.heap = append(w.heap, s)
	i := len(w.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if w.heap[p].due <= w.heap[i].due {
			break
		}
		w.heap[p], w.heap[i] = w.heap[i], w.heap[p]
		i = p
	}
}

func (w *senders) pop() {
	last := len(w.heap) - 1
	w.heap[0] = w.heap[last]
	w.heap = w.heap[:last]
	if last > 0 {
		w.down(0)
	}
}

func (w *senders) down(i int) {
	h := w.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].due < h[l].due {
			m = r
		}
		if h[i].due <= h[m].due {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// LateBins are the senders' lateness over the measurement window, by the
// bin of the frames' time (lateBinNs wide): the lateness summed, and the
// frames, those never sent included (finish).
type LateBins struct {
	SumNs []float64 `json:"sum_ns"`
	N     []uint64  `json:"n"`
}

// put adds a frame due at offset ns into the window, late ns.
func (l *LateBins) put(at, late, binNs int64) {
	if k := at / binNs; at >= 0 && k < int64(len(l.N)) {
		l.SumNs[k] += float64(late)
		l.N[k]++
	}
}

// maxLateBins bounds a window's bins: 100 ms each up to 20 s, then wider
// by whole 100 ms.
const maxLateBins = 200

// lateBinNs is the width of a window's lateness bins.
func lateBinNs(cfg *Config) int64 {
	const step = int64(100 * time.Millisecond)
	per := (int64(cfg.Duration) + maxLateBins - 1) / maxLateBins
	return max(1, (per+step-1)/step) * step
}

// lateBinsOf makes a window's empty bins.
func lateBinsOf(cfg *Config) LateBins {
	w := lateBinNs(cfg)
	n := (int64(cfg.Duration) + w - 1) / w
	return LateBins{SumNs: make([]float64, n), N: make([]uint64, n)}
}

// add adds another sender's (or machine's) bins, n of them; a machine's
// part without any (an older worker) adds nothing.
func (l *LateBins) add(o LateBins, n int) error {
	if len(o.SumNs) == 0 && len(o.N) == 0 {
		return nil
	}
	if len(o.SumNs) != n || len(o.N) != n {
		return fmt.Errorf("lateness bins: %d sums and %d counts, not %d", len(o.SumNs), len(o.N), n)
	}
	if len(l.N) != n {
		l.SumNs, l.N = make([]float64, n), make([]uint64, n)
	}
	for i := range n {
		l.SumNs[i] += o.SumNs[i]
		l.N[i] += o.N[i]
	}
	return nil
}

// means is each bin's mean lateness, in µs (-1 where no frame was due).
func (l LateBins) means() []float64 {
	out := make([]float64, len(l.N))
	for i, n := range l.N {
		out[i] = -1
		if n > 0 {
			out[i] = l.SumNs[i] / float64(n) / 1e3
		}
	}
	return out
}
