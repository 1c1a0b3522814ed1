// Package condition is the switch-local logic of conditional routing (seed
// 000 §V-B): each emulated switch watches the egress queues of its
// inter-switch ports, emulates PAUSE from them (paused while the backlog is
// above XOFF, until it falls below XON) and, on a change, rewrites its own
// condition bitmask with one OpenFlow FlowMod — no controller round trip.
// The bitmask is what the controller's conditional rules test (see
// controller/conditional.go).
package condition

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethfab/ethfab/emulator/controller"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/kernel"
	"github.com/ethfab/ethfab/emulator/scenario"
	"github.com/ethfab/ethfab/emulator/topology"
)

// Default thresholds, in frames: a few full-size frames of backlog is
// already a queue a lossless switch would pause on.
var (
	DefaultXOff = scenario.Threshold{Value: 20, Unit: scenario.Frames}
	DefaultXOn  = scenario.Threshold{Value: 5, Unit: scenario.Frames}
)

// Options tune a Monitor.
type Options struct {
	XOff, XOn scenario.Threshold // zero: the defaults; one unit for both
	Interval  time.Duration      // queue polling period (0: 1 ms)
	LogSize   int                // events and reactions kept, oldest dropped first (0: 65536)

	// Reaction probing (see reaction.go): after each flip the switch's
	// rule counters are read every StatsPoll (0: 500 µs) until a frame
	// takes the new path or ReactLimit (0: 200 ms) passes. NoReaction
	// turns it off.
	StatsPoll  time.Duration
	ReactLimit time.Duration
	NoReaction bool
}

// Event is one pause or resume of a port, or a manual condition change.
type Event struct {
	Time    time.Time `json:"time"`
	Switch  string    `json:"switch"`
	Port    int       `json:"port"`
	Paused  bool      `json:"paused"`
	Backlog uint64    `json:"backlog_bytes"`
	QLen    uint64    `json:"qlen"`
	// Flip says the port has a condition bit: the switch sent a FlowMod.
	Flip   bool `json:"flip"`
	Manual bool `json:"manual,omitempty"`
}

// Counters summarize a Monitor's work.
type Counters struct {
	PauseEvents  uint64        `json:"pause_events"`
	ResumeEvents uint64        `json:"resume_events"`
	FlowMods     uint64        `json:"flow_mods"`
	FlowModErrs  uint64        `json:"flow_mod_errors"`
	Polls        uint64        `json:"polls"`
	PollTime     time.Duration `json:"poll_time_ns"` // total, every namespace
	Dropped      uint64        `json:"events_dropped"`
	// Cycles and CycleTime: Run's polls of every namespace and the time
	// from the start of one to the start of the next, summed — the real
	// onset resolution, which a slow dump stretches beyond Interval.
	Cycles    uint64        `json:"cycles"`
	CycleTime time.Duration `json:"cycle_time_ns"`
	// Reactions by outcome (reaction.go).
	Reacted     uint64 `json:"reacted"`     // pause flips with a diverted frame
	Undiverted  uint64 `json:"undiverted"`  // pause flips without one within ReactLimit
	Recovered   uint64 `json:"recovered"`   // resume flips with a frame back on the default
	Unrecovered uint64 `json:"unrecovered"` // resume flips without one within ReactLimit
	Unmeasured  uint64 `json:"unmeasured"`  // flips whose reaction could not be told (see Reaction.Why)
}

type port struct {
	sw      *sw
	num     int
	bit     int // -1: no condition names this port
	ifindex int
	paused  bool
	flips   atomic.Uint64 // pause/resume changes, for probers
}

type sw struct {
	name  string
	of    *ofConn
	mask  uint64
	ports map[int]*port
	// gen counts mask changes; probers read it to see their flip is
	// still the switch's latest.
	gen atomic.Uint64
}

type nsPoll struct {
	r     *kernel.StatsReader
	ports map[int]*port // by ifindex
}

// Monitor runs the condition logic of every switch of a lab.
type Monitor struct {
	o        Options
	bytes    bool
	xoff     uint64
	xon      uint64
	switches map[string]*sw
	ns       []*nsPoll
	smu      sync.Mutex // port states and masks: Poll against SetPaused

	mu     sync.Mutex
	events []Event
	head   int // ring start once full
	c      Counters
	reacts []Reaction
	rhead  int
	rtotal uint64 // reactions ever recorded

	pctx   context.Context // probers' lifetime: Run's
	probes sync.WaitGroup
	active atomic.Int32 // probers running
}

