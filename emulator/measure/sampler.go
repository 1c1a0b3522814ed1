// Package measure reads the fabric's own counters during a traffic phase:
// per-port OVS counters, per-rule-kind flow counters (so the share of
// traffic routed non-minimally comes from the switches' own statistics),
// tbf queue backlog sampled at an interval, veth and datapath drops, and
// CPU usage. It fills results.Point and results.FidelityInput.
//
// Cost model: counters that need ovs-ofctl (flows, ports) are read only at
// Start and Stop; during the phase only the qdisc backlog is polled, with
// one netlink dump per fabric namespace per interval.
package measure

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/ovs/openflow"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/topology"
	"golang.org/x/sys/unix"
)

// Options tune a Sampler. Zero values take the defaults.
type Options struct {
	// Interval between backlog samples (default 10ms).
	Interval time.Duration
	// Budget is the largest share of the interval one sample may take
	// before the interval is doubled (default 0.1), so that polling never
	// takes more than about a tenth of a core from the emulation.
	Budget float64
	// MaxSamples bounds each backlog time series (default 1000); past it
	// the series is thinned to every other sample and the stride doubles,
	// so a long phase keeps its whole shape at a coarser grain.
	MaxSamples int
	// HotPorts is the number of backlog series kept in the report, the
	// ports with the largest mean backlog (default 4).
	HotPorts int
	// Parallel is the number of bridges read at a time at Start and Stop
	// (default 2, the cores of the reference machine).
	Parallel int
	// Bin is the width of the point's timeline bins (default 500ms).
	Bin time.Duration
	// Topology, if set, gives each switch its group and index for the
	// per-switch injected throughput; otherwise Dragonfly names
	// ("g3s5") are parsed and other switches get group -1.
	Topology *topology.Topology
}

func (o *Options) defaults() {
	if o.Interval <= 0 {
		o.Interval = 10 * time.Millisecond
	}
	if o.Budget <= 0 {
		o.Budget = 0.1
	}
	if o.MaxSamples <= 1 {
		o.MaxSamples = 1000
	}
	if o.HotPorts <= 0 {
		o.HotPorts = 4
	}
	if o.Parallel <= 0 {
		o.Parallel = 2
	}
	if o.Bin <= 0 {
		o.Bin = 500 * time.Millisecond
	}
}

// end is one shaped link end in a fabric namespace.
type end struct {
	ns      string
	iface   string
	ifindex int
	label   string // "g0s1:5"
	link    string // "g0s1:5 -> g0s2:3"
	rateBps float64
	// host names the host a host-facing end leads to.
	host string
	// hostFacing: the switch side of a host link; its veth rx_dropped is
	// the host end's transmit drops.
	hostFacing bool
	sw, port   int
}

// series is one end's backlog over the phase.
type series struct {
	bytes, frames []uint32
	busy          int    // samples with a non-empty queue
	sum           uint64 // of backlog bytes, for the mean
	max           uint64
	// From a sample whose backlog is at least what the link sends at its
	// rate until the next sample, the queue cannot have emptied before
	// that next sample: the link never idled. What it sent over such
	// intervals is its achieved rate as a saturated link (the fidelity
	// check), whatever it did during warm-up, drain or lulls. (Two
	// samples that merely both found the queue non-empty prove nothing:
	// it can drain and refill in between, and an idle link then looked
	// like a shaper falling behind.)
	busyBytes          uint64
	busySecs           float64
	lastTS             float64
	lastSent, lastBack uint64
	seen               bool
}

