package condition

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/qcn"
	"github.com/ethfab/ethfab/qcnswitch"
)

// QCN-Switch (seed 004) in the monitor: the same conditional tables and
// bitmask as PAUSE-based conditional routing, but each switch sets its
// bitmask from a probability per transit port (package qcnswitch) that
// QCN congestion notifications lower, and congestion points in every
// switch send those notifications (../shared/specs/seeds-002-004-power.md
// §0, §A.4).
//
// Where each piece runs, on the eBPF datapath:
//   - Congestion point: every inter-switch egress queue (the output-queued
//     emulation's only queue, spec §0.1). Each poll reads its backlog and
//     departures from the datapath's queue counters (no system call); the
//     sampling clock counts transit departures, taken from the port's
//     departure tap while the queue is above Qeq/4 (below Qeq/3 no sample
//     can send a CNM), from all departures below.
//   - Victim: drawn among the last qlen departures of the tap's ring that
//     did not come from the switch's own hosts (FOGSim samples transit
//     input buffers only).
//   - Emission: the CNM frame is written on the switch port towards the
//     victim's source (the switch's own table, minimal), with a packet
//     socket: what OVS's userspace datapath does for a PACKET_OUT, with no
//     daemon in between. It queues behind data (FIFO; spec §0.5's first
//     step: no priority band yet).
//   - Interception: the program records every CNM arriving on a switch port
//     (datapath.TapCNM) and forwards it on; the switch whose hosts the CNM
//     is addressed to reads it from the record, with the port it arrived
//     on, and applies it — the output:CONTROLLER copy of spec §0.5.
//   - Realisation M (spec §A.4.3): every Refresh each switch draws N in
//     1..100 and disables the conditional rules of the ports whose P is
//     below N: one map write when the mask changes.

// QCN configures QCN-Switch; Options.QCN set runs it instead of PAUSE.
type QCN struct {
	// Notify runs seed 003's congestion points instead of QCN-Switch:
	// every inter-switch port samples every SampleBytes bytes received
	// into its queue, any frame there may be the victim, and the CNM only
	// goes to the victim's source, whose reaction point acts on it; the
	// switches do nothing with CNMs (routing shortest with qcn.rp).
	Notify      bool
	SampleBytes int
	// Snoop, with Notify, runs snoop-based adaptive routing (snoop.go).
	Snoop          *SnoopOptions
	Switch         qcnswitch.Params
	Qeq            int     // bytes
	W              float64 // weight of Qdelta
	SampleEvery    int     // transit departures between samples
	Qold           qcn.QoldMode
	CNMProbability float64 // share of samples with Fbq > 0 that send a CNM
	// CNMPriority: the lab's program sends CNMs ahead of the data queues
	// (datapath.LoadOptions.CNMPriority), and the congestion points write
	// theirs past the port's queue too (eBPF datapath only).
	CNMPriority bool
	Refresh     time.Duration
	Seed        uint64 // the draws' (N, victims, CNM probability): reproducible per scenario seed
}

// CNMRecord is one congestion notification: sent by a congestion point,
// or not for want of a victim or a route, and where it was intercepted.
type CNMRecord struct {
	Time   time.Time `json:"time"`
	Switch string    `json:"switch"` // the congestion point's
	Port   int       `json:"port"`
	Q      int       `json:"q_bytes"`
	Qoff   int       `json:"qoff_bytes"`
	Qdelta int       `json:"qdelta_bytes"`
	Fbq    uint8     `json:"fbq"`
	// Victim's source and destination; empty with NoVictim.
	VictimSrc string `json:"victim_src,omitempty"`
	VictimDst string `json:"victim_dst,omitempty"`
	NoVictim  bool   `json:"no_victim,omitempty"`
	// Out: the port the CNM left on; Dropped says why it did not.
	Out     int    `json:"out,omitempty"`
	Dropped string `json:"dropped,omitempty"`
}

// Interception is a CNM a switch took for one of its hosts.
type Interception struct {
	Time     time.Time `json:"time"`
	Switch   string    `json:"switch"`
	Port     int       `json:"port"` // it arrived on
	CPSwitch string    `json:"cp_switch"`
	CPPort   int       `json:"cp_port"`
	Fbq      uint8     `json:"fbq"`
	// Applied: when the switch's logic had applied it. Time is when the
	// CNM reached the switch: the eBPF datapath's stamp; on Open vSwitch,
	// when its PACKET_IN was read (the switch's upcall before is not in
	// it: TestQCNCongestionPoint times it from the port, 0.4 ms median).
	Applied time.Time `json:"applied"`
}

