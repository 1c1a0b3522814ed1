package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/emulator/condition"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/measure"
	"github.com/ethfab/ethfab/hostagent/traffic"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/topology"
	pat "github.com/ethfab/ethfab/traffic"
)

// Traffic is a lab across machines' traffic engine: a worker on every
// machine holds an engine over every host (the others' Remote) and a
// sampler of its part; each point runs on all of them at once, from one
// start, and their counts merge into the point one engine and one sampler
// would have reported (traffic.MergeParts, measure.Merge).
type Traffic struct {
	lab      *fabric.Lab
	hosts    []traffic.Host
	ss       []*session
	names    []string
	sendMode string
	clocks   Clocks
	// worst is the largest estimated clock error of the machines (µs),
	// and agree says every clock is synchronized within
	// kernel.MaxClockErrorUs.
	worst int64
	agree bool
}

// Clocks is how a run across machines takes one-way latency, whose
// frames leave with the sender's monotonic time.
type Clocks string

const (
	// ClocksAuto: ClocksOne on emulated machines, ClocksWall where every
	// machine's clock is synchronized within kernel.MaxClockErrorUs,
	// ClocksLocal otherwise.
	ClocksAuto Clocks = "auto"
	// ClocksOne: the machines are one (emulated): one monotonic clock.
	ClocksOne Clocks = "one"
	// ClocksWall: the machines' wall clocks agree (PTP): before each
	// point every machine's wall-minus-monotonic offset is read, and a
	// frame from another machine is timed by the two offsets' difference
	// (traffic.Config.ClockShift).
	ClocksWall Clocks = "wall"
	// ClocksLocal: the clocks are not known to agree: latency only of
	// frames between hosts of one machine.
	ClocksLocal Clocks = "local"
)

// ParseClocks checks a Clocks name.
func ParseClocks(s string) (Clocks, error) {
	switch c := Clocks(s); c {
	case ClocksAuto, ClocksOne, ClocksWall, ClocksLocal:
		return c, nil
	}
	return "", fmt.Errorf("%q: want auto, one, wall or local", s)
}

// trafficRequest opens a worker's engine.
type trafficRequest struct {
	Hosts []trafficHost `json:"hosts"`
	// Conditions: every worker runs conditional routing's switch logic
	// on its part during each point.
	Conditions *conditionsRequest `json:"conditions,omitempty"`
}

// Conditions is conditional routing's switch logic across machines:
// every machine's worker runs a condition monitor of its part during each
// point, and the monitors pass PAUSE across the cut links to each other
// over the underlay (condition.RelayOptions).
type Conditions struct {
	// Scenario is the lab's, and Originals every host's MAC at creation
	// (the compile the lab was built from): every worker compiles the
	// tables its switches run from them.
	Scenario  *scenario.Scenario
	Originals []string
	XOff, XOn scenario.Threshold
	PortOnly  bool
}

type conditionsRequest struct {
	Scenario  string             `json:"scenario"` // YAML
	Source    string             `json:"source"`
	Originals []string           `json:"originals"`
	Of        []int              `json:"of"`    // each switch's machine
	Addrs     []string           `json:"addrs"` // each machine's underlay address
	XOff      scenario.Threshold `json:"xoff"`
	XOn       scenario.Threshold `json:"xon"`
	PortOnly  bool               `json:"port_only,omitempty"`
	Token     uint32             `json:"token"`
}

type trafficHost struct {
	Name      string `json:"name"`
	PseudoMAC string `json:"pseudo_mac"`
	Switch    int    `json:"switch"`
	Group     int    `json:"group"`
	Machine   int    `json:"machine"`
}

// pointRequest is one point: the config every machine runs, its start in
// CLOCK_REALTIME ns (each worker's engine converts it to its monotonic
// clock) and the sampler's timeline bin.
type pointRequest struct {
	// Kind is "clock" (answer the machine's clock) or "point".
	Kind    string   `json:"kind"`
	Pattern pat.Spec `json:"pattern"`
	// Config is what every machine's engine runs (its Run set; the
	// pattern built from Pattern, the start and clocks from the fields
	// below, on the machine).
	Config traffic.Config `json:"config"`
	Start  int64          `json:"start_unix_ns"`
	Bin    time.Duration  `json:"bin_ns"`
	// Clocks is how latency is taken, Offsets (ClocksWall) each
	// machine's wall-minus-monotonic offset.
	Clocks  Clocks  `json:"clocks"`
	Offsets []int64 `json:"offsets,omitempty"`
	// Kind "relay": every machine's pause relay port, and whether the
	// machines' clocks agree (the relay then times each pause one way).
	RelayPorts []int `json:"relay_ports,omitempty"`
	Clocked    bool  `json:"clocked,omitempty"`
}