// Sampler measures one traffic phase (or one load of it): Start before
// the traffic, Stop after. A Sampler can be started again after Stop.
type Sampler struct {
	lab  *fabric.Lab
	opt  Options
	mgmt []string
	// conns are the OpenFlow connections to the bridges (Open vSwitch),
	// by switch, made by readSwitches.
	conns []*openflow.Conn
	// bpf reaches the eBPF datapath's counters (nil on Open vSwitch);
	// queues its queue counters, where the program keeps them: it drops
	// what finds a counted queue full, before tbf sees it.
	bpf *datapath.Handle
	// counterAt: each lab switch's place in the datapath's counters (counterIndex; nil: the same).
	counterAt []int
	queues    *datapath.QueueReader
	// hostPorts[i] are switch i's OpenFlow ports that face hosts.
	hostPorts []map[int]bool
	hostRate  []float64 // per switch: capacity of its host links, bits/s
	// totalHostRate sums hostRate: the timeline's accepted load is over it.
	totalHostRate float64
	group         []int
	index         []int

	nss     []string
	readers map[string]*kernel.StatsReader
	ends    []end
	byNS    map[string]map[int]int // ns -> ifindex -> ends index

	// Per run.
	mu       sync.Mutex
	stop     chan struct{}
	done     chan struct{}
	t0       time.Time
	cpu0     kernel.CPUTimes
	procs    []watchedProc
	threads0 cpuSnapshot
	sw0      []switchCounters
	q0       []kernel.QdiscStats
	lnk0     map[string]map[int]kernel.LinkStats
	lost0    uint64
	times    []float64
	stride   int
	tick     int
	interval time.Duration
	ser      []series
	cost     time.Duration
	samples  int
	slow     int
	sampErr  error
	// defaultBin is Options.Bin as New was given it (SetBin changes opt).
	defaultBin time.Duration
	marks      map[[2]string]linkMark // link ends the point changed (LinkOff, LinkRateChanged)
	tagged     uint64                 // tagged frames hosts sent during the point (TaggedFromHosts)
	bin        bin
	timeline   results.Timeline
}

// bin is the timeline bin being filled: where it started, the bytes the
// host-facing queues had sent then, the inter-switch queues' mean backlog
// summed over its samples, and (eBPF datapath) the switches' counters then.
type bin struct {
	start      float64
	delivered  uint64
	backlogSum float64
	samples    int
	sw         []switchCounters
	// hostBytes is each host-facing queue's bytes sent then, by end
	// (small fabrics only: maxHostSeries).
	hostBytes []uint64
}

// maxHostSeries bounds the fabrics whose timeline carries each host's
// delivered load (seed 002 Fig. 6's per-flow bandwidth every 100 ms).
const maxHostSeries = 64

// New prepares a sampler for a lab: it opens one netlink socket per fabric
// namespace and resolves every switch-side link end.
func New(lab *fabric.Lab, o Options) (*Sampler, error) {
	o.defaults()
	s := &Sampler{lab: lab, opt: o, defaultBin: o.Bin, readers: map[string]*kernel.StatsReader{}, byNS: map[string]map[int]int{}}
	if lab.BPF != nil {
		h, err := datapath.Open(*lab.BPF)
		if err != nil {
			return nil, fmt.Errorf("measure: %w", err)
		}
		s.bpf = h
		if s.counterAt, err = counterIndex(lab, o.Topology); err != nil {
			h.Close()
			return nil, fmt.Errorf("measure: %w", err)
		}
		if h.HasQueues() {
			if s.queues, err = h.Queues(); err != nil {
				h.Close()
				return nil, fmt.Errorf("measure: %w", err)
			}
		}
	}
	swIdx := map[string]int{}
	for i, sw := range lab.Switches {
		swIdx[sw.Name] = i
		s.mgmt = append(s.mgmt, sw.Mgmt)
		s.hostPorts = append(s.hostPorts, map[int]bool{})
		g, x := -1, -1
		if o.Topology != nil && i < len(o.Topology.Switches) && o.Topology.Switches[i].Name == sw.Name {
			g, x = o.Topology.Switches[i].Group, o.Topology.Switches[i].Index
		} else if _, err := fmt.Sscanf(sw.Name, "g%ds%d", &g, &x); err != nil {
			g, x = -1, i
		}
		s.group, s.index = append(s.group, g), append(s.index, x)
	}
	s.hostRate = make([]float64, len(lab.Switches))
	for _, l := range lab.Links {
		rate := shapingRate(l.Shaping)
		a, ok := swIdx[l.A.Node]
		if !ok {
			s.Close()
			return nil, fmt.Errorf("measure: link end %s is no switch of lab %s", l.A.Node, lab.Lab)
		}
		host := l.Class == "host"
		if host {
			s.hostPorts[a][l.A.Port] = true
			s.hostRate[a] += rate
			s.totalHostRate += rate
		}
		bLabel := l.B.Node
		if b, ok := swIdx[l.B.Node]; ok {
			bLabel = fmt.Sprintf("%s:%d", lab.Switches[b].Name, l.B.Port)
			s.ends = append(s.ends, end{ns: l.B.NetNS, iface: l.B.Iface, label: bLabel, rateBps: rate, sw: b, port: l.B.Port,
				link: bLabel + " -> " + fmt.Sprintf("%s:%d", l.A.Node, l.A.Port)})
		}
		aLabel := fmt.Sprintf("%s:%d", l.A.Node, l.A.Port)
		e := end{ns: l.A.NetNS, iface: l.A.Iface, label: aLabel, link: aLabel + " -> " + bLabel,
			rateBps: rate, hostFacing: host, sw: a, port: l.A.Port}
		if host {
			e.host = l.B.Node
		}
		s.ends = append(s.ends, e)
	}
	for i := range s.ends {
		e := &s.ends[i]
		if _, ok := s.readers[e.ns]; !ok {
			r, err := kernel.NewStatsReader(e.ns)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("measure: %w", err)
			}
			s.readers[e.ns] = r
			s.nss = append(s.nss, e.ns)
			s.byNS[e.ns] = map[int]int{}
		}
	}
	// The namespace's reader resolves every interface from one link dump.
	for i := range s.ends {
		e := &s.ends[i]
		n, err := s.readers[e.ns].Index(e.iface)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("measure: %w", err)
		}
		e.ifindex = n
		s.byNS[e.ns][n] = i
	}
	return s, nil
}