// New connects to every switch of a running conditional lab (one OpenFlow
// connection each, kept open) and resolves every inter-switch port's
// egress queue. Call Run to start polling, Close to disconnect.
func New(lab *fabric.Lab, o Options) (*Monitor, error) {
	if lab.Routing != string(scenario.Conditional) {
		return nil, fmt.Errorf("lab %s routes %s: conditions need routing.mode conditional", lab.Lab, lab.Routing)
	}
	if o.XOff.IsZero() {
		o.XOff = DefaultXOff
	}
	if o.XOn.IsZero() {
		o.XOn = scenario.Threshold{Value: min(DefaultXOn.Value, o.XOff.Value/2), Unit: o.XOff.Unit}
	}
	if o.XOff.Unit != o.XOn.Unit || o.XOn.Value >= o.XOff.Value {
		return nil, fmt.Errorf("xon %s must be below xoff %s, in the same unit", o.XOn, o.XOff)
	}
	if o.Interval <= 0 {
		o.Interval = time.Millisecond
	}
	if o.LogSize <= 0 {
		o.LogSize = 1 << 16
	}
	spec, err := topology.ParseSpec(lab.Topology)
	if err != nil {
		return nil, fmt.Errorf("lab topology: %w", err)
	}
	top, err := topology.Build(spec)
	if err != nil {
		return nil, err
	}
	byName := map[string]*topology.Switch{}
	for i := range top.Switches {
		byName[top.Switches[i].Name] = &top.Switches[i]
	}
	if o.StatsPoll <= 0 {
		o.StatsPoll = 500 * time.Microsecond
	}
	if o.ReactLimit <= 0 {
		o.ReactLimit = 200 * time.Millisecond
	}
	m := &Monitor{pctx: context.Background(), o: o, bytes: o.XOff.Unit == scenario.Bytes, xoff: uint64(o.XOff.Value), xon: uint64(o.XOn.Value), switches: map[string]*sw{}}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	for _, s := range lab.Switches {
		ts, found := byName[s.Name]
		if !found {
			return nil, fmt.Errorf("switch %s is not in topology %s", s.Name, lab.Topology)
		}
		of, err := dialOF(s.Mgmt)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", s.Name, err)
		}
		st := &sw{name: s.Name, of: of, ports: map[int]*port{}}
		m.switches[s.Name] = st
		bits := map[int]int{}
		for i, p := range controller.CondPorts(ts) {
			bits[int(p)] = i
		}
		for _, p := range ts.Ports {
			if p.Class == topology.ClassHost {
				continue
			}
			b, has := bits[p.Num]
			if !has {
				b = -1
			}
			st.ports[p.Num] = &port{sw: st, num: p.Num, bit: b}
		}
	}
	readers := map[string]*nsPoll{}
	for _, l := range lab.Links {
		for _, e := range []fabric.LinkEnd{l.A, l.B} {
			st := m.switches[e.Node]
			if st == nil || st.ports[e.Port] == nil {
				continue // a host end, or a host port
			}
			np := readers[e.NetNS]
			if np == nil {
				r, err := kernel.NewStatsReader(e.NetNS)
				if err != nil {
					return nil, err
				}
				np = &nsPoll{r: r, ports: map[int]*port{}}
				readers[e.NetNS] = np
				m.ns = append(m.ns, np)
			}
			idx, err := np.r.Index(e.Iface)
			if err != nil {
				return nil, fmt.Errorf("switch %s port %d: %w", e.Node, e.Port, err)
			}
			p := st.ports[e.Port]
			p.ifindex = idx
			np.ports[idx] = p
		}
	}
	ok = true
	return m, nil
}

