// Package condition is the switch-local logic of conditional routing (seed
// 000 §V-B): each emulated switch watches the egress queues of its
// inter-switch ports, emulates PAUSE from them (paused while the backlog is
// above XOFF, until it falls below XON) and, on a change, rewrites its own
// condition bitmask with one OpenFlow FlowMod — no controller round trip.
// The bitmask is what the controller's conditional rules test (see
// controller/conditional.go).
//
// PAUSE goes upstream. In lossless Ethernet a congested egress port is not
// what gets paused: its switch runs out of buffer for the links bringing
// the frames and pauses those (seed 004 Fig. 1: the global link out of
// S_out never pauses, the local links into S_out do). The emulated links
// are lossy tbf queues that never fill upstream, so each switch sends the
// PAUSE itself: while a port is above XOFF, every link that can feed it
// (controller.PauseFeeders) is paused at its far end too, which disables
// the conditional rules of the upstream switch. The paused link keeps
// transmitting (frames already on their way are dropped at the congested
// queue rather than held), so the pause goes one hop, and hosts are never
// paused. Options.PortOnly turns this off: a port pauses on its own queue
// only.
package condition

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/topology"
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
	// ColdInterval is the period while every queue is below a quarter of
	// XOFF (0: 4 Interval): polling every namespace's qdiscs costs CPU the
	// fabric under test needs, and from a quarter of XOFF a queue needs
	// several links at full rate converging on it to reach XOFF within one
	// cold period (a crossing seen late would shorten the reaction
	// measured, so only warm cycles count towards the onset resolution).
	ColdInterval time.Duration
	LogSize      int // events and reactions kept, oldest dropped first (0: 65536)

	// Reaction measurement (see reaction.go): after each flip the
	// switch's taps wait for a frame on the new path until ReactLimit (0:
	// 200 ms) after the onset. NoReaction opens no taps and measures
	// nothing.
	ReactLimit time.Duration
	NoReaction bool

	// PortOnly: a port pauses on its own egress queue only; no PAUSE goes
	// to the links that feed it.
	PortOnly bool

	// QCN, when set, runs QCN-Switch (qcn.go) instead of PAUSE: XOff,
	// XOn, PortOnly and the reaction measurement do not apply.
	QCN *QCN

	// Relay, in a lab across machines, carries PAUSE to and from the
	// other machines' monitors (relay.go).
	Relay *RelayOptions
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
	// From names the downstream port whose PAUSE (or its end) this is;
	// empty when the port's own queue crossed XOFF or XON.
	From string `json:"from,omitempty"`
}

// Counters summarize a Monitor's work.
type Counters struct {
	PauseEvents  uint64 `json:"pause_events"`
	ResumeEvents uint64 `json:"resume_events"`
	// Upstream: pause events a port received from the switch it feeds
	// (also in PauseEvents).
	Upstream    uint64        `json:"upstream_pauses"`
	FlowMods    uint64        `json:"flow_mods"`
	FlowModErrs uint64        `json:"flow_mod_errors"`
	Polls       uint64        `json:"polls"`
	PollTime    time.Duration `json:"poll_time_ns"` // total, every namespace
	Dropped     uint64        `json:"events_dropped"`
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
	TapErrs     uint64 `json:"tap_errors"`  // taps that could not be switched on or off
}

type port struct {
	sw      *sw
	num     int
	bit     int // -1: no condition names this port
	ifindex int
	// own: the port's queue is above XOFF (until XON); held: how many
	// congested downstream ports are pausing it; paused: either.
	own    bool
	held   int
	paused bool
	feeds  []*port       // the upstream ends this port's congestion pauses
	flips  atomic.Uint64 // pause/resume changes, for probers
	// offPkts and offBytes: with the datapath's queue counters, how far
	// they were above the qdisc's own backlog at the last resync (frames
	// that left the queue and never reached the far end, frames on the
	// way).
	offPkts, offBytes int64
	// counted: the datapath counts the port's queue (every inter-switch
	// port's on the eBPF datapath, but a cut link's, whose far end is on
	// another machine); otherwise its qdisc is dumped every poll.
	counted bool
	// snap: a counted port's counters as Poll read them with its
	// namespace's dump, so a queue and its resync come from one instant
	// even when the poll then waits for smu.
	snap datapath.Queue
	qp   *qcnPort // its congestion point (QCN-Switch)
	// In a lab across machines (relay.go): the machines that run an
	// upstream end this port's congestion pauses, and when the port's own
	// pause last changed.
	remote  []int
	changed time.Time
}