// shapingRate reads the rate from a Link.Shaping description
// ("rate 100mbit delay 1ms").
func shapingRate(desc string) float64 {
	f := strings.Fields(desc)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "rate" {
			if v, err := rate.Parse(f[i+1]); err == nil {
				return float64(v)
			}
		}
	}
	return 0
}

// LinkOff marks a link end (namespace, interface) the point turned off:
// what it drops from then on is the modelled fabric's loss (Drops.LinkOff),
// not the machine's. Start clears the marks.
func (s *Sampler) LinkOff(ns, iface string) { s.mark(ns, iface, markedOff) }

// linkMark says how a point changed a link end.
type linkMark uint8

const (
	markedOff    linkMark = 1 << iota // turned off (Drops.LinkOff)
	markedVaried                      // its rate changed (LinkStats.Varied)
)

func (s *Sampler) mark(ns, iface string, m linkMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.marks == nil {
		s.marks = map[[2]string]linkMark{}
	}
	s.marks[[2]string{ns, iface}] |= m
}

// TaggedFromHosts counts n 802.1Q-tagged frames the hosts sent during the
// point (seed 002's learning broadcasts): the kernel counts each one
// dropped on the switch side's receive, no VLAN device taking it, after
// Open vSwitch's socket has taken it (a 3x3 mesh's 27 broadcasts: 27
// drops, and every switch learned every host). Up to n such drops are
// not the machine's (Drops.TaggedRx). Start clears the count.
func (s *Sampler) TaggedFromHosts(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tagged += n
}

// LinkRateChanged marks a link end whose rate the point changed (seed
// 002's multispeed regulation): it had no one rate to be judged by, so
// the fidelity verdict's link-rate check leaves it out (LinkStats.Varied).
// Start clears the marks.
func (s *Sampler) LinkRateChanged(ns, iface string) { s.mark(ns, iface, markedVaried) }

// SetBin sets the timeline's bin width for the points started after it
// (0: the Options' default).
func (s *Sampler) SetBin(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		d = s.defaultBin
	}
	s.opt.Bin = d
}

// Close releases the netlink sockets and the bridges' OpenFlow connections.
func (s *Sampler) Close() {
	if s.queues != nil {
		s.queues.Close()
		s.queues = nil
	}
	if s.bpf != nil {
		s.bpf.Close()
		s.bpf = nil
	}
	for _, r := range s.readers {
		r.Close()
	}
	s.readers = map[string]*kernel.StatsReader{}
	for _, c := range s.conns {
		if c != nil {
			c.Close()
		}
	}
	s.conns = nil
}

// watched lists the processes whose threads a point accounts for: every
// ovs-vswitchd of the lab and this process (traffic engine, condition
// monitor, sampler).
func (s *Sampler) watched() []watchedProc {
	var procs []watchedProc
	for k, in := range s.lab.OVS.Instances {
		procs = append(procs, watchedProc{label: fmt.Sprintf("vswitchd %d", k), pid: ovs.SwitchPID(in.RunDir), vswitchd: true})
	}
	return append(procs, watchedProc{label: "ethfab", pid: os.Getpid()})
}