// clockState is a machine's clock, as a worker reads it.
type clockState struct {
	OffsetNs int64            `json:"offset_ns"` // traffic.WallMinusMono
	WallNs   int64            `json:"wall_ns"`   // its wall clock as it answered
	Sync     kernel.ClockSync `json:"sync"`
}

// maxSkew bounds how far a machine's wall clock may be off the
// coordinator's: a point starts at one wall-clock instant startLead
// ahead, and a machine whose clock is off by more would start late (or
// early, sending after the others' sinks stopped).
const maxSkew = startLead / 4

// trafficAnswer is a worker's line: ready (with how it sends), or a
// point's part and report, or the error that ended it.
type trafficAnswer struct {
	Ready    bool            `json:"ready,omitempty"`
	SendMode string          `json:"send_mode,omitempty"`
	Part     *traffic.Part   `json:"part,omitempty"`
	Report   *measure.Report `json:"report,omitempty"`
	Clock    *clockState     `json:"clock,omitempty"`
	// RelayPort: the worker's pause relay socket (with Ready, under
	// conditional routing); Conditions: what its part's condition logic
	// did over the point.
	RelayPort  int              `json:"relay_port,omitempty"`
	Conditions *condition.Point `json:"conditions,omitempty"`
	Error      string           `json:"error,omitempty"`
}

// startLead is how far ahead of the request a point starts: every
// machine's worker must have started its sampler by then (a worker that
// had not fails the point rather than send behind its schedule).
const startLead = time.Second

// OpenTraffic starts a traffic worker on every machine of lab, whose
// hosts are hosts (in the fabric's order, each with its switch and group),
// and settles how latency is taken (clocks; ClocksAuto decides from the
// machines: emulated ones share a clock, real ones report theirs). With
// cond, every worker also runs its part's condition logic during points.
func OpenTraffic(ctx context.Context, l *fabric.Lab, hosts []traffic.Host, clocks Clocks, cond *Conditions, rep steps.Reporter) (t *Traffic, err error) {
	t = &Traffic{lab: l, hosts: hosts}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	machine := map[string]int{}
	for k, m := range l.Machines {
		machine[m.Name] = k
	}
	var req trafficRequest
	for i, h := range l.Hosts {
		k, ok := machine[h.Machine]
		if !ok {
			return t, fmt.Errorf("lab %s: host %s runs on machine %q, which the lab does not list", l.Lab, h.Name, h.Machine)
		}
		req.Hosts = append(req.Hosts, trafficHost{Name: h.Name, PseudoMAC: h.PseudoMAC, Switch: hosts[i].Switch, Group: hosts[i].Group, Machine: k})
	}
	if cond != nil {
		if req.Conditions, err = conditionsFor(l, machine, cond); err != nil {
			return t, err
		}
	}
	if t.ss, err = startAll(ctx, l, rep, "traffic", req); err != nil {
		return t, err
	}
	for _, m := range l.Machines {
		t.names = append(t.names, m.Name)
	}
	answers, err := t.each()
	if err != nil {
		return t, fmt.Errorf("opening the traffic engines: %w", err)
	}
	t.sendMode = answers[0].SendMode
	emulated, agree := l.Emulated(), true
	for k, m := range l.Machines {
		c := answers[k].Clock
		if c == nil {
			return t, fmt.Errorf("machine %s did not say how its clock runs", m.Name)
		}
		agree = agree && c.Sync.Agrees()
		t.worst = max(t.worst, c.Sync.EstErrorUs)
	}
	t.agree = agree
	if clocks == ClocksOne && !emulated {
		return t, fmt.Errorf("--clocks one: the machines are not emulated on one, so their monotonic clocks are unrelated (wall, or local)")
	}
	switch {
	case clocks != ClocksAuto:
		t.clocks = clocks
	case emulated:
		t.clocks = ClocksOne
	case agree:
		t.clocks = ClocksWall
	default:
		t.clocks = ClocksLocal
	}
	if cond != nil {
		// The pause relay: every machine's socket, and whether a pause's
		// onset on one machine is a time on the others' clocks.
		relay := pointRequest{Kind: "relay", Clocked: t.clocks == ClocksOne || t.clocks == ClocksWall && agree}
		for k, a := range answers {
			if a.RelayPort == 0 {
				return t, fmt.Errorf("machine %s opened no pause relay", t.names[k])
			}
			relay.RelayPorts = append(relay.RelayPorts, a.RelayPort)
		}
		for _, s := range t.ss {
			if err := s.send(relay); err != nil {
				return t, err
			}
		}
		if _, err := t.each(); err != nil {
			return t, fmt.Errorf("starting the condition logic: %w", err)
		}
	}
	return t, nil
}