func (p *port) String() string { return fmt.Sprintf("%s:%d", p.sw.name, p.num) }

// conditionWriter is how a switch's condition logic sets its bitmask:
// one FlowMod on its OpenFlow connection (Open vSwitch, openflow.go) or
// one map write (the eBPF datapath, bpfWriter).
type conditionWriter interface {
	// setMask sets the bitmask; with sync it returns once the switch
	// applies it.
	setMask(mask uint64, sync bool) error
	// setMaskAcked sets the bitmask and returns a channel closed once the
	// switch has applied it, and the instant just before the switch could
	// first act on it.
	setMaskAcked(mask uint64) (<-chan struct{}, time.Time, error)
	// barrier returns once the switch has applied every change sent.
	barrier(timeout time.Duration) error
	// rejected counts the changes the switch refused after accepting them.
	rejected() uint64
	// sendFrame sends a frame the switch's logic made (a CNM) out of one
	// of its ports.
	sendFrame(port int, frame []byte) error
	close()
}

type sw struct {
	name  string
	id    int // in the topology
	of    conditionWriter
	mask  uint64
	ports map[int]*port
	// For the reaction measurement: the switch's table, the ingress port
	// of every source whose frames its conditions decide, its taps and
	// the flips being measured.
	table   *controller.Table
	ingress map[[6]byte]int
	ifaces  map[int]iface // every port's interface, host ports too
	taps    []*tap
	pmu     sync.Mutex
	probes  []*probe
	// Under pmu, while probes are live: when each frame of a source the
	// conditions decide entered the switch, and frames that left on a
	// new path before their arrival was read (reaction.go).
	arrivals map[frameKey]time.Time
	pending  map[frameKey]departure
	// Under pmu: the taps are open; the monitor is closed.
	tapsOpen, closed bool
	qcn              *qcnSwitch // QCN-Switch's state (nil under PAUSE)
}

// iface is where a switch port's interface lives.
type iface struct{ ns, name string }

type nsPoll struct {
	r     *kernel.StatsReader
	ports map[int]*port // by ifindex
	// dump: a watched port here is not counted by the datapath, so the
	// namespace's qdiscs are dumped every poll.
	dump bool
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
	// Poll's dumps (the readers' maps) and their times, reused: only
	// Poll touches them.
	dumps []map[int]kernel.QdiscStats
	at    []time.Time
	warm  bool // the last poll saw a queue at XOFF/4 or a port paused by its own queue

	mu     sync.Mutex
	events []Event
	head   int // ring start once full
	c      Counters
	reacts []Reaction
	rhead  int
	rtotal uint64 // reactions ever recorded

	bpf *datapath.Handle // the eBPF datapath's maps (nil on Open vSwitch)
	// queues: the eBPF datapath's queue counters, read every poll instead
	// of a qdisc dump, which then runs every queueResync only (nil: a
	// dump every poll). lastResync: when it last ran.
	queues     *datapath.QueueReader
	lastResync time.Time
	// tapRetire is the taps' ring period: how late a tap may read a frame.
	tapRetire time.Duration
	// The eBPF datapath's tap records (nil with socket taps), and what
	// puts their CLOCK_MONOTONIC stamps on the wall clock.
	tapReader  *datapath.TapReader
	wallOffset int64

	pctx    context.Context // probers' lifetime: Run's
	probes  sync.WaitGroup
	readers sync.WaitGroup // tap readers

	// QCN-Switch (qcn.go): the ports by ifindex (a CNM's arrival), when
	// the switches last drew N, the CNM frame buffer (smu), and under mu
	// the counters and logs.
	byIfindex   map[uint32]*port
	lastRefresh time.Time
	cnmBuf      []byte
	qc          QCNCounters
	pchanges    log[PChange]
	cnms        log[CNMRecord]
	intercepts  log[Interception]
	// Snoop-based adaptive routing (snoop.go): the program's image of the
	// lab's tables, the hosts by MAC and their names, and under mu the
	// moves.
	img       *datapath.Image
	hostByMAC map[[6]byte]int
	hostNames []string
	moves     log[Move]
	// relay: PAUSE to and from other machines (relay.go), nil on one.
	relay *relay

	closeOnce sync.Once
}

