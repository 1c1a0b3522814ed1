// Package traffic is the host agent's traffic generator and sink: one
// process drives every host of a lab, each through a packet socket opened
// inside the host's network namespace, sending raw Ethernet frames
// (traffic's wire format) with Bernoulli injection and measuring
// what arrives: accepted load, one-way latency, loss, duplicates and
// reordering, plus how faithfully the schedule was kept.
//
// Usage:
//
//	e, err := traffic.Open(hosts, traffic.Options{})
//	defer e.Close()
//	for _, load := range loads {
//		res, err := e.Run(ctx, traffic.Config{Pattern: p, Load: load, RateBps: 100e6, ...})
//	}
package traffic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethfab/ethfab/internal/fanout"
	"github.com/ethfab/ethfab/kernel"
	pat "github.com/ethfab/ethfab/traffic"
)

// Host is one traffic endpoint.
type Host struct {
	Name  string // for results
	NetNS string // named namespace ("" = the process's own)
	Iface string // the host's fabric interface
	// MAC is the host's current address (after DMP, its pseudo-MAC): the
	// source of its frames and the destination of frames sent to it. nil
	// reads the interface's address when the engine opens.
	MAC net.HardwareAddr
	// Switch and Group locate the host in the fabric (topology.Host.Switch
	// and that switch's Group), for per-switch results.
	Switch int
	Group  int
	// Remote: the host runs on another machine (a lab across machines):
	// no socket here, frames only sent to it, at MAC, which must be set.
	Remote bool
}

// Options are the engine's, fixed for its lifetime.
type Options struct {
	// Retire is how long a host's receive ring keeps a block that is not
	// full (0: sinkRetire of the number of hosts).
	Retire time.Duration
}

// Engine holds one packet socket per host.
type Engine struct {
	hosts []Host
	socks []*sock
	mu    sync.Mutex // one Run at a time
	run   atomic.Uint32
	// retire is the receive rings' retire period (sinkRetire).
	retire time.Duration
	// stamp is the send stamp on every host's egress (stamp.go); nil where
	// it could not be attached, and then every frame goes in its own
	// write(2), stamped just before it.
	stamp *stamper
	// stampErr says why there is no send stamp.
	stampErr error
}