// Run polls the queues every Interval until ctx ends, then waits for the
// reaction probers (those still waiting count as unmeasured).
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTicker(m.o.Interval)
	defer t.Stop()
	pctx, cancel := context.WithCancel(ctx)
	m.smu.Lock()
	m.pctx = pctx
	m.smu.Unlock()
	defer func() {
		cancel()
		m.probes.Wait()
		m.smu.Lock()
		m.pctx = context.Background()
		m.smu.Unlock()
	}()
	var last time.Time
	for {
		start := time.Now()
		if !last.IsZero() {
			m.mu.Lock()
			m.c.Cycles++
			m.c.CycleTime += start.Sub(last)
			m.mu.Unlock()
		}
		last = start
		if err := m.Poll(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll reads every queue once (one netlink dump per namespace) and applies
// XOFF/XON; each switch whose bitmask changed sends one FlowMod, without
// waiting for the switch to confirm.
func (m *Monitor) Poll() error {
	m.smu.Lock()
	defer m.smu.Unlock()
	changed := map[*sw]*flip{}
	for _, np := range m.ns {
		t0 := time.Now()
		all, err := np.r.All()
		d := time.Since(t0)
		if err != nil {
			return err
		}
		now := time.Now()
		m.mu.Lock()
		m.c.Polls++
		m.c.PollTime += d
		m.mu.Unlock()
		for idx, p := range np.ports {
			q, ok := all[idx]
			if !ok {
				continue
			}
			occ := q.QLen
			if m.bytes {
				occ = q.Backlog
			}
			switch {
			case !p.paused && occ > m.xoff:
				p.paused = true
			case p.paused && occ < m.xon:
				p.paused = false
			default:
				continue
			}
			if p.bit >= 0 {
				f := changed[p.sw]
				if f == nil {
					f = &flip{onset: now, before: p.sw.mask}
					changed[p.sw] = f
				}
				if p.paused {
					f.paused = append(f.paused, p)
				} else {
					f.resumed = append(f.resumed, p)
				}
				p.sw.mask ^= 1 << p.bit
				p.flips.Add(1)
			}
			m.record(Event{Time: now, Switch: p.sw.name, Port: p.num, Paused: p.paused, Backlog: q.Backlog, QLen: q.QLen, Flip: p.bit >= 0})
		}
	}
	for s, f := range changed {
		m.flip(s, f)
	}
	return nil
}

func (m *Monitor) flowMod(s *sw, sync bool) error {
	s.gen.Add(1)
	err := s.of.setMask(s.mask, sync)
	m.mu.Lock()
	m.c.FlowMods++
	if err != nil {
		m.c.FlowModErrs++
	}
	m.mu.Unlock()
	return err
}

// SetPaused pauses or resumes one port by hand, as if its queue had
// crossed XOFF or XON, and returns once the switch has applied it.
func (m *Monitor) SetPaused(switchName string, portNum int, paused bool) error {
	s := m.switches[switchName]
	if s == nil {
		return fmt.Errorf("no switch %s", switchName)
	}
	p := s.ports[portNum]
	if p == nil {
		return fmt.Errorf("%s has no inter-switch port %d", switchName, portNum)
	}
	m.smu.Lock()
	defer m.smu.Unlock()
	if p.paused == paused {
		return nil
	}
	p.paused = paused
	p.flips.Add(1)
	m.record(Event{Time: time.Now(), Switch: s.name, Port: portNum, Paused: paused, Flip: p.bit >= 0, Manual: true})
	if p.bit < 0 {
		return nil
	}
	s.mask ^= 1 << p.bit
	if err := m.flowMod(s, true); err != nil {
		return fmt.Errorf("switch %s: %w", s.name, err)
	}
	return nil
}

// Paused reports a port's state.
func (m *Monitor) Paused(switchName string, portNum int) bool {
	m.smu.Lock()
	defer m.smu.Unlock()
	if s := m.switches[switchName]; s != nil && s.ports[portNum] != nil {
		return s.ports[portNum].paused
	}
	return false
}

// Mask is a switch's current condition bitmask.
func (m *Monitor) Mask(switchName string) uint64 {
	m.smu.Lock()
	defer m.smu.Unlock()
	if s := m.switches[switchName]; s != nil {
		return s.mask
	}
	return 0
}

// Sync waits until every switch has applied every FlowMod sent so far.
func (m *Monitor) Sync() error {
	for _, s := range m.switches {
		if err := s.of.barrier(5 * time.Second); err != nil {
			return fmt.Errorf("switch %s: %w", s.name, err)
		}
	}
	return nil
}

func (m *Monitor) record(e Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Paused {
		m.c.PauseEvents++
	} else {
		m.c.ResumeEvents++
	}
	if len(m.events) < m.o.LogSize {
		m.events = append(m.events, e)
		return
	}
	m.events[m.head] = e
	m.head = (m.head + 1) % len(m.events)
	m.c.Dropped++
}

// Events returns the kept events, oldest first.
func (m *Monitor) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Event, 0, len(m.events))
	out = append(out, m.events[m.head:]...)
	return append(out, m.events[:m.head]...)
}

// Counters returns the counters so far; FlowModErrs includes errors the
// switches reported for unconfirmed FlowMods.
func (m *Monitor) Counters() Counters {
	m.mu.Lock()
	c := m.c
	m.mu.Unlock()
	for _, s := range m.switches {
		c.FlowModErrs += s.of.errs.Load()
	}
	return c
}

// Close disconnects from the switches and closes the netlink sockets.
func (m *Monitor) Close() {
	for _, s := range m.switches {
		s.of.close()
	}
	for _, np := range m.ns {
		np.r.Close()
	}
}