// New connects to every switch of a running conditional lab (one OpenFlow
// connection each, kept open) and resolves every inter-switch port's
// egress queue. The lab must carry its compiled tables (fabric.Up's lab,
// or one given them by Lab.Attach): the monitor watches the rules the
// switches run. Call Run to start polling, Close to disconnect.
func New(lab *fabric.Lab, o Options) (*Monitor, error) {
	notify := o.QCN != nil && o.QCN.Notify
	if !lab.Routing.Conditions() && !notify {
		return nil, fmt.Errorf("lab %s routes %s: conditions need routing.mode conditional or qcn-switch", lab.Lab, lab.Routing)
	}
	comp := lab.Compiled()
	if comp == nil {
		return nil, fmt.Errorf("lab %s has no compiled tables: take the lab fabric.Up returns, or attach them with Lab.Attach", lab.Lab)
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
	if o.ColdInterval < o.Interval {
		o.ColdInterval = 4 * o.Interval
	}
	if o.LogSize <= 0 {
		o.LogSize = 1 << 16
	}
	top := comp.Top
	byName := map[string]*topology.Switch{}
	for i := range top.Switches {
		byName[top.Switches[i].Name] = &top.Switches[i]
	}
	if o.ReactLimit <= 0 {
		o.ReactLimit = 200 * time.Millisecond
	}
	if o.QCN != nil {
		// The reaction measurement times PAUSE flips; QCN-Switch's taps
		// are its congestion points' (qcn.go).
		o.NoReaction, o.PortOnly = true, true
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
			return nil, fmt.Errorf("switch %s is not in topology %s", s.Name, top.Spec)
		}
		ifaces := map[int]iface{}
		of, err := m.writerFor(lab, s, ts.ID, ifaces)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", s.Name, err)
		}
		st := &sw{name: s.Name, id: ts.ID, of: of, ports: map[int]*port{}, ifaces: ifaces}
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
			if st == nil {
				continue // a host end
			}
			st.ifaces[e.Port] = iface{e.NetNS, e.Iface}
			if st.ports[e.Port] == nil {
				continue // a host port: no queue to watch
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
			if !o.NoReaction {
				st.taps = append(st.taps, &tap{ns: e.NetNS, ifname: e.Iface, sw: st, num: p.num})
			}
		}
	}
	if o.Relay != nil {
		if o.QCN != nil {
			return nil, fmt.Errorf("qcn-switch and seed 003's congestion points do not run across machines yet")
		}
		if len(o.Relay.Of) != len(top.Switches) || o.Relay.Self < 0 || o.Relay.Self >= len(o.Relay.Peers) || o.Relay.Conn == nil {
			return nil, fmt.Errorf("pause relay: %d switches' machines for %d switches, machine %d of %d", len(o.Relay.Of), len(top.Switches), o.Relay.Self, len(o.Relay.Peers))
		}
		for sw, k := range o.Relay.Of {
			if k < 0 || k >= len(o.Relay.Peers) {
				return nil, fmt.Errorf("pause relay: switch %d on machine %d of %d", sw, k, len(o.Relay.Peers))
			}
		}
		m.relay = newRelay(*o.Relay)
	}
	if err := m.wire(comp, !o.PortOnly); err != nil {
		return nil, err
	}
	if err := m.openQueues(); err != nil {
		return nil, err
	}
	if o.QCN != nil {
		if m.bpf != nil && (m.queues == nil || slices.ContainsFunc(m.ns, func(np *nsPoll) bool { return np.dump })) {
			return nil, fmt.Errorf("qcn-switch needs the eBPF datapath's queue counters, kept on inter-switch links with a rate and no netem")
		}
		if err := m.setupQCN(lab, comp); err != nil {
			return nil, err
		}
	}
	n := 0
	for _, s := range m.switches {
		n += len(s.taps)
	}
	m.tapRetire = tapRetire(n)
	for _, s := range m.switches {
		for _, t := range s.taps {
			t.retire = m.tapRetire
			if t.qcn {
				t.retire = qcnTapRetire
			}
		}
	}
	if (n > 0 || o.QCN != nil) && m.bpf != nil && m.bpf.HasTaps() {
		if err := m.datapathTaps(lab, readers); err != nil {
			return nil, err
		}
	}
	ok = true
	return m, nil
}