// PChange is one probability update, with the time and switch.
type PChange struct {
	Time   time.Time `json:"time"`
	Switch string    `json:"switch"`
	Class  string    `json:"class"` // local or global
	qcnswitch.Change
}

// QCNCounters summarize QCN-Switch's work.
type QCNCounters struct {
	Samples     uint64 `json:"samples"`
	Generated   uint64 `json:"cnms_generated"`
	Intercepted uint64 `json:"cnms_intercepted"`
	Dropped     uint64 `json:"cnms_dropped"` // generated, not sent (no route, send error)
	NoVictim    uint64 `json:"no_victim"`
	MaskWrites  uint64 `json:"mask_flowmods"`
	Moves       uint64 `json:"ar_moves"`       // snoop-ar: rules moved
	MoveErrs    uint64 `json:"ar_move_errors"` // moves the datapath refused
	PChanges    uint64 `json:"p_changes"`
}

// qcnSwitch is a switch's QCN-Switch state; its logic and draws are
// under the monitor's smu.
type qcnSwitch struct {
	logic *qcnswitch.Switch // nil with Notify: the switch only samples
	snoop *snoopSwitch      // snoop-ar's table and rules (snoop.go)
	mac   [6]byte           // the congestion points' MAC: the switch prefix, host field 0
	rnd   *rand.Rand
	class map[int]string // transit port -> link class
}

// qcnPort is a congestion point: an inter-switch port's sampling clock
// and the departures its victims are drawn from.
type qcnPort struct {
	cp      *qcn.CongestionPoint
	lastDeq uint64 // the queue counters' departures at the last poll
	// Notify: the queue's bytes out, backlog and drops at the last poll,
	// for the bytes received into it since.
	lastBytes, lastBacklog, lastDrops uint64
	// Under the switch's pmu: the last departures, and the transit ones
	// the tap saw since the last poll.
	ring    qcn.Ring
	transit int
	// tapOn: the departure tap is on; whole: it was on for the whole
	// last interval, so transit counts every transit departure.
	tap         *tap
	tapOn, full bool
}

// setupQCN gives every switch its QCN-Switch state and every watched
// inter-switch port a congestion point and a departure tap. Called by New
// once the ports and their interfaces are known.
func (m *Monitor) setupQCN(lab *fabric.Lab, comp *fabric.Compiled) error {
	q := m.o.QCN
	if m.bpf != nil && !m.bpf.HasTaps() {
		return fmt.Errorf("qcn-switch on the eBPF datapath needs its departure records and CNM taps: this program was built without them")
	}
	interval := q.SampleEvery
	if q.Notify {
		interval = q.SampleBytes
	}
	if q.Qeq <= 0 || interval < 1 {
		return fmt.Errorf("qcn: qeq %d and the sampling interval %d must be positive", q.Qeq, interval)
	}
	if q.Refresh <= 0 {
		q.Refresh = AutoRefresh(m.bpf != nil)
	}
	m.byIfindex = map[uint32]*port{}
	// Departures count from now: those before the monitor ran are no
	// sample's. One dump per namespace gives where they start.
	start := map[*port]kernel.QdiscStats{}
	for _, np := range m.ns {
		all, err := np.r.All()
		if err != nil {
			return err
		}
		for _, p := range np.ports {
			start[p], _ = m.queue(p, all, false)
		}
	}
	for i := range comp.Top.Switches {
		ts := &comp.Top.Switches[i]
		name := ts.Name
		s := m.switches[name]
		if s == nil {
			continue
		}
		cps := controller.CondPorts(ts)
		ports := make([]int, len(cps))
		class := map[int]string{}
		for j, p := range cps {
			ports[j] = int(p)
		}
		for _, p := range ts.Ports {
			class[p.Num] = p.Class.String()
		}
		qs := &qcnSwitch{class: class, rnd: rand.New(rand.NewPCG(q.Seed, uint64(i)))}
		if !q.Notify {
			var err error
			if qs.logic, err = qcnswitch.New(q.Switch, ports); err != nil {
				return fmt.Errorf("switch %s: %w", name, err)
			}
		}
		qs.mac = cpMAC(comp.Plan, i)
		s.qcn = qs
		for _, p := range s.ports {
			if p.bit < 0 && !q.Notify {
				continue // QCN-Switch: the transit (conditional) ports
			}
			ifc, ok := s.ifaces[p.num]
			if !ok {
				return fmt.Errorf("switch %s port %d: no interface in the lab", name, p.num)
			}
			st := start[p]
			p.qp = &qcnPort{cp: qcn.NewCongestionPoint(q.Qeq, q.W, interval, q.Qold), lastDeq: st.Packets,
				lastBytes: st.Bytes, lastBacklog: st.Backlog, lastDrops: st.Drops}
			p.qp.tap = &tap{ns: ifc.ns, ifname: ifc.name, sw: s, num: p.num, qcn: true}
			s.taps = append(s.taps, p.qp.tap)
			m.byIfindex[uint32(p.ifindex)] = p
		}
		if of, ok := s.of.(*ofWriter); ok && !q.Notify {
			// Open vSwitch: the table-0 rule of kind cnm (controller
			// package) hands CNMs for this switch's hosts over as
			// PACKET_INs, with the port they came in on.
			err := of.ReceivePacketIns(controller.CNMMaxLen, func(in uint32, frame []byte, at time.Time) {
				if p := s.ports[int(in)]; p != nil && p.qp != nil {
					m.intercept(p, frame, at)
				}
			})
			if err != nil {
				return fmt.Errorf("switch %s: asking for CNMs: %w", name, err)
			}
		}
	}
	for h := range comp.Top.Hosts {
		m.hostNames = append(m.hostNames, comp.Top.Hosts[h].Name)
	}
	if q.Notify && q.Snoop != nil {
		return m.setupSnoop(lab, comp)
	}
	return nil
}