// Open opens a packet socket in every host's namespace (a few at a time,
// each on a thread that enters the namespace and leaves it).
func Open(hosts []Host, opt Options) (*Engine, error) {
	if len(hosts) < 2 {
		return nil, fmt.Errorf("traffic: need at least 2 hosts, got %d", len(hosts))
	}
	if opt.Retire <= 0 {
		opt.Retire = sinkRetire(len(hosts))
	}
	e := &Engine{hosts: append([]Host(nil), hosts...), socks: make([]*sock, len(hosts)), retire: opt.Retire}
	e.run.Store(uint32(time.Now().UnixNano()))
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next = make(chan int)
	)
	for range min(8, len(hosts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				h := e.hosts[i]
				if h.Remote {
					continue
				}
				s, err := openSock(h.NetNS, h.Iface, e.retire)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("host %s (netns %s, %s): %w", h.Name, h.NetNS, h.Iface, err))
				} else {
					e.socks[i] = s
					if e.hosts[i].MAC == nil {
						e.hosts[i].MAC = s.mac
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := range hosts {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, h := range e.hosts {
		if (e.socks[i] != nil || h.Remote) && len(h.MAC) != 6 {
			errs = append(errs, fmt.Errorf("host %s: MAC %v is not 6 bytes", h.Name, h.MAC))
		}
	}
	if len(errs) > 0 {
		e.Close()
		return nil, fmt.Errorf("traffic: open sockets: %w", errors.Join(errs...))
	}
	e.stamp, e.stampErr = e.attachStamp()
	return e, nil
}

// SetMAC changes the address the engine uses for host i (after a DMP
// exchange gave it a new one). Not during a Run.
func (e *Engine) SetMAC(i int, mac net.HardwareAddr) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hosts[i].MAC = append(net.HardwareAddr(nil), mac...)
}

// Hosts returns the engine's hosts, with the MACs it uses.
func (e *Engine) Hosts() []Host { return append([]Host(nil), e.hosts...) }

// SendMode says how the senders hand frames to the kernel, for a run's
// record.
func (e *Engine) SendMode() string {
	if e.stamp != nil {
		return "io_uring batches, send time stamped at the host's egress"
	}
	return "write(2) per frame (no send stamp: " + e.stampErr.Error() + ")"
}

// attachStamp puts the send stamp on every host's interface, or none.
func (e *Engine) attachStamp() (*stamper, error) {
	st, err := newStamper()
	if err != nil {
		return nil, err
	}
	// A namespace entry each, a few at a time, as the sockets were opened.
	if err := fanout.Each(len(e.hosts), 8, func(i int) error {
		if e.hosts[i].Remote {
			return nil
		}
		return st.attach(e.hosts[i].NetNS, e.hosts[i].Iface)
	}); err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

// Close takes the send stamp off and closes every socket.
func (e *Engine) Close() error {
	var errs []error
	if e.stamp != nil {
		if err := e.stamp.close(); err != nil {
			errs = append(errs, err)
		}
		e.stamp = nil
	}
	for _, s := range e.socks {
		if s != nil {
			if err := s.close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Config is one measurement: one pattern at one offered load.
type Config struct {
	// Pattern picks destinations; its host indices are the engine's. Its
	// time argument is the frame's scheduled time since the run started
	// (warm-up included), so phased patterns are the same in every run.
	// (Not in a Config's JSON, which a run across machines sends: each
	// machine builds the pattern from its spec, and runs neither probes nor
	// reaction points.)
	Pattern pat.Pattern `json:"-"`
	// Load is the offered load per host, a fraction (0, 1] of RateBps: the
	// probability that a host sends in each frame slot. A slot in which the
	// pattern keeps the host silent (npb-like's computation gaps, fixed
	// points of bit permutations) sends nothing, so for those patterns the
	// measured offered load is below Load: npb-like offers Load inside its
	// bursts and about Load*CommShare on average.
	Load float64
	// FrameSize is the frame length in bytes (traffic: Ethernet
	// header to padding, no FCS); default 1000.
	FrameSize int
	// RateBps is the host link rate. A frame slot lasts FrameSize*8/RateBps
	// (1000 B at 50 Mbit/s: 160 µs).
	RateBps uint64
	// Warmup frames are sent but not counted; Duration is the measurement
	// window; after the senders stop, sinks wait Drain for frames in flight.
	Warmup, Duration, Drain time.Duration
	// Seed makes every random choice: the per-host arrival processes and
	// destinations. The pattern has its own (traffic.New).
	Seed int64
	// Senders is how many goroutines share the sending (default twice
	// GOMAXPROCS: one can be in a long write while another sends); they
	// take the next due frame of any host from one schedule.
	Senders int
	// Batch is the most due frames a sender hands the kernel in one
	// system call (io_uring; default 16): one world switch in this VM for
	// all of them, where write(2) takes one each. 1 sends each with its
	// own write(2), as do engines without the send stamp (a kernel that
	// would not take it) and kernels without io_uring.
	Batch int
	// Probes, if any, go beside the traffic from the run's start to the
	// end of its measurement window (probe.go).
	Probes *Probes `json:"-"`
	// RP, if set, runs a QCN reaction point per flow on every host (rp.go).
	RP *RPConfig `json:"-"`
	// Run and StartNs, for a measurement across machines, are the run's
	// number (in every frame's header: each machine's sinks take only
	// their own run's frames) and its start in CLOCK_MONOTONIC ns, the
	// same on every machine's engine; 0: the engine's own, and 1 ms from
	// now.
	Run     uint32
	StartNs int64
	// Realtime runs every thread of the engine's process under
	// SCHED_FIFO for the whole of a Run, from opening the sinks to the
	// drain (kernel.Realtime): the senders then wake when their frames
	// are due rather than after whatever ordinary task holds the CPU. On
	// DF(2,3,2) under VAL, adv+1 at 20 Mbit/s and load 0.5, Go's
	// scheduling latency (runtime/metrics, three runs each) had a p99 of
	// 1.6-2.6 ms without it and 0.65-0.92 ms with it; over five runs
	// each the senders' mean lateness was 0.17-1.13 slot without it and
	// 0.08-0.13 with it (README "Capacity"). The fabric's forwarding runs
	// in softirq context, mostly at interrupt exit and in the senders'
	// own writes; what the kernel defers to ksoftirqd now waits for
	// these threads.
	Realtime bool
	// LocalLatency: the machines' clocks do not agree, so latency is
	// taken only of frames from hosts on this machine.
	LocalLatency bool
	// ClockShift, by source host, is what to take off a frame's latency
	// for its sender's clock: the sender machine's wall-minus-monotonic
	// offset less this machine's (WallMinusMono), when the machines' wall
	// clocks agree (PTP); nil: one clock.
	ClockShift []int64
}

// DefaultFrameSize is the papers' 1 KB frame.
const DefaultFrameSize = 1000

func (c *Config) check(n int) error {
	if c.Pattern == nil {
		return errors.New("no pattern")
	}
	if c.Pattern.Hosts() != n {
		return fmt.Errorf("pattern %s spans %d hosts, the engine has %d", c.Pattern.Spec(), c.Pattern.Hosts(), n)
	}
	if !(c.Load > 0 && c.Load <= 1) {
		return fmt.Errorf("load %g is not in (0, 1]", c.Load)
	}
	if c.FrameSize == 0 {
		c.FrameSize = DefaultFrameSize
	}
	if c.FrameSize < pat.MinFrameSize || c.FrameSize > pat.MaxFrameSize {
		return fmt.Errorf("frame size %d is not in %d..%d", c.FrameSize, pat.MinFrameSize, pat.MaxFrameSize)
	}
	if c.RateBps == 0 {
		return errors.New("no host link rate")
	}
	if c.Duration <= 0 || c.Warmup < 0 || c.Drain < 0 {
		return fmt.Errorf("durations must be positive: warmup %v, duration %v, drain %v", c.Warmup, c.Duration, c.Drain)
	}
	if c.Senders <= 0 {
		c.Senders = 2 * runtime.GOMAXPROCS(0)
	}
	c.Senders = min(c.Senders, n)
	if c.Batch <= 0 {
		c.Batch = defaultBatch
	}
	if c.ClockShift != nil && len(c.ClockShift) != n {
		return fmt.Errorf("clock shifts for %d hosts, the engine has %d", len(c.ClockShift), n)
	}
	if c.Probes != nil {
		return c.Probes.check(n)
	}
	return nil
}

// slotNs is the frame slot time.
func (c *Config) slotNs() int64 {
	return int64(math.Round(float64(c.FrameSize) * 8 * 1e9 / float64(c.RateBps)))
}

// retireSlack covers the kernel's rounding of a ring's retire period to
// its clock tick (4 ms at HZ=250) and the reader's wake-up.
const retireSlack = 10 * time.Millisecond

// Run sends the pattern for Warmup+Duration, waits Drain, and reports.
// Frames are counted by their send time: those sent inside the
// measurement window, wherever they arrive (until the drain ends).
func (e *Engine) Run(ctx context.Context, cfg Config) (*Result, error) {
	m, err := e.measure(ctx, &cfg)
	if m == nil {
		return nil, err
	}
	res := e.result(&cfg, m.srcs, m.sinks, m.drops, m.late)
	res.Flows = e.flowStats(&cfg, m.pairs, m.srcs, m.sinks)
	res.RP = m.rps
	if m.pr != nil {
		res.Probes = m.pr.result(m.sinks)
	}
	return res, err
}

// measurement is what one Run counted, before it is reported.
type measurement struct {
	srcs  []*source
	sinks []*sink
	drops []uint64
	pairs [][2]int
	rps   *RPStats
	pr    *prober
	late  LateBins
}

// measure runs one measurement (Run). A nil measurement comes with the
// error that prevented it; a cancelled one is returned with ctx's error.
func (e *Engine) measure(ctx context.Context, cfg *Config) (_ *measurement, err error) {
	if err := cfg.check(len(e.hosts)); err != nil {
		return nil, fmt.Errorf("traffic: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if cfg.Realtime {
		restore, err := kernel.Realtime()
		if err != nil {
			return nil, fmt.Errorf("traffic: real-time scheduling: %w", err)
		}
		defer func() {
			if rerr := restore(); rerr != nil && err == nil {
				err = fmt.Errorf("traffic: real-time scheduling: %w", rerr)
			}
		}()
	}
	run := e.run.Add(1)
	if cfg.Run != 0 {
		run = cfg.Run
	}
	n := len(e.hosts)
	for _, s := range e.socks {
		if s != nil {
			s.drops() // reset the kernel's counters
			s.resumeReading()
		}
	}
	sinks := make([]*sink, n)
	srcs := make([]*source, n)
	var remote []bool // shared by the sinks
	if cfg.LocalLatency {
		remote = e.remote()
	}
	for i := range srcs {
		sinks[i] = newSink(i, n, run)
		srcs[i] = newSource(i, n, cfg.Seed, cfg.Load)
		if e.hosts[i].Remote {
			srcs[i].remote = true
		} else {
			sinks[i].prefault()
			prefault(srcs[i].seq)
		}
		sinks[i].remote = remote
		sinks[i].shift = cfg.ClockShift
	}
	pairs, err := e.flowPairs(cfg)
	if err != nil {
		return nil, fmt.Errorf("traffic: %w", err)
	}
	for _, p := range pairs {
		if srcs[p[0]].sentTo == nil {
			srcs[p[0]].sentTo = map[int32]uint64{}
		}
		if f := &sinks[p[1]].flows[p[0]]; f.hist == nil {
			f.hist = &pat.Histogram{}
		}
	}
	var rwg sync.WaitGroup
	for i := range sinks {
		if e.socks[i] == nil {
			continue // another machine's host
		}
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			sinks[i].serve(e.socks[i])
		}()
	}
	start := monoNow() + int64(time.Millisecond) // all senders start together
	if cfg.StartNs != 0 {
		start = cfg.StartNs
	}
	sched := schedule{
		slot:     cfg.slotNs(),
		start:    start,
		measFrom: int64(cfg.Warmup),
		measTo:   int64(cfg.Warmup + cfg.Duration),
	}
	if e.stamp == nil {
		cfg.Batch = 1 // a batch needs the kernel's send stamp
	}
	var rp *rpState
	if cfg.RP != nil {
		if rp, err = e.startRP(cfg, srcs, start); err != nil {
			for _, s := range e.socks {
				if s != nil {
					s.stopReading()
				}
			}
			rwg.Wait()
			return nil, fmt.Errorf("traffic: %w", err)
		}
	}
	w := newSenders(e, cfg, sched, run, srcs, rp)
	var swg sync.WaitGroup
	for range cfg.Senders {
		swg.Go(func() { w.loop(ctx) })
	}
	var pr *prober
	if cfg.Probes != nil {
		pr = newProber(e, cfg.Probes, sched, run)
		swg.Go(func() { pr.loop(ctx) })
	}
	swg.Wait()
	w.finish()
	var rps *RPStats
	if rp != nil {
		rp.stop()
		rps = rp.finish(srcs, sched.measFrom, sched.measTo)
	}
	// A frame that arrives within the drain may sit in a block the kernel
	// hands over up to a retire period later (rounded up to its clock's
	// tick): read until then, or it would count as lost.
	select {
	case <-time.After(cfg.Drain + e.retire + retireSlack):
	case <-ctx.Done():
	}
	for _, s := range e.socks {
		if s != nil {
			s.stopReading()
		}
	}
	rwg.Wait()
	drops := make([]uint64, n)
	for i, s := range e.socks {
		if s != nil {
			drops[i] = s.drops()
		}
	}
	return &measurement{srcs: srcs, sinks: sinks, drops: drops, pairs: pairs, rps: rps, pr: pr, late: w.late}, ctx.Err()
}

// remote says which hosts are another machine's.
func (e *Engine) remote() []bool {
	r := make([]bool, len(e.hosts))
	for i, h := range e.hosts {
		r[i] = h.Remote
	}
	return r
}

// Run opens an engine on hosts, runs one measurement and closes it.
func Run(ctx context.Context, hosts []Host, cfg Config) (*Result, error) {
	e, err := Open(hosts, Options{})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return e.Run(ctx, cfg)
}