// conditionsFor is the workers' conditions request for lab l.
func conditionsFor(l *fabric.Lab, machine map[string]int, cond *Conditions) (*conditionsRequest, error) {
	y, err := cond.Scenario.MarshalYAML()
	if err != nil {
		return nil, err
	}
	var b [4]byte
	rand.Read(b[:])
	c := &conditionsRequest{Scenario: string(y), Source: cond.Scenario.Source, Originals: cond.Originals,
		XOff: cond.XOff, XOn: cond.XOn, PortOnly: cond.PortOnly, Token: binary.BigEndian.Uint32(b[:])}
	for _, s := range l.Switches {
		k, ok := machine[s.Machine]
		if !ok {
			return nil, fmt.Errorf("lab %s: switch %s runs on machine %q, which the lab does not list", l.Lab, s.Name, s.Machine)
		}
		c.Of = append(c.Of, k)
	}
	for _, m := range l.Machines {
		c.Addrs = append(c.Addrs, m.Addr)
	}
	return c, nil
}

// SendMode is how the machines' engines send (the first one's).
func (t *Traffic) SendMode() string { return t.sendMode }

// Latency says how the points take one-way latency, for the run's record.
func (t *Traffic) Latency() string {
	switch t.clocks {
	case ClocksOne:
		return "every pair: the machines share one clock (emulated machines)"
	case ClocksWall:
		if !t.agree {
			return fmt.Sprintf("every pair, as asked (--clocks wall): frames between machines timed by the machines' wall clocks, which their kernels do not call synchronized within %d µs (largest estimated error %d µs)", kernel.MaxClockErrorUs, t.worst)
		}
		return fmt.Sprintf("every pair: frames between machines timed by the machines' wall clocks, synchronized to within %d µs each (the largest estimated error)", t.worst)
	}
	return "pairs within one machine only: the machines' clocks are not known to agree (ethfab doctor's clock check)"
}

// Point runs one point on every machine at once and merges it: cfg is
// the config every engine runs (its Pattern built from spec, as every
// worker builds it), bin the sampler's. With conditions, it also returns
// what every machine's condition logic did, merged.
func (t *Traffic) Point(ctx context.Context, spec pat.Spec, cfg traffic.Config, bin time.Duration) (*traffic.Result, *measure.Report, *condition.Point, error) {
	var b [4]byte
	rand.Read(b[:])
	run := binary.BigEndian.Uint32(b[:]) | 1
	cfg.Run = run
	req := pointRequest{Kind: "point", Pattern: spec, Config: cfg, Bin: bin, Clocks: t.clocks}
	// Each machine's clock, read just before the point: its wall clock
	// must be close to the coordinator's for the point to start together
	// everywhere, and under ClocksWall its offset times the frames from
	// other machines (a clock a daemon slews drifts from its monotonic
	// one: 10 ppm is 10 µs a second).
	for _, s := range t.ss {
		if err := s.send(pointRequest{Kind: "clock"}); err != nil {
			return nil, nil, nil, err
		}
	}
	asked := time.Now()
	clocks, err := t.each()
	if err != nil {
		return nil, nil, nil, err
	}
	heard := time.Now()
	for k, c := range clocks {
		if c.Clock == nil {
			return nil, nil, nil, fmt.Errorf("machine %s did not say how its clock runs", t.names[k])
		}
		wall := time.Unix(0, c.Clock.WallNs)
		if wall.Before(asked.Add(-maxSkew)) || wall.After(heard.Add(maxSkew)) {
			return nil, nil, nil, fmt.Errorf("machine %s's clock read %s when the coordinator's read %s to %s: more than %v apart, its points would not start with the others' (synchronize the machines' clocks: NTP, or PTP)",
				t.names[k], wall.Format(time.RFC3339Nano), asked.Format(time.RFC3339Nano), heard.Format(time.RFC3339Nano), maxSkew)
		}
		req.Offsets = append(req.Offsets, c.Clock.OffsetNs)
	}
	if t.clocks != ClocksWall {
		req.Offsets = nil
	}
	req.Start = time.Now().Add(startLead).UnixNano()
	for _, s := range t.ss {
		if err := s.send(req); err != nil {
			return nil, nil, nil, err
		}
	}
	answers, err := t.each()
	if err != nil {
		return nil, nil, nil, err
	}
	parts := make([]*traffic.Part, len(answers))
	reps := make([]*measure.Report, len(answers))
	var conds []*condition.Point
	for k, a := range answers {
		if a.Part == nil || a.Report == nil {
			return nil, nil, nil, fmt.Errorf("machine %s answered no part or no report", t.names[k])
		}
		parts[k], reps[k] = a.Part, a.Report
		if a.Conditions != nil {
			conds = append(conds, a.Conditions)
		}
	}
	res, err := traffic.MergeParts(t.hosts, cfg, parts)
	if err != nil {
		return nil, nil, nil, err
	}
	var cond *condition.Point
	if len(conds) > 0 {
		if len(conds) != len(answers) {
			return nil, nil, nil, fmt.Errorf("%d of %d machines ran the condition logic", len(conds), len(answers))
		}
		cond = condition.MergePoints(conds)
	}
	return res, measure.Merge(t.names, reps), cond, nil
}