// AutoRefresh is how often each switch draws N unless told
// (routing.qcn.refresh: auto): 5 ms on the eBPF datapath, where a mask
// write is a map update (2.3 µs); 20 ms on Open vSwitch, where it is a
// FlowMod costing ovs-vswitchd 120–150 µs, so that 36 switches changing
// their masks at every draw take 0.27 cores of it rather than 0.85
// (BenchmarkMaskFlowMod).
func AutoRefresh(ebpf bool) time.Duration {
	if ebpf {
		return 5 * time.Millisecond
	}
	return 20 * time.Millisecond
}

// qcnTapRetire is how long a QCN departure tap's socket ring (Open
// vSwitch) keeps a block that is not full: the sampling clock sees a
// port's transit departures at most that late. Only hot ports' taps are
// open (above Qeq/4), so their timers cost little.
const qcnTapRetire = 4 * time.Millisecond

// openQCNTap switches a congestion point's departure tap on: a flag on
// the eBPF datapath, a packet socket and its reader on Open vSwitch.
// Called with the switch's pmu held.
func (m *Monitor) openQCNTap(t *tap) error {
	if err := t.open(); err != nil {
		return err
	}
	if t.dp == nil {
		m.readers.Add(1)
		go m.listenQCN(t, t.r)
	}
	return nil
}

// closeQCNTap switches it off; a socket closes in the background (an RCU
// grace period), and its reader ends with it. Called with pmu held.
func (m *Monitor) closeQCNTap(t *tap) error {
	if t.dp != nil {
		return t.clear()
	}
	if t.s != nil {
		k := t.s
		t.s, t.r = nil, nil
		go k.Close()
	}
	return nil
}

// listenQCN reads a departure tap's socket ring until it is closed.
func (m *Monitor) listenQCN(t *tap, r *packet.Ring) {
	defer m.readers.Done()
	read := func(b []byte, wireLen int, _ int64) { t.sw.qcnDepart(t.num, b, wireLen) }
	for {
		r.ReadLen(read)
		if r.Wait() != nil {
			return // closed
		}
	}
}