// datapathTaps makes every tap a flag in the eBPF datapath (tap.go) and
// starts the one reader of their records. readers are the namespaces'
// stats readers New opened, which know the watched ports' ifindexes.
func (m *Monitor) datapathTaps(lab *fabric.Lab, readers map[string]*nsPoll) error {
	// A monitor that died (a killed run) may have left taps on.
	if err := m.bpf.ClearTaps(); err != nil {
		return fmt.Errorf("tap flags: %w", err)
	}
	type end struct {
		node string
		port int
	}
	peer := map[end]fabric.LinkEnd{}
	cut := map[end]bool{}
	for _, l := range lab.Links {
		peer[end{l.A.Node, l.A.Port}] = l.B
		peer[end{l.B.Node, l.B.Port}] = l.A
		if l.Tunnel != nil {
			cut[end{l.A.Node, l.A.Port}] = true
		}
	}
	taps := map[tapKey]*tap{}
	flags := &tapFlags{h: m.bpf, on: map[uint32][]*tap{}}
	kept := 0
	for _, s := range m.switches {
		for _, t := range s.taps {
			// An arrival tap watches its own port; a departure tap the far
			// end of its link.
			ns, iface := t.ns, t.ifname
			if !t.in && cut[end{s.name, t.num}] {
				// A cut link's far end is on another machine, whose
				// program this one cannot flag: a socket tap on the
				// tunnel sees the frame as tbf releases it.
				t.keep = true
				kept++
				continue
			}
			if !t.in {
				far, ok := peer[end{s.name, t.num}]
				if !ok || m.switches[far.Node] == nil {
					return fmt.Errorf("switch %s port %d: its link's far end is not a switch port the datapath runs", s.name, t.num)
				}
				ns, iface = far.NetNS, far.Iface
			}
			np := readers[ns]
			if np == nil {
				return fmt.Errorf("switch %s port %d: no switch port watched in netns %q", s.name, t.num, ns)
			}
			idx, err := np.r.Index(iface)
			if err != nil {
				return fmt.Errorf("tap ports: %w", err)
			}
			t.dp, t.ifindex = flags, uint32(idx)
			if taps[t.key()] != nil {
				return fmt.Errorf("switch %s port %d: two taps of one kind on %s", s.name, t.num, iface)
			}
			taps[t.key()] = t
		}
	}
	rd, err := m.bpf.Taps()
	if err != nil {
		return err
	}
	m.tapReader, m.tapRetire = rd, bpfTapPeriod
	if kept > 0 {
		// The kept sockets' rings hand over a block each period.
		m.tapRetire = max(m.tapRetire, tapRetire(kept))
		for _, s := range m.switches {
			for _, t := range s.taps {
				if t.keep {
					t.retire = tapRetire(kept)
				}
			}
		}
	}
	m.wallOffset = time.Now().UnixNano() - monoNow()
	m.readers.Add(1)
	go m.readTaps(rd, taps)
	return nil
}

// writerFor connects to a switch's condition bitmask: its OpenFlow
// management socket, or the eBPF datapath's conditions map. ifaces are
// the switch's port interfaces (filled by New), where the eBPF datapath's
// switch writes the frames its logic sends.
func (m *Monitor) writerFor(lab *fabric.Lab, s fabric.Switch, id int, ifaces map[int]iface) (conditionWriter, error) {
	if lab.BPF == nil {
		return dialOF(s.Mgmt)
	}
	if m.bpf == nil {
		h, err := datapath.Open(*lab.BPF)
		if err != nil {
			return nil, err
		}
		m.bpf = h
	}
	return &bpfWriter{h: m.bpf, sw: id, ifaces: ifaces, out: map[int]*packet.Sender{},
		bypass: m.o.QCN != nil && m.o.QCN.CNMPriority}, nil
}