// Start snapshots every counter and starts polling queue backlogs.
func (s *Sampler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return fmt.Errorf("measure: already started")
	}
	s.marks, s.tagged = nil, 0
	var err error
	if s.lnk0, err = s.linkStats(true); err != nil {
		return err
	}
	if s.sw0, err = s.switches(ctx, s.lnk0); err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	if s.lost0, err = s.lost(ctx); err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	s.ser = make([]series, len(s.ends))
	s.times, s.stride, s.tick, s.cost, s.samples, s.slow, s.sampErr = nil, 1, 0, 0, 0, 0, nil
	s.interval = s.opt.Interval
	if s.cpu0, err = kernel.ReadCPU(); err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	s.procs = s.watched()
	s.threads0 = snapshotCPU(s.procs)
	s.t0 = time.Now()
	s.q0 = make([]kernel.QdiscStats, len(s.ends))
	if err := s.pollInto(s.q0, nil); err != nil {
		return err
	}
	s.timeline = results.Timeline{}
	s.bin = bin{delivered: s.delivered(s.q0), hostBytes: s.hostBytes(s.q0)}
	if s.bpf != nil {
		s.bin.sw = s.sw0
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop(s.stop, s.done)
	return nil
}

// linkStats reads every watched namespace's device counters, by
// ifindex (one statistics dump each; kernel.StatsReader.Links). The maps
// are the readers', valid until the next read, unless keep copies them.
func (s *Sampler) linkStats(keep bool) (map[string]map[int]kernel.LinkStats, error) {
	out := make(map[string]map[int]kernel.LinkStats, len(s.nss))
	for _, ns := range s.nss {
		st, err := s.readers[ns].Links()
		if err != nil {
			return nil, fmt.Errorf("measure: %w", err)
		}
		if keep {
			st = maps.Clone(st)
		}
		out[ns] = st
	}
	return out, nil
}

// pollInto reads every end's qdisc counters: one dump per namespace.
func (s *Sampler) pollInto(q []kernel.QdiscStats, seen []bool) error {
	for _, ns := range s.nss {
		all, err := s.readers[ns].All()
		if err != nil {
			return fmt.Errorf("measure: %w", err)
		}
		m := s.byNS[ns]
		for ifindex, st := range all {
			if i, ok := m[ifindex]; ok {
				if s.queues != nil {
					// The queue's drops are the program's (tbf's own
					// stay 0 there).
					st.Drops += s.queues.Read(uint32(ifindex)).DropPkts
				}
				q[i] = st
				if seen != nil {
					seen[i] = true
				}
			}
		}
	}
	return nil
}

func (s *Sampler) loop(stop, done chan struct{}) {
	defer close(done)
	// A sample's cost is the CPU its thread spent on it, and the
	// interval backs off only when the cheapest of the last costWindow
	// samples overran its budget. On a saturated machine a sample's wall
	// time includes waiting for a core, and its CPU time the packet
	// softirqs that happened to run on its thread: counting single samples
	// backed the interval off to 320 ms within a point (DF(2,4,2) at
	// 5 Mbit/s, uniform load 1.0), too coarse for the backlog series and
	// the links' rate evidence, when a sample costs 0.43 ms there.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var recent [costWindow]time.Duration
	q := make([]kernel.QdiscStats, len(s.ends))
	timer := time.NewTimer(s.interval)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		t, c0 := time.Now(), threadCPU()
		err := s.pollInto(q, nil)
		t1, took := time.Now(), threadCPU()-c0
		s.mu.Lock()
		if err != nil {
			if s.sampErr == nil {
				s.sampErr = err
			}
			s.mu.Unlock()
			return
		}
		// The counters were read some time between t and t1: stamped at
		// the middle. Stamped at t, a poll delayed by a busy core (a path
		// change's compile and map writes in this process) put up to 3.5%
		// of a 100 ms bin's bytes in the wrong bin (seed 002 Table 7 at
		// 100 Mbit/s: bins 0.964 and 1.035 of the link around changes,
		// 0.994-1.008 without them).
		ts := t.Add(t1.Sub(t) / 2).Sub(s.t0).Seconds()
		s.record(ts, q)
		if ts-s.bin.start >= s.opt.Bin.Seconds() {
			s.closeBin(ts, q, nil)
		}
		s.cost += took
		recent[s.samples%costWindow] = took
		s.samples++
		if least := slices.Min(recent[:min(s.samples, costWindow)]); s.samples >= costWindow && float64(least) > s.opt.Budget*float64(s.interval) {
			// Polling costs more than its budget: sample less often
			// rather than take the cores from the emulation.
			s.slow++
			s.interval *= 2
			clear(recent[:])
		}
		next := s.interval - time.Since(t)
		s.mu.Unlock()
		if next < 0 {
			next = 0
		}
		timer.Reset(next)
	}
}