// pollQCN runs one port's congestion point and probability increase on
// its queue now (backlog bytes, frames) and departures so far. Called by
// Poll with smu held.
func (m *Monitor) pollQCN(p *port, st kernel.QdiscStats, now time.Time) {
	q, s, qs := p.qp, p.sw, p.sw.qcn
	backlog, qlen, deq := st.Backlog, st.QLen, st.Packets
	d := int(deq - q.lastDeq)
	q.lastDeq = deq
	Q := int(backlog)
	if qs.snoop != nil && Q <= m.o.QCN.Qeq/2 {
		m.snoopQueueLow(p, now)
	}
	// Seed 003 samples every so many bytes received into the queue: those
	// that left, those still in it, and those it dropped (counted in
	// frames by a qdisc: at the interval's mean frame size).
	arrived := int(st.Bytes-q.lastBytes) + int(st.Backlog) - int(q.lastBacklog)
	if drops := st.Drops - q.lastDrops; drops > 0 {
		size := 1500
		if d > 0 {
			size = int(st.Bytes-q.lastBytes) / d
		}
		arrived += int(drops) * size
	}
	q.lastBytes, q.lastBacklog, q.lastDrops = st.Bytes, st.Backlog, st.Drops
	if Q >= m.o.QCN.Qeq/4 || q.tapOn {
		m.warm = true
	}
	n := d
	s.pmu.Lock()
	switch {
	case qs.logic == nil:
		n = arrived
	case q.tapOn && q.full:
		n = q.transit
	}
	q.transit = 0
	s.pmu.Unlock()
	// The tap's hysteresis (spec §0.2: open at Qeq/4, closed below Qeq/8).
	switch {
	case !q.tapOn && Q >= m.o.QCN.Qeq/4:
		s.pmu.Lock()
		err := m.openQCNTap(q.tap)
		s.pmu.Unlock()
		if err != nil {
			m.countTapErr()
		} else {
			q.tapOn, q.full = true, false
		}
	case q.tapOn && Q < m.o.QCN.Qeq/8:
		s.pmu.Lock()
		err := m.closeQCNTap(q.tap)
		s.pmu.Unlock()
		if err != nil {
			m.countTapErr()
		}
		q.tapOn, q.full = false, false
	case q.tapOn:
		q.full = true
	}
	if qs.logic != nil {
		for _, c := range qs.logic.Sent(p.num, d) {
			m.recordP(s, now, c)
		}
	}
	smp, ok := q.cp.Observe(n, Q)
	if !ok {
		return
	}
	m.mu.Lock()
	m.qc.Samples++
	m.mu.Unlock()
	if smp.Fbq == 0 || (m.o.QCN.CNMProbability < 1 && qs.rnd.Float64() >= m.o.QCN.CNMProbability) {
		return
	}
	m.emitCNM(p, smp, int(qlen), now)
}

// emitCNM sends the CNM of a sample with Fbq > 0 back to a victim's
// source and, under + source, applies it to the switch itself.
func (m *Monitor) emitCNM(p *port, smp qcn.Sample, qlen int, now time.Time) {
	s, qs := p.sw, p.sw.qcn
	rec := CNMRecord{Time: now, Switch: s.name, Port: p.num, Q: smp.Q, Qoff: smp.Qoff, Qdelta: smp.Qdelta, Fbq: smp.Fbq}
	s.pmu.Lock()
	// QCN-Switch draws among frames that came from other switches (FOGSim
	// samples transit input buffers); 802.1Qau among all (seed 003).
	v, ok := p.qp.ring.Pick(qlen, qs.rnd.IntN, func(src [6]byte) bool { _, own := s.ingress[src]; return !own || qs.logic == nil })
	s.pmu.Unlock()
	m.mu.Lock()
	m.qc.Generated++
	if !ok {
		m.qc.NoVictim++
	}
	m.mu.Unlock()
	if !ok {
		rec.NoVictim = true
		m.recordCNM(rec)
		return
	}
	rec.VictimSrc, rec.VictimDst = addressing.MACFromBytes(v.Src[:]).String(), addressing.MACFromBytes(v.Dst[:]).String()
	if qs.snoop != nil {
		// The congestion point's own switch: a local entry for the
		// victim's destination on this port (the paper's "generation").
		m.snoopNotify(s, v.Dst, p.num, smp.Fbq, true, now)
	}
	// + source: the victim's minimal port from here, when it goes to
	// another group (only those routes are conditional).
	if r := s.table.Lookup(0, addressing.MACFromBytes(v.Dst[:]), ethertype.Traffic); qs.logic != nil && r != nil && r.Kind == controller.KindConditional {
		if c, ok := qs.logic.OwnCNM(int(r.Cond), smp.Fbq); ok {
			m.recordP(s, now, c)
		}
	}
	rec.Out, rec.Dropped = m.sendCNM(p, qcn.NewCNM(qs.mac, uint16(p.num), smp, v), v.Src)
	if rec.Dropped != "" {
		m.mu.Lock()
		m.qc.Dropped++
		m.mu.Unlock()
	}
	m.recordCNM(rec)
}