// bpfWriter sets a switch's bitmask in the eBPF datapath's conditions
// map: the write is the whole change (the next frame the switch forwards
// reads it), so it is applied when it returns. The switch's own frames
// go out of a send-only packet socket on the port, opened at its first
// frame: the path Open vSwitch's userspace datapath takes for a
// PACKET_OUT.
type bpfWriter struct {
	h      *datapath.Handle
	sw     int
	ifaces map[int]iface
	out    map[int]*packet.Sender // by port; the monitor's smu serializes sendFrame
	// bypass: the frames skip the port's queue (PACKET_QDISC_BYPASS) and
	// reach the far end at once, as the program sends CNMs on under
	// routing.qcn.cnm_priority (a strict-priority band).
	bypass bool
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (w *bpfWriter) setMask(mask uint64, _ bool) error { return w.h.SetCondition(w.sw, mask) }

func (w *bpfWriter) setMaskAcked(mask uint64) (<-chan struct{}, time.Time, error) {
	at := time.Now()
	return closedChan, at, w.h.SetCondition(w.sw, mask)
}

func (w *bpfWriter) barrier(time.Duration) error { return nil }
func (w *bpfWriter) rejected() uint64            { return 0 }

func (w *bpfWriter) sendFrame(port int, frame []byte) error {
	snd := w.out[port]
	if snd == nil {
		ifc, ok := w.ifaces[port]
		if !ok {
			return fmt.Errorf("port %d has no interface", port)
		}
		var err error
		if snd, err = packet.OpenSender(ifc.ns, ifc.name); err != nil {
			return err
		}
		if w.bypass {
			if err := snd.SetQdiscBypass(); err != nil {
				snd.Close()
				return err
			}
		}
		w.out[port] = snd
	}
	return snd.Send(frame)
}

func (w *bpfWriter) close() {
	for _, snd := range w.out {
		snd.Close()
	}
}

// wire gives each switch the table the lab compiled for it, for the
// reaction taps (conditional mode never rewrites addresses, so hosts carry
// their pseudo-MACs), and, with feeders, gives every inter-switch port the
// upstream ends its congestion pauses.
func (m *Monitor) wire(comp *fabric.Compiled, feeders bool) error {
	top, ap := comp.Top, comp.Plan
	ts := controller.TablesOf(comp.Ctl, comp.Tables)
	var err error
	for i := range top.Switches {
		st := m.switches[top.Switches[i].Name]
		if st == nil {
			continue
		}
		if st.table, err = ts.Get(i); err != nil {
			return err
		}
		st.ingress = map[[6]byte]int{}
		entries := map[int]bool{}
		for h, port := range climbIngress(top, i) {
			var b [6]byte
			copy(b[:], ap.HostMAC(h).Bytes())
			st.ingress[b] = port
			entries[port] = true
		}
		if len(st.taps) > 0 && m.o.QCN == nil {
			// Where those sources' frames enter: a frame only counts as a
			// reaction if it entered after the FlowMod (reaction.go).
			for _, num := range slices.Sorted(maps.Keys(entries)) {
				ifc, ok := st.ifaces[num]
				if !ok {
					return fmt.Errorf("switch %s port %d: no interface in the lab", st.name, num)
				}
				st.taps = append(st.taps, &tap{ns: ifc.ns, ifname: ifc.name, sw: st, num: num, in: true})
			}
		}
		if top.Spec.Kind != topology.Clos && ap.HasSwitchPrefix(i) {
			v, msk := ap.SwitchPrefix(i).Match()
			for _, t := range st.taps {
				t.srcVal, t.srcMask = uint64(v), uint64(msk)
			}
		}
	}
	if !feeders {
		return nil
	}
	feed, err := controller.PauseFeeders(ts)
	if err != nil {
		return fmt.Errorf("pause feeders: %w", err)
	}
	for k, fs := range feed {
		d := m.switches[top.Switches[k.Switch].Name]
		var dp *port
		if d != nil {
			dp = d.ports[k.Port]
		}
		for _, f := range fs {
			u := m.switches[top.Switches[f.Switch].Name]
			var up *port
			if u != nil {
				up = u.ports[f.Port]
			}
			switch {
			case dp != nil && up != nil:
				dp.feeds = append(dp.feeds, up)
			case m.relay == nil:
				// a switch the lab does not run
			case dp != nil && d != nil && u == nil:
				// The feeder is another machine's: the relay pauses it.
				if k := m.relay.o.Of[f.Switch]; !slices.Contains(dp.remote, k) {
					dp.remote = append(dp.remote, k)
				}
			case dp == nil && d == nil && up != nil:
				// Another machine's port pauses this one through the relay.
				key := relayKey{uint32(k.Switch), uint16(k.Port)}
				rd := m.relay.down[key]
				if rd == nil {
					rd = &remoteDown{name: fmt.Sprintf("%s:%d", top.Switches[k.Switch].Name, k.Port), machine: m.relay.o.Of[k.Switch]}
					m.relay.down[key] = rd
				}
				rd.feeds = append(rd.feeds, up)
			}
		}
	}
	if m.relay != nil {
		for _, s := range m.switches {
			for _, num := range slices.Sorted(maps.Keys(s.ports)) {
				if p := s.ports[num]; len(p.remote) > 0 {
					m.relay.ports = append(m.relay.ports, p)
				}
			}
		}
	}
	return nil
}

// climbIngress maps each host whose frames switch i's conditions decide to
// the port they enter on: its own hosts, and on a Clos every host below
// (frames climb from their source only).
func climbIngress(top *topology.Topology, i int) map[int]int {
	out := map[int]int{}
	// entry is the port of switch i the walk came in by; 0 at i itself,
	// where each port is its own.
	var walk func(sw, entry int)
	walk = func(sw, entry int) {
		for _, p := range top.Switches[sw].Ports {
			in := entry
			if in == 0 {
				in = p.Num
			}
			switch {
			case p.Class == topology.ClassHost:
				out[p.Host] = in
			case top.Spec.Kind == topology.Clos && !p.Up && top.Switches[p.Peer.Switch].Level < top.Switches[sw].Level:
				walk(p.Peer.Switch, in)
			}
		}
	}
	walk(i, 0)
	return out
}

// tapLinger is how long the taps stay open after the queues went cold.
const tapLinger = time.Second

// Run polls the queues every Interval until ctx ends, then waits for the
// reaction probers (those still waiting count as unmeasured).
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	pctx, cancel := context.WithCancel(ctx)
	m.smu.Lock()
	m.pctx = pctx
	m.smu.Unlock()
	m.openKept()
	var relay sync.WaitGroup
	if m.relay != nil {
		m.relayResend()
		relay.Go(func() { m.relayRead(pctx) })
	}
	defer func() {
		// After the deferred call below, which cancels and waits for
		// the relay's reader.
		m.probes.Wait()
		m.smu.Lock()
		m.pctx = context.Background()
		m.smu.Unlock()
	}()
	var last, lastWarm time.Time
	warm, tapsOpen := true, false
	// Taps switch on and off in the background (opening them takes a
	// namespace entry per port); the last switch-off waits for them, or a
	// late switch-on would leave taps open on an idle fabric.
	var taps sync.WaitGroup
	setTaps := func(on bool) {
		taps.Add(1)
		go func() {
			defer taps.Done()
			m.setTaps(on)
		}()
	}
	defer func() {
		// The relay first: a pause it applied after the taps closed
		// would open them again.
		cancel()
		relay.Wait()
		if m.relay != nil {
			m.relayStop()
		}
		taps.Wait()
		if tapsOpen {
			m.setTaps(false)
		}
	}()
	if !m.o.NoReaction {
		// Open from the start, as if warm: a monitor starts with its
		// traffic, whose first queues cross XOFF within milliseconds, and
		// a flip that finds its switch's taps closed opens them itself,
		// each socket waiting for an RCU grace period (9-25 ms here) with
		// every switch's polling held up (35-230 ms at the start of a
		// point across machines on Open vSwitch, pauses relayed late).
		tapsOpen, lastWarm = true, time.Now()
		setTaps(true)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := time.Now()
		// The onset resolution is what a crossing waits for a poll, which
		// only matters when queues are near XOFF: count warm cycles.
		if !last.IsZero() && warm {
			m.mu.Lock()
			m.c.Cycles++
			m.c.CycleTime += start.Sub(last)
			m.mu.Unlock()
		}
		last = start
		if err := m.Poll(); err != nil {
			return err
		}
		m.smu.Lock()
		warm = m.warm
		m.smu.Unlock()
		next := m.o.Interval
		if !warm {
			next = m.o.ColdInterval
		}
		// The reaction taps cost the fabric CPU: open while queues are
		// near XOFF, closed once they have been cold for tapLinger.
		switch {
		case m.o.NoReaction:
		case warm:
			lastWarm = start
			if !tapsOpen {
				tapsOpen = true
				setTaps(true)
			}
		case tapsOpen && start.Sub(lastWarm) > tapLinger:
			tapsOpen = false
			setTaps(false)
		}
		t.Reset(time.Until(start.Add(next)))
	}
}