// record adds one sample. Series are allocated only for ends whose queue
// was ever non-empty; the rest are all zeros and cost nothing.
func (s *Sampler) record(ts float64, q []kernel.QdiscStats) {
	keep := s.tick%s.stride == 0
	s.tick++
	var inter, n uint64 // the inter-switch queues' backlog, for the bin
	for i := range q {
		b := q[i].Backlog
		if !s.ends[i].hostFacing {
			inter += b
			n++
		}
		sr := &s.ser[i]
		if dt := ts - sr.lastTS; sr.seen && s.ends[i].rateBps > 0 && float64(sr.lastBack) >= s.ends[i].rateBps/8*dt && q[i].Bytes >= sr.lastSent {
			sr.busyBytes += q[i].Bytes - sr.lastSent
			sr.busySecs += dt
		}
		sr.seen, sr.lastTS, sr.lastSent, sr.lastBack = true, ts, q[i].Bytes, b
		if b > 0 {
			sr.busy++
			sr.sum += b
			sr.max = max(sr.max, b)
		}
		if !keep {
			continue
		}
		if sr.bytes == nil && b == 0 {
			continue
		}
		if sr.bytes == nil {
			sr.bytes = make([]uint32, len(s.times), s.opt.MaxSamples)
			sr.frames = make([]uint32, len(s.times), s.opt.MaxSamples)
		}
		sr.bytes = append(sr.bytes, uint32(min(b, 1<<32-1)))
		sr.frames = append(sr.frames, uint32(min(q[i].QLen, 1<<32-1)))
	}
	if n > 0 {
		s.bin.backlogSum += float64(inter) / float64(n)
	}
	s.bin.samples++
	if !keep {
		return
	}
	s.times = append(s.times, ts)
	if len(s.times) >= s.opt.MaxSamples {
		s.times = thin(s.times)
		for i := range s.ser {
			if s.ser[i].bytes != nil {
				s.ser[i].bytes = thin(s.ser[i].bytes)
				s.ser[i].frames = thin(s.ser[i].frames)
			}
		}
		s.stride *= 2
	}
}

// hostBytes is each end's queue bytes sent, for the per-host series; nil
// past maxHostSeries hosts.
func (s *Sampler) hostBytes(q []kernel.QdiscStats) []uint64 {
	if s.lab == nil || len(s.lab.Hosts) > maxHostSeries {
		return nil
	}
	out := make([]uint64, len(q))
	for i := range q {
		out[i] = q[i].Bytes
	}
	return out
}

// delivered sums the bytes the host-facing queues have sent: what the
// fabric delivered to hosts.
func (s *Sampler) delivered(q []kernel.QdiscStats) uint64 {
	var n uint64
	for i := range q {
		if s.ends[i].hostFacing {
			n += q[i].Bytes
		}
	}
	return n
}

// closeBin ends the timeline bin at ts and starts the next. On the eBPF
// datapath it takes the switches' rule counters for the bin's non-minimal
// share: sw when the caller has just read them (Stop), else it reads them
// (a map read and one link dump per namespace, well under a millisecond
// each here). On Open vSwitch that takes an OpenFlow dump of every
// bridge, too dear to do twice a second during a point, so the timeline
// has no non-minimal share there.
func (s *Sampler) closeBin(ts float64, q []kernel.QdiscStats, sw []switchCounters) {
	b := &s.bin
	dt := ts - b.start
	rate := s.totalHostRate
	d := s.delivered(q)
	tl := &s.timeline
	tl.BinS = s.opt.Bin.Seconds()
	tl.T = append(tl.T, ts)
	acc := 0.0
	if dt > 0 && rate > 0 {
		acc = 8 * float64(sub(d, b.delivered)) / dt / rate
	}
	tl.AcceptedLoad = append(tl.AcceptedLoad, acc)
	mean := 0.0
	if b.samples > 0 {
		mean = b.backlogSum / float64(b.samples)
	}
	tl.MeanBacklogBytes = append(tl.MeanBacklogBytes, mean)
	next := bin{start: ts, delivered: d, hostBytes: s.hostBytes(q)}
	if b.hostBytes != nil && next.hostBytes != nil {
		if tl.DeliveredByHost == nil {
			tl.DeliveredByHost = map[string][]float64{}
		}
		for i, e := range s.ends {
			if e.hostFacing {
				v := 0.0
				if dt > 0 && e.rateBps > 0 {
					v = 8 * float64(sub(next.hostBytes[i], b.hostBytes[i])) / dt / e.rateBps
				}
				tl.DeliveredByHost[e.host] = append(tl.DeliveredByHost[e.host], v)
			}
		}
	}
	if b.sw != nil && sw == nil {
		sw, _ = s.switches(context.Background(), nil) // nil on error
	}
	if b.sw != nil && sw != nil {
		inj, _, share := s.frames(b.sw, sw)
		tl.NonminimalShare = append(tl.NonminimalShare, share)
		tl.InjectedFrames = append(tl.InjectedFrames, inj)
		next.sw = sw
	}
	if next.sw == nil {
		// A failed read ends the series rather than misalign it.
		tl.NonminimalShare, tl.InjectedFrames = nil, nil
	}
	*b = next
}