// sendCNM writes a CNM on the switch's minimal port towards its
// destination: the port, or why it could not be sent.
func (m *Monitor) sendCNM(p *port, c qcn.CNM, to [6]byte) (int, string) {
	s := p.sw
	r := s.table.Lookup(0, addressing.MACFromBytes(to[:]), ethertype.CNM)
	if r == nil || len(r.Out) == 0 {
		return 0, "no route"
	}
	out := int(r.Out[0])
	if op := s.ports[out]; s.qcn.logic != nil && (op == nil || op.qp == nil) {
		return out, fmt.Sprintf("port %d is not a transit port", out)
	}
	frame, err := c.Append(m.cnmBuf[:0])
	if err != nil {
		return out, err.Error()
	}
	m.cnmBuf = frame
	if err := s.of.sendFrame(out, frame); err != nil {
		return out, "send: " + err.Error()
	}
	return out, ""
}

// depart notes a departure of a QCN port the tap recorded. Called by the
// tap reader.
func (s *sw) qcnDepart(num int, hdr []byte, wireLen int) {
	p := s.ports[num]
	if p == nil || p.qp == nil || len(hdr) < 14 {
		return
	}
	var src [6]byte
	copy(src[:], hdr[6:12])
	_, own := s.ingress[src]
	s.pmu.Lock()
	p.qp.ring.AddCut(hdr, wireLen)
	if !own {
		p.qp.transit++
	}
	s.pmu.Unlock()
}

// interceptRecord applies a CNM the eBPF datapath recorded arriving on a
// switch port (its stamp is when it arrived).
func (m *Monitor) interceptRecord(rec datapath.TapRecord) {
	if p := m.byIfindex[rec.Ifindex]; p != nil {
		m.intercept(p, rec.Header, time.Unix(0, rec.Mono+m.wallOffset))
	}
}

// intercept applies a CNM (its first bytes, cut) that arrived at at on
// port p, if it is addressed to one of p's switch's hosts: the switch
// lowers that port's probability.
func (m *Monitor) intercept(p *port, frame []byte, at time.Time) {
	var c qcn.CNM
	if qcn.DecodeCut(frame, &c) != nil {
		return
	}
	s := p.sw
	if s.qcn.snoop != nil {
		// Every switch on the way snoops: a remote entry for the flow's
		// destination on the port the CNM came in by.
		m.smu.Lock()
		m.snoopNotify(s, c.VictimDst, p.num, c.Fbq, false, at)
		m.smu.Unlock()
		return
	}
	if _, own := s.ingress[c.Dst]; !own || s.qcn.logic == nil {
		return // in transit, or a switch that only notifies: forwarded like any frame
	}
	m.smu.Lock()
	ch, changed := s.qcn.logic.CNM(p.num, c.Fbq)
	applied := time.Now()
	if changed {
		m.recordP(s, applied, ch)
	}
	m.smu.Unlock()
	m.mu.Lock()
	m.qc.Intercepted++
	m.intercepts.add(Interception{Time: at, Switch: s.name, Port: p.num,
		CPSwitch: addressing.MACFromBytes(c.CPSwitch[:]).String(), CPPort: int(c.CPPort), Fbq: c.Fbq, Applied: applied}, m.o.LogSize)
	m.mu.Unlock()
}

// refreshQCN draws each switch's N and writes its bitmask where it
// changed. Called by Poll with smu held.
func (m *Monitor) refreshQCN(now time.Time) {
	if now.Sub(m.lastRefresh) < m.o.QCN.Refresh {
		return
	}
	m.lastRefresh = now
	for _, s := range m.switches {
		if s.qcn == nil || s.qcn.logic == nil {
			continue
		}
		mask := s.qcn.logic.Mask(1 + s.qcn.rnd.IntN(100))
		if mask == s.mask {
			continue
		}
		s.mask = mask
		m.flowMod(s, false)
		m.mu.Lock()
		m.qc.MaskWrites++
		m.mu.Unlock()
	}
}

func (m *Monitor) recordP(s *sw, now time.Time, c qcnswitch.Change) {
	m.mu.Lock()
	m.qc.PChanges++
	m.pchanges.add(PChange{Time: now, Switch: s.name, Class: s.qcn.class[c.Port], Change: c}, m.o.LogSize)
	m.mu.Unlock()
}

func (m *Monitor) recordCNM(r CNMRecord) {
	m.mu.Lock()
	m.cnms.add(r, m.o.LogSize)
	m.mu.Unlock()
}

// log keeps the last entries of an unbounded series, numbered from 0
// since the monitor started: once it holds max, the oldest half goes.
type log[T any] struct {
	base  int // the number of the first entry held
	items []T
}