// Poll reads every queue once (one netlink dump per namespace) and applies
// XOFF/XON; each switch whose bitmask changed sends one FlowMod, without
// waiting for the switch to confirm.
func (m *Monitor) Poll() error {
	// The dumps first, outside smu: a pause relayed from another machine
	// (relay.go) waits for smu, not for this machine's netlink dumps.
	// Only Poll uses the stats readers and lastResync.
	if m.relay != nil {
		m.relayDrain()
	}
	resync := m.queues == nil || time.Since(m.lastResync) >= queueResync
	if len(m.dumps) != len(m.ns) {
		m.dumps, m.at = make([]map[int]kernel.QdiscStats, len(m.ns)), make([]time.Time, len(m.ns))
	}
	dumps, at := m.dumps, m.at
	clear(dumps)
	for i, np := range m.ns {
		t0 := time.Now()
		if resync || np.dump {
			var err error
			if dumps[i], err = np.r.All(); err != nil {
				return err
			}
		}
		if m.queues != nil {
			for idx, p := range np.ports {
				if p.counted {
					p.snap = m.queues.Read(uint32(idx))
				}
			}
		}
		at[i] = time.Now()
		m.mu.Lock()
		m.c.Polls++
		m.c.PollTime += at[i].Sub(t0)
		m.mu.Unlock()
	}
	m.smu.Lock()
	defer m.smu.Unlock()
	changed := map[*sw]*flip{}
	m.warm = false
	for i, np := range m.ns {
		all, now := dumps[i], at[i]
		for _, p := range np.ports {
			q, ok := m.queue(p, all, true)
			if !ok {
				continue
			}
			if m.o.QCN != nil {
				if p.qp != nil {
					m.pollQCN(p, q, now)
				}
				continue
			}
			occ := q.QLen
			if m.bytes {
				occ = q.Backlog
			}
			if occ >= m.xoff/4 || p.own {
				m.warm = true
			}
			switch {
			case !p.own && occ > m.xoff:
				p.own = true
			case p.own && occ < m.xon:
				p.own = false
			default:
				continue
			}
			m.settle(p, changed, Event{Time: now, Backlog: q.Backlog, QLen: q.QLen})
			if m.relay != nil && len(p.remote) > 0 {
				m.relayNote(p, now)
			}
			for _, u := range p.feeds {
				if p.own {
					u.held++
				} else {
					u.held--
				}
				m.settle(u, changed, Event{Time: now, From: p.String()})
			}
		}
	}
	if resync {
		m.lastResync = time.Now()
	}
	if m.relay != nil {
		m.relayFlush(time.Now(), changed)
	}
	if m.o.QCN != nil {
		now := time.Now()
		m.refreshQCN(now)
		if m.o.QCN.Snoop != nil {
			m.snoopExpire(now)
		}
	}
	for s, f := range changed {
		m.flip(s, f)
	}
	return nil
}