// costWindow is how many recent samples' costs the interval's backoff
// looks at.
const costWindow = 8

// threadCPU is the calling thread's CPU time so far.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// thin keeps every other element.
func thin[T any](v []T) []T {
	n := 0
	for i := 0; i < len(v); i += 2 {
		v[n] = v[i]
		n++
	}
	return v[:n]
}

// Stop ends polling, snapshots every counter again and reports the
// differences.
func (s *Sampler) Stop(ctx context.Context) (*Report, error) {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.mu.Unlock()
	if stop == nil {
		return nil, fmt.Errorf("measure: not started")
	}
	close(stop)
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop, s.done = nil, nil
	dur := time.Since(s.t0)
	cpu1, err := kernel.ReadCPU()
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	threads1 := snapshotCPU(s.procs)
	q1 := make([]kernel.QdiscStats, len(s.ends))
	if err := s.pollInto(q1, nil); err != nil {
		return nil, err
	}
	lnk1, err := s.linkStats(false)
	if err != nil {
		return nil, err
	}
	sw1, err := s.switches(ctx, lnk1)
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	lost1, err := s.lost(ctx)
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	if ts := dur.Seconds(); ts-s.bin.start >= s.opt.Bin.Seconds()/2 {
		s.closeBin(ts, q1, sw1)
	}
	r := s.report(dur, kernel.BusyFraction(s.cpu0, cpu1), q1, lnk1, sw1, lost1)
	if r.Leaked, err = s.leaked(q1); err != nil {
		return nil, err
	}
	r.CPU = cpuSplit(s.threads0, threads1)
	r.Start = s.t0
	if len(s.timeline.T) > 0 {
		tl := s.timeline
		r.Timeline = &tl
	}
	return r, s.sampErr
}

// frameTotals counts, over every switch, the unicast frames injected into
// the fabric (frames received on host ports, less those matched by DMP
// rules, by broadcast rules for host in_ports, and by the miss rule) and
// the non-minimally routed ones among them (valiant rules and, off a
// Clos, conditional alternatives: both match only host in_ports, so each
// counts a frame once, at its injection).
func (s *Sampler) frameTotals(sw []switchCounters) (injected, nonmin uint64) {
	var other uint64
	for i := range sw {
		c := &sw[i]
		nonmin += c.kindPackets[controller.KindValiant]
		// Conditional routing's alternatives match at injection too: on a
		// Dragonfly or Flattened Butterfly they are the non-minimal detour;
		// on a Clos they are other uplinks, as minimal as the default.
		if s.opt.Topology == nil || s.opt.Topology.Spec.Kind != topology.Clos {
			nonmin += c.kindPackets[controller.KindAlternative]
		}
		other += c.kindPackets[controller.KindDMP] + c.kindPackets[controller.KindMiss] + c.hostBcast
		for p, st := range c.ports {
			if i < len(s.hostPorts) && s.hostPorts[i][p] {
				injected += st.RxPackets
			}
		}
	}
	return sub(injected, other), nonmin
}

// frames is the injected and non-minimally routed frames between two
// readings of the switches' counters, and the non-minimal share.
func (s *Sampler) frames(a, b []switchCounters) (injected, nonmin uint64, share float64) {
	i0, n0 := s.frameTotals(a)
	i1, n1 := s.frameTotals(b)
	injected, nonmin = sub(i1, i0), sub(n1, n0)
	injected = max(injected, nonmin)
	if injected > 0 {
		share = float64(nonmin) / float64(injected)
	}
	return injected, nonmin, share
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0 // counter reset (port re-added): count nothing rather than wrap
	}
	return a - b
}