func (l *log[T]) add(v T, max int) {
	if len(l.items) >= max {
		k := len(l.items) / 2
		l.items = append(l.items[:0], l.items[k:]...)
		l.base += k
	}
	l.items = append(l.items, v)
}

// since returns a copy of the entries numbered from on (those still
// held) and the number the next entry will get.
func (l *log[T]) since(from int) ([]T, int) {
	i := min(max(from-l.base, 0), len(l.items))
	return append([]T(nil), l.items[i:]...), l.base + len(l.items)
}

// QCNMark numbers the QCN logs' entries: pass the mark QCNLog returned
// to get only what came after it.
type QCNMark struct{ P, CNM, Intercept int }

// QCNLog returns the P changes, CNMs and interceptions logged since mark,
// and the mark now.
func (m *Monitor) QCNLog(from QCNMark) ([]PChange, []CNMRecord, []Interception, QCNMark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next QCNMark
	ps, np := m.pchanges.since(from.P)
	cs, nc := m.cnms.since(from.CNM)
	is, ni := m.intercepts.since(from.Intercept)
	next.P, next.CNM, next.Intercept = np, nc, ni
	return ps, cs, is, next
}

// QCNCounters returns QCN-Switch's counters so far.
func (m *Monitor) QCNCounters() QCNCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.qc
}

// P is a switch port's probability of routing minimally, percent (-1:
// not a QCN-Switch transit port).
func (m *Monitor) P(switchName string, port int) float64 {
	m.smu.Lock()
	defer m.smu.Unlock()
	s := m.switches[switchName]
	if s == nil || s.qcn == nil || s.qcn.logic == nil {
		return -1
	}
	return s.qcn.logic.P(port)
}

// PortP is one QCN-Switch transit port's probability of routing
// minimally, percent.
type PortP struct {
	Switch string
	Port   int
	Class  string // local or global
	P      float64
}

// Probabilities are every transit port's probability now, by switch name
// and port.
func (m *Monitor) Probabilities() []PortP {
	m.smu.Lock()
	var out []PortP
	for _, s := range m.switches {
		if s.qcn == nil || s.qcn.logic == nil {
			continue
		}
		for _, port := range s.qcn.logic.Ports() {
			out = append(out, PortP{Switch: s.name, Port: port, Class: s.qcn.class[port], P: s.qcn.logic.P(port)})
		}
	}
	m.smu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Switch != out[j].Switch {
			return out[i].Switch < out[j].Switch
		}
		return out[i].Port < out[j].Port
	})
	return out
}

// PStats are the transit ports' probabilities now: the mean per link
// class and the lowest, percent.
func (m *Monitor) PStats() (byClass map[string]float64, lowest float64) {
	return MeanP(m.Probabilities())
}

// MeanP is the mean probability per link class and the lowest, percent
// (100 when there is no port).
func MeanP(ps []PortP) (byClass map[string]float64, lowest float64) {
	sum, n := map[string]float64{}, map[string]int{}
	lowest = 100
	for _, p := range ps {
		sum[p.Class] += p.P
		n[p.Class]++
		lowest = min(lowest, p.P)
	}
	byClass = map[string]float64{}
	for c, v := range sum {
		byClass[c] = v / float64(n[c])
	}
	return byClass, lowest
}

// Moves returns the adaptive routing's moves logged since from (an index
// Moves returned before; 0 at first) and the index to pass next.
func (m *Monitor) Moves(from int) ([]Move, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.moves.since(from)
}

// QCNNotify says the monitor runs seed 003's notifying congestion points
// (QCN.Notify) rather than QCN-Switch.
func (m *Monitor) QCNNotify() bool { return m.o.QCN != nil && m.o.QCN.Notify }

// QCNEnabled says the monitor runs QCN-Switch.
func (m *Monitor) QCNEnabled() bool { return m.o.QCN != nil }

// cpMAC is switch i's address as its congestion points name it in a
// CNM's CPID and source: its prefix's, or, where flat addressing gives
// switches none, a locally administered unicast address no host has.
func cpMAC(plan *addressing.Plan, i int) [6]byte {
	var mac [6]byte
	if plan.HasSwitchPrefix(i) {
		v, _ := plan.SwitchPrefix(i).Match()
		copy(mac[:], v.Bytes())
		return mac
	}
	return [6]byte{0x06, 0xef, 0xcf, 0x0c, byte(i >> 8), byte(i)}
}