// queueResync is how often a monitor that reads the datapath's queue
// counters still dumps the qdiscs, to take out of the counters what left
// a queue and never reached the far end (a full backlog drops it before
// the next switch's program counts it). The dump every millisecond had
// been 6% of the machine in a DF(2,3,2) conditional run.
const queueResync = 10 * time.Millisecond

// openQueues reads the ports' queues from the eBPF datapath's counters
// where it keeps them. A namespace with a watched port it does not count
// (a cut link's tunnel) is dumped every poll, as on Open vSwitch.
func (m *Monitor) openQueues() error {
	if m.bpf == nil || !m.bpf.HasQueues() {
		return nil
	}
	qr, err := m.bpf.Queues()
	if err != nil {
		return err
	}
	counted := false
	for _, np := range m.ns {
		for idx, p := range np.ports {
			p.counted = qr.Read(uint32(idx)).Limit != 0
			counted = counted || p.counted
			np.dump = np.dump || !p.counted
		}
	}
	if !counted {
		qr.Close()
		for _, np := range m.ns {
			np.dump = false // no counters: every poll dumps anyway
		}
		return nil
	}
	m.queues = qr
	return nil
}

// queue is a port's queue now: its backlog, and in Packets its departures
// so far. With the datapath's queue counters they come from the program
// (the port's snap, taken with the dump, or read now), less what the
// last resync found them above the qdisc's backlog (all, when not nil, is
// a fresh dump to resync from); without, from the dump (tbf counts what
// it dequeued). ok is false when the dump lacks the port.
func (m *Monitor) queue(p *port, all map[int]kernel.QdiscStats, snapped bool) (q kernel.QdiscStats, ok bool) {
	if m.queues == nil || !p.counted {
		q, ok = all[p.ifindex]
		return q, ok
	}
	c := p.snap
	if !snapped {
		c = m.queues.Read(uint32(p.ifindex))
	}
	if t, ok := all[p.ifindex]; ok {
		p.offPkts, p.offBytes = c.Len()-int64(t.QLen), c.Backlog()-int64(t.Backlog)
	}
	return kernel.QdiscStats{QLen: uint64(max(c.Len()-p.offPkts, 0)), Backlog: uint64(max(c.Backlog()-p.offBytes, 0)),
		Packets: c.DeqPkts, Bytes: c.DeqBytes, Drops: c.DropPkts}, true
}