func (s *Sampler) report(dur time.Duration, cpu float64, q1 []kernel.QdiscStats,
	lnk1 map[string]map[int]kernel.LinkStats, sw1 []switchCounters, lost1 uint64) *Report {
	secs := dur.Seconds()
	r := &Report{
		Duration: dur, CPUBusy: cpu, RulePackets: map[string]uint64{}, RuleBytes: map[string]uint64{},
		Samples: s.samples, Interval: s.interval, SampleCost: s.cost, SlowSamples: s.slow,
	}
	if s.samples > 0 {
		r.MeanSampleTime = s.cost / time.Duration(s.samples)
	}
	r.Drops.Datapath = sub(lost1, s.lost0)
	qdrops := map[[2]int]uint64{} // (switch, port) -> tbf drops
	kdrops := map[[2]int][2]uint64{}
	var hostRx uint64 // receive drops on host-facing ends, links on
	for i, e := range s.ends {
		d := sub(q1[i].Drops, s.q0[i].Drops)
		r.Drops.Queue += d
		qdrops[[2]int{e.sw, e.port}] = d
		a, b := s.lnk0[e.ns][e.ifindex], lnk1[e.ns][e.ifindex]
		tx, rx := sub(b.TxDropped, a.TxDropped), uint64(0)
		if e.hostFacing {
			rx = sub(b.RxDropped, a.RxDropped)
		}
		mk := s.marks[[2]string{e.ns, e.iface}]
		if mk&markedOff != 0 {
			r.Drops.LinkOff += tx + rx
		} else {
			r.Drops.Kernel += tx + rx
			hostRx += rx
		}
		kdrops[[2]int{e.sw, e.port}] = [2]uint64{sub(b.RxDropped, a.RxDropped), tx}
		ls := LinkStats{Port: e.label, Link: e.link, RateBps: e.rateBps, QueueDrops: d, Varied: mk&markedVaried != 0,
			Bytes: sub(q1[i].Bytes, s.q0[i].Bytes), Packets: sub(q1[i].Packets, s.q0[i].Packets)}
		if s.samples > 0 {
			ls.Busy = float64(s.ser[i].busy) / float64(s.samples)
			ls.MeanBacklog = float64(s.ser[i].sum) / float64(s.samples)
		}
		ls.MaxBacklog = s.ser[i].max
		ls.Qdisc = q1[i].Kind
		if _, present := lnk1[e.ns][e.ifindex]; !present {
			// Deleted under the run (ip link del): the fabric is no
			// longer the one built, which is the news, not its shaping.
			r.Missing = append(r.Missing, e.link)
		} else if e.rateBps > 0 && ls.Qdisc != "tbf" {
			r.Unshaped = append(r.Unshaped, e.label)
		}
		if secs > 0 {
			ls.AchievedBps = 8 * float64(ls.Bytes) / secs
			// Every switch-side end's queue carries the frames its
			// switch forwarded out of that port: one switch hop each.
			r.SwitchHopFPS += float64(ls.Packets) / secs
		}
		if sr := &s.ser[i]; sr.busySecs > 0 {
			ls.BusySecs = sr.busySecs
			ls.BusyBps = 8 * float64(sr.busyBytes) / sr.busySecs
		}
		r.Links = append(r.Links, ls)
	}
	if t := min(s.tagged, hostRx); t > 0 {
		r.Drops.Kernel -= t
		r.Drops.TaggedRx = t
	}
	for i := range sw1 {
		a, b := &s.sw0[i], &sw1[i]
		for k := 0; k < numKinds; k++ {
			name := controller.Kind(k).String()
			r.RulePackets[name] += sub(b.kindPackets[k], a.kindPackets[k])
			r.RuleBytes[name] += sub(b.kindBytes[k], a.kindBytes[k])
		}
		var inj, injBytes uint64
		for p, st := range b.ports {
			st0 := a.ports[p]
			pd := PortDelta{Switch: s.lab.Switches[i].Name, Port: p, Host: s.hostPorts[i][p],
				RxPackets: sub(st.RxPackets, st0.RxPackets), RxBytes: sub(st.RxBytes, st0.RxBytes),
				TxPackets: sub(st.TxPackets, st0.TxPackets), TxBytes: sub(st.TxBytes, st0.TxBytes),
				RxDrops: sub(st.RxDrops, st0.RxDrops), TxDrops: sub(st.TxDrops, st0.TxDrops)}
			r.Ports = append(r.Ports, pd)
			if pd.Host {
				inj += pd.RxPackets
				injBytes += pd.RxBytes
			}
			// OVS port drops not explained by the kernel (veth) or the
			// modelled queue (a full tbf refuses OVS's send) are the
			// datapath's own.
			kd := kdrops[[2]int{i, p}]
			r.Drops.Datapath += sub(pd.RxDrops, kd[0]) + sub(pd.TxDrops, kd[1]+qdrops[[2]int{i, p}])
		}
		si := SwitchInjected{Switch: s.lab.Switches[i].Name, Group: s.group[i], Index: s.index[i], Frames: inj, Bytes: injBytes}
		if secs > 0 {
			si.Bps = 8 * float64(injBytes) / secs
		}
		if s.hostRate[i] > 0 {
			si.Fraction = si.Bps / s.hostRate[i]
		}
		if len(s.hostPorts[i]) > 0 {
			r.PerSwitch = append(r.PerSwitch, si)
		}
	}
	sort.Slice(r.Ports, func(i, j int) bool {
		if r.Ports[i].Switch != r.Ports[j].Switch {
			return r.Ports[i].Switch < r.Ports[j].Switch
		}
		return r.Ports[i].Port < r.Ports[j].Port
	})
	r.InjectedFrames, r.NonminimalFrames, r.NonminimalShare = s.frames(s.sw0, sw1)
	// The hottest ends' series, by mean backlog.
	order := make([]int, len(s.ends))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return s.ser[order[a]].sum > s.ser[order[b]].sum })
	hot := order[:min(s.opt.HotPorts, len(order))]
	// And the hottest link between switches, if host-facing ports (a
	// standing queue towards a host taking a flow at its link's rate)
	// crowd it out: seed 003's hot queue is a link's (hot_queue_qeq).
	if !slices.ContainsFunc(hot, func(i int) bool { return !s.ends[i].hostFacing }) {
		if k := slices.IndexFunc(order, func(i int) bool { return !s.ends[i].hostFacing }); k >= 0 {
			hot = append(slices.Clip(hot), order[k])
		}
	}
	for _, i := range hot {
		sr := &s.ser[i]
		if sr.sum == 0 {
			continue
		}
		bs := results.BacklogSeries{Port: s.ends[i].label, Link: s.ends[i].link, Host: s.ends[i].host, T: append([]float64(nil), s.times...)}
		for j := range sr.bytes {
			bs.Bytes = append(bs.Bytes, uint64(sr.bytes[j]))
			bs.Frames = append(bs.Frames, uint64(sr.frames[j]))
		}
		r.Backlog = append(r.Backlog, bs)
	}
	return r
}