// each reads one answer from every worker, all at once; a worker's error
// is its machine's.
func (t *Traffic) each() ([]trafficAnswer, error) {
	return eachSession(t.ss, func(_ int, s *session) (trafficAnswer, error) {
		a, err := answer[trafficAnswer](s)
		if err == nil && a.Error != "" {
			err = errors.New(a.Error)
		}
		return a, err
	})
}

// Close ends every worker: each closes its engine and sampler.
func (t *Traffic) Close() error {
	var errs []error
	for _, s := range t.ss {
		if _, err := s.wait(true); err != nil {
			errs = append(errs, err)
		}
	}
	t.ss = nil
	return errors.Join(errs...)
}

// WorkerTraffic is `ethfab worker traffic PART`, one machine's side of
// Traffic: a request line opens an engine over every host (this part's
// with sockets) and a sampler of the part; each point line runs a point
// and answers its part and report; the end of the input closes both.
func WorkerTraffic(ctx context.Context, part string, in io.Reader, out io.Writer) (err error) {
	l, r, req, err := openPart[trafficRequest](part, in)
	if err != nil {
		return err
	}
	top, err := topology.Build(l.Topology)
	if err != nil {
		return err
	}
	if len(req.Hosts) != len(top.Hosts) {
		return fmt.Errorf("the request names %d hosts, %s has %d", len(req.Hosts), l.Topology, len(top.Hosts))
	}
	for i, h := range req.Hosts {
		if h.Name != top.Hosts[i].Name {
			return fmt.Errorf("the request's host %d is %s, %s's is %s", i, h.Name, l.Topology, top.Hosts[i].Name)
		}
	}
	hs := make([]traffic.Host, len(req.Hosts))
	for i, h := range req.Hosts {
		pseudo, err := net.ParseMAC(h.PseudoMAC)
		if err != nil {
			return fmt.Errorf("host %s: pseudo-MAC: %w", h.Name, err)
		}
		th := traffic.Host{Name: h.Name, Switch: h.Switch, Group: h.Group, MAC: pseudo, Remote: true}
		if mine := l.Host(h.Name); mine != nil {
			th.NetNS, th.Iface, th.Remote = mine.NetNS, mine.Iface, false
			if l.Assign != addressing.AssignRewrite {
				th.MAC = nil // its interface's own (the engine reads it)
			}
		}
		hs[i] = th
	}
	enc := json.NewEncoder(out)
	// Each socket and send stamp attached and closed waits a grace period
	// (fabric.ExpediteRCU).
	restore := fabric.ExpediteRCU()
	e, err := traffic.Open(hs, traffic.Options{})
	var smp *measure.Sampler
	if err == nil {
		if smp, err = measure.New(l, measure.Options{Topology: top}); err != nil {
			e.Close()
		}
	}
	var cr *condRun
	if err == nil && req.Conditions != nil {
		if cr, err = openConditions(l, req.Conditions); err != nil {
			smp.Close()
			e.Close()
		}
	}
	restore()
	if err != nil {
		enc.Encode(trafficAnswer{Error: err.Error()})
		return err
	}
	defer func() {
		restore := fabric.ExpediteRCU()
		cr.close()
		smp.Close()
		err = errors.Join(err, e.Close(), restore())
	}()
	clock := func() *clockState {
		c := &clockState{OffsetNs: traffic.WallMinusMono(), WallNs: time.Now().UnixNano()}
		c.Sync, _ = kernel.ReadClockSync() // unread: not synchronized
		return c
	}
	if err := enc.Encode(trafficAnswer{Ready: true, SendMode: e.SendMode(), Clock: clock(), RelayPort: cr.port()}); err != nil {
		return err
	}
	machineOf := make([]int, len(req.Hosts))
	for i, h := range req.Hosts {
		machineOf[i] = h.Machine
	}
	for {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) == 0 && err != nil {
			return nil // the coordinator is done, or gone
		}
		var p pointRequest
		if err := json.Unmarshal(b, &p); err != nil {
			return fmt.Errorf("the point: %w", err)
		}
		a := trafficAnswer{Clock: clock()}
		switch p.Kind {
		case "clock":
		case "relay":
			a = trafficAnswer{}
			if err := cr.start(p); err != nil {
				a.Error = err.Error()
			}
		default:
			a = workerPoint(ctx, e, smp, top, p, machineOf, l.Part, cr)
		}
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
}