// settle brings a port's pause state in line with its own queue and the
// pauses it holds from downstream, and, if that changed it, books the flip
// of its switch's bitmask (sent once per switch at the end of the poll)
// and the event e describes.
func (m *Monitor) settle(p *port, changed map[*sw]*flip, e Event) {
	want := p.own || p.held > 0
	if want == p.paused {
		return
	}
	p.paused = want
	if p.bit >= 0 {
		f := changed[p.sw]
		if f == nil {
			f = &flip{onset: e.Time, before: p.sw.mask, upstream: map[*port]bool{}}
			changed[p.sw] = f
		}
		f.upstream[p] = e.From != ""
		if p.paused {
			f.paused = append(f.paused, p)
		} else {
			f.resumed = append(f.resumed, p)
		}
		p.sw.mask ^= 1 << p.bit
		p.flips.Add(1)
	}
	e.Switch, e.Port, e.Paused, e.Flip = p.sw.name, p.num, p.paused, p.bit >= 0
	m.record(e)
}

func (m *Monitor) flowMod(s *sw, sync bool) error {
	err := s.of.setMask(s.mask, sync)
	m.countFlowMod(err)
	return err
}

func (m *Monitor) countFlowMod(err error) {
	m.mu.Lock()
	m.c.FlowMods++
	if err != nil {
		m.c.FlowModErrs++
	}
	m.mu.Unlock()
}

// SetPaused pauses or resumes one port by hand, as if its queue had
// crossed XOFF or XON, and returns once the switch has applied it. A
// manual pause stays on its port: it sends no PAUSE upstream.
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
	p.own = paused
	if p.paused == (p.own || p.held > 0) {
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
		if e.From != "" {
			m.c.Upstream++
		}
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
		c.FlowModErrs += s.of.rejected()
	}
	return c
}

// Close disconnects from the switches and closes the netlink sockets and
// the taps. A second Close does nothing.
func (m *Monitor) Close() {
	m.closeOnce.Do(m.close)
}

func (m *Monitor) close() {
	for _, s := range m.switches {
		s.of.close()
	}
	// Closed outside pmu: a tap's reader holds its ring while it hands a
	// frame over, and takes pmu to note it; closing a socket waits for
	// its ring. The datapath's taps go off before its maps are let go: a
	// tap left on would cost every frame of the lab a record nobody reads.
	var socks []*packet.Socket
	for _, s := range m.switches {
		s.pmu.Lock()
		s.closed = true
		socks = append(socks, m.releaseTaps(s, true)...)
		s.pmu.Unlock()
	}
	for _, k := range socks {
		k.Close()
	}
	if m.tapReader != nil {
		m.tapReader.Close()
	}
	if m.queues != nil {
		m.queues.Close()
	}
	if m.bpf != nil {
		m.bpf.Close()
	}
	for _, np := range m.ns {
		np.r.Close()
	}
	m.readers.Wait()
	if m.relay != nil {
		m.relay.close()
	}
}