// leakChecks and leakGap: a counted queue that holds more than its qdisc
// is read again leakChecks-1 times leakGap apart, so that a frame between
// tbf and the far end's program (microseconds) is not taken for a leak.
const (
	leakChecks = 3
	leakGap    = 5 * time.Millisecond
)

// leaked lists the counted queues (eBPF datapath, queue counters) that
// still hold bytes their qdisc does not, at every one of leakChecks
// readings from q (the qdiscs' stats at the point's end). Such a count
// never comes back down, and the program drops what it takes for a full
// queue, so the queue it models is that much shorter. A CNM forwarded by
// a switch leaked this way once (TestCNMsLeaveQueueCountsEmpty); a frame
// the kernel drops between tbf and the far end does too.
func (s *Sampler) leaked(q []kernel.QdiscStats) ([]results.QueueLeak, error) {
	if s.queues == nil {
		return nil, nil
	}
	drift, limit := make([]int64, len(s.ends)), make([]uint64, len(s.ends))
	left := false
	for k := 0; k < leakChecks; k++ {
		if k > 0 {
			if !left {
				return nil, nil
			}
			time.Sleep(leakGap)
			q = make([]kernel.QdiscStats, len(s.ends))
			if err := s.pollInto(q, nil); err != nil {
				return nil, err
			}
		}
		left = false
		for i, e := range s.ends {
			c := s.queues.Read(uint32(e.ifindex))
			if c.Limit == 0 {
				continue
			}
			d := c.Backlog() - int64(q[i].Backlog)
			if k > 0 {
				d = min(d, drift[i])
			}
			drift[i], limit[i] = d, c.Limit
			left = left || d > 0
		}
	}
	var out []results.QueueLeak
	for i, e := range s.ends {
		if drift[i] > 0 {
			out = append(out, results.QueueLeak{Port: e.label, Bytes: uint64(drift[i]), Limit: limit[i]})
		}
	}
	return out, nil
}