// workerPoint runs one point on this machine's engine, sampled.
func workerPoint(ctx context.Context, e *traffic.Engine, smp *measure.Sampler, top *topology.Topology, p pointRequest, machineOf []int, part *fabric.PartState, cr *condRun) trafficAnswer {
	cfg := p.Config
	pattern, err := pat.New(p.Pattern, top, cfg.Seed, pat.Options{})
	if err != nil {
		return trafficAnswer{Error: fmt.Sprintf("pattern %s: %v", p.Pattern, err)}
	}
	var shift []int64
	switch p.Clocks {
	case ClocksWall:
		if len(p.Offsets) <= part.Index {
			return trafficAnswer{Error: fmt.Sprintf("%d clock offsets for machine %d", len(p.Offsets), part.Index)}
		}
		shift = make([]int64, len(machineOf))
		for i, k := range machineOf {
			if k < 0 || k >= len(p.Offsets) {
				return trafficAnswer{Error: fmt.Sprintf("host %d on machine %d of %d", i, k, len(p.Offsets))}
			}
			shift[i] = p.Offsets[k] - p.Offsets[part.Index]
		}
	case ClocksOne:
	default:
		p.Clocks = ClocksLocal
	}
	start := time.Unix(0, p.Start)
	// What the underlay sends over the point: the cut links' frames, and
	// whatever else the machine's network carries.
	// Over the measured window: from the end of the warm-up to the end
	// of the duration, read on time by a goroutine of its own.
	ul := part.Underlay
	var ulLoad chan underlayRate
	if ul != nil {
		ulLoad = make(chan underlayRate, 1)
		go func() { ulLoad <- measureUnderlay(ctx, ul, start.Add(cfg.Warmup), cfg.Duration) }()
	}
	smp.SetBin(p.Bin)
	if err := smp.Start(ctx); err != nil {
		return trafficAnswer{Error: fmt.Sprintf("sampler: %v", err)}
	}
	if late := time.Since(start); late > 0 {
		smp.Stop(ctx)
		return trafficAnswer{Error: fmt.Sprintf("not ready at the point's start: %v late (the point would start behind its schedule)", late.Round(time.Millisecond))}
	}
	machine := part.Machine
	cfg.Pattern, cfg.StartNs = pattern, traffic.MonoAt(start)
	cfg.LocalLatency, cfg.ClockShift = p.Clocks == ClocksLocal, shift
	stopCond := cr.run(ctx, cfg.Run)
	counts, err := e.RunPart(ctx, cfg)
	cond, cerr := stopCond()
	rep, serr := smp.Stop(ctx)
	switch {
	case err != nil:
		return trafficAnswer{Error: err.Error()}
	case cerr != nil:
		return trafficAnswer{Error: fmt.Sprintf("condition logic: %v", cerr)}
	case serr != nil:
		return trafficAnswer{Error: fmt.Sprintf("sampler: %v", serr)}
	}
	if ul != nil {
		u := <-ulLoad
		if u.err != nil {
			return trafficAnswer{Error: fmt.Sprintf("underlay: %v", u.err)}
		}
		rep.Underlay = []results.UnderlayLoad{{Machine: machine, Dev: ul.Dev, Bps: u.bps, SpeedBps: float64(ul.SpeedBps)}}
	}
	return trafficAnswer{Part: counts, Report: rep, Conditions: cond}
}

// condRun is a worker's condition logic: its part's monitor, joined to
// the other machines' by the pause relay's socket on the underlay.
type condRun struct {
	lab  *fabric.Lab
	req  *conditionsRequest
	conn *net.UDPConn
	mon  *condition.Monitor
}

// openConditions compiles the tables the part's switches run and opens
// the relay's socket on the machine's underlay address (any port: the
// coordinator hands every machine the others'). The monitor starts once
// the ports are known (start).
func openConditions(l *fabric.Lab, c *conditionsRequest) (*condRun, error) {
	sc, err := scenario.Parse(c.Source, []byte(c.Scenario))
	if err != nil {
		return nil, err
	}
	if _, err := l.AttachPart(sc, c.Originals); err != nil {
		return nil, err
	}
	k := l.Part.Index
	if k >= len(c.Addrs) {
		return nil, fmt.Errorf("%d underlay addresses for machine %d", len(c.Addrs), k)
	}
	ip := net.ParseIP(c.Addrs[k])
	if ip == nil {
		return nil, fmt.Errorf("machine %s's underlay address %q", l.Part.Machine, c.Addrs[k])
	}
	ns := ""
	if l.Part.Underlay != nil {
		ns = l.Part.Underlay.NS
	}
	cr := &condRun{lab: l, req: c}
	err = kernel.InNamespace(ns, func() error {
		var err error
		cr.conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pause relay socket on %s: %w", ip, err)
	}
	return cr, nil
}

// port is the relay socket's port (0 without conditions).
func (c *condRun) port() int {
	if c == nil {
		return 0
	}
	return c.conn.LocalAddr().(*net.UDPAddr).Port
}

// start opens the part's monitor, relaying to every machine's socket.
func (c *condRun) start(p pointRequest) error {
	switch {
	case c == nil:
		return fmt.Errorf("the lab runs no condition logic here")
	case c.mon != nil:
		return fmt.Errorf("the condition logic is running already")
	case len(p.RelayPorts) != len(c.req.Addrs):
		return fmt.Errorf("%d relay ports for %d machines", len(p.RelayPorts), len(c.req.Addrs))
	}
	peers := make([]*net.UDPAddr, len(p.RelayPorts))
	for k, port := range p.RelayPorts {
		peers[k] = &net.UDPAddr{IP: net.ParseIP(c.req.Addrs[k]), Port: port}
	}
	mon, err := condition.New(c.lab, condition.Options{XOff: c.req.XOff, XOn: c.req.XOn, PortOnly: c.req.PortOnly,
		Relay: &condition.RelayOptions{Conn: c.conn, Peers: peers, Self: c.lab.Part.Index, Of: c.req.Of, Token: c.req.Token, Clocked: p.Clocked}})
	if err != nil {
		return fmt.Errorf("condition logic: %w", err)
	}
	c.mon = mon
	return nil
}

// run starts the monitor for a point (run: the point's, which every
// machine's relay takes as its epoch); the function it returns stops it
// and says what it did (nothing without conditions).
func (c *condRun) run(ctx context.Context, run uint32) func() (*condition.Point, error) {
	if c == nil || c.mon == nil {
		return func() (*condition.Point, error) { return nil, nil }
	}
	c.mon.RelayEpoch(run)
	mark := c.mon.StartPoint()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { err = c.mon.Run(ctx) })
	return func() (*condition.Point, error) {
		cancel()
		wg.Wait()
		if err != nil {
			return nil, err
		}
		return c.mon.EndPoint(mark), nil
	}
}

func (c *condRun) close() {
	if c == nil {
		return
	}
	if c.mon != nil {
		c.mon.Close()
	}
	c.conn.Close()
}

// underlayRate is what an underlay interface sent over a window, in
// bit/s.
type underlayRate struct {
	bps float64
	err error
}

// measureUnderlay reads what ul sends from from for d.
func measureUnderlay(ctx context.Context, ul *fabric.UnderlayState, from time.Time, d time.Duration) underlayRate {
	read := func(at time.Time) (uint64, time.Time, error) {
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return 0, at, ctx.Err()
		}
		n, err := kernel.LinkTxBytes(ul.NS, ul.Dev)
		return n, time.Now(), err
	}
	tx0, t0, err := read(from)
	if err != nil {
		return underlayRate{err: err}
	}
	tx1, t1, err := read(from.Add(d))
	if err != nil {
		return underlayRate{err: err}
	}
	return underlayRate{bps: float64(tx1-tx0) * 8 / t1.Sub(t0).Seconds()}
}
