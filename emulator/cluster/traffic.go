package cluster

import (
	"bufio"
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
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/measure"
	"github.com/ethfab/ethfab/hostagent/traffic"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/results"
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
	// SameClock: every machine reads one clock (emulated machines), so
	// every frame's latency is taken; otherwise only of frames between
	// hosts of one machine (traffic.Config.LocalLatency).
	SameClock bool
}

// trafficRequest opens a worker's engine.
type trafficRequest struct {
	Hosts        []trafficHost `json:"hosts"`
	LocalLatency bool          `json:"local_latency,omitempty"`
}

type trafficHost struct {
	Name      string `json:"name"`
	PseudoMAC string `json:"pseudo_mac"`
	Switch    int    `json:"switch"`
	Group     int    `json:"group"`
}

// pointRequest is one point: the config every machine runs, its start in
// CLOCK_REALTIME ns (each worker's engine converts it to its monotonic
// clock) and the sampler's timeline bin.
type pointRequest struct {
	Pattern  pat.Spec      `json:"pattern"`
	Load     float64       `json:"load"`
	Frame    int           `json:"frame"`
	RateBps  uint64        `json:"rate_bps"`
	Warmup   time.Duration `json:"warmup_ns"`
	Duration time.Duration `json:"duration_ns"`
	Drain    time.Duration `json:"drain_ns"`
	Seed     int64         `json:"seed"`
	Senders  int           `json:"senders,omitempty"`
	Run      uint32        `json:"run"`
	Start    int64         `json:"start_unix_ns"`
	Bin      time.Duration `json:"bin_ns"`
}

// trafficAnswer is a worker's line: ready (with how it sends), or a
// point's part and report, or the error that ended it.
type trafficAnswer struct {
	Ready    bool            `json:"ready,omitempty"`
	SendMode string          `json:"send_mode,omitempty"`
	Part     *traffic.Part   `json:"part,omitempty"`
	Report   *measure.Report `json:"report,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// startLead is how far ahead of the request a point starts: every
// machine's worker must have started its sampler by then (a worker that
// had not fails the point rather than send behind its schedule).
const startLead = time.Second

// OpenTraffic starts a traffic worker on every machine of lab, whose
// hosts are hosts (in the fabric's order, each with its switch and group).
func OpenTraffic(ctx context.Context, l *fabric.Lab, hosts []traffic.Host, sameClock bool, rep steps.Reporter) (t *Traffic, err error) {
	t = &Traffic{lab: l, hosts: hosts, SameClock: sameClock}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	req := trafficRequest{LocalLatency: !sameClock}
	for i, h := range l.Hosts {
		req.Hosts = append(req.Hosts, trafficHost{Name: h.Name, PseudoMAC: h.PseudoMAC, Switch: hosts[i].Switch, Group: hosts[i].Group})
	}
	for _, m := range l.Machines {
		s, err := openSession(ctx, m, steps.Or(rep), "worker", "traffic", m.Part)
		if err != nil {
			return t, err
		}
		t.ss, t.names = append(t.ss, s), append(t.names, m.Name)
		if err := s.send(req); err != nil {
			return t, err
		}
	}
	answers, err := t.each(func(s *session) (trafficAnswer, error) { return s.trafficAnswer() })
	if err != nil {
		return t, fmt.Errorf("opening the traffic engines: %w", err)
	}
	t.sendMode = answers[0].SendMode
	return t, nil
}

// SendMode is how the machines' engines send (the first one's).
func (t *Traffic) SendMode() string { return t.sendMode }

// Point runs one point on every machine at once and merges it: cfg is
// the config every engine runs (its Pattern built from spec, as every
// worker builds it), bin the sampler's.
func (t *Traffic) Point(ctx context.Context, spec pat.Spec, cfg traffic.Config, bin time.Duration) (*traffic.Result, *measure.Report, error) {
	var b [4]byte
	rand.Read(b[:])
	run := binary.BigEndian.Uint32(b[:]) | 1
	req := pointRequest{Pattern: spec, Load: cfg.Load, Frame: cfg.FrameSize, RateBps: cfg.RateBps, Warmup: cfg.Warmup, Duration: cfg.Duration,
		Drain: cfg.Drain, Seed: cfg.Seed, Senders: cfg.Senders, Run: run, Start: time.Now().Add(startLead).UnixNano(), Bin: bin}
	for _, s := range t.ss {
		if err := s.send(req); err != nil {
			return nil, nil, err
		}
	}
	answers, err := t.each(func(s *session) (trafficAnswer, error) { return s.trafficAnswer() })
	if err != nil {
		return nil, nil, err
	}
	parts := make([]*traffic.Part, len(answers))
	reps := make([]*measure.Report, len(answers))
	for k, a := range answers {
		if a.Part == nil || a.Report == nil {
			return nil, nil, fmt.Errorf("machine %s answered no part or no report", t.names[k])
		}
		parts[k], reps[k] = a.Part, a.Report
	}
	cfg.Run = run
	res, err := traffic.MergeParts(t.hosts, cfg, parts)
	if err != nil {
		return nil, nil, err
	}
	return res, measure.Merge(t.names, reps), nil
}

// each reads one answer from every worker, all at once; a worker's error
// is its machine's.
func (t *Traffic) each(read func(s *session) (trafficAnswer, error)) ([]trafficAnswer, error) {
	out := make([]trafficAnswer, len(t.ss))
	errs := make([]error, len(t.ss))
	var wg sync.WaitGroup
	for k, s := range t.ss {
		wg.Go(func() {
			a, err := read(s)
			if err == nil && a.Error != "" {
				err = errors.New(a.Error)
			}
			if err != nil {
				errs[k] = fmt.Errorf("machine %s: %w", t.names[k], err)
			}
			out[k] = a
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Close ends every worker: each closes its engine and sampler.
func (t *Traffic) Close() error {
	var errs []error
	for _, s := range t.ss {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	t.ss = nil
	return errors.Join(errs...)
}

func (s *session) trafficAnswer() (trafficAnswer, error) {
	var a trafficAnswer
	b, err := s.out.ReadBytes('\n')
	if err != nil {
		s.wg.Wait()
		return a, fmt.Errorf("the worker stopped: %v (%s)", err, s.last.String())
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("the worker's answer %.80q: %w", b, err)
	}
	return a, nil
}

// WorkerTraffic is `ethfab worker traffic PART`, one machine's side of
// Traffic: a request line opens an engine over every host (this part's
// with sockets) and a sampler of the part; each point line runs a point
// and answers its part and report; the end of the input closes both.
func WorkerTraffic(ctx context.Context, part string, in io.Reader, out io.Writer) (err error) {
	l, err := fabric.Load(part)
	if err != nil {
		return err
	}
	if l.Part == nil {
		return fmt.Errorf("lab %s is no part of a lab across machines", part)
	}
	top, err := topology.Build(l.Topology)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(in, 1<<16)
	var req trafficRequest
	if err := readRequest(r, &req); err != nil {
		return err
	}
	if len(req.Hosts) != len(top.Hosts) {
		return fmt.Errorf("the request names %d hosts, %s has %d", len(req.Hosts), l.Topology, len(top.Hosts))
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
	restore()
	if err != nil {
		enc.Encode(trafficAnswer{Error: err.Error()})
		return err
	}
	defer func() {
		restore := fabric.ExpediteRCU()
		smp.Close()
		err = errors.Join(err, e.Close(), restore())
	}()
	if err := enc.Encode(trafficAnswer{Ready: true, SendMode: e.SendMode()}); err != nil {
		return err
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
		a := workerPoint(ctx, e, smp, top, p, req.LocalLatency, l.Part)
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
}

// workerPoint runs one point on this machine's engine, sampled.
func workerPoint(ctx context.Context, e *traffic.Engine, smp *measure.Sampler, top *topology.Topology, p pointRequest, localLatency bool, part *fabric.PartState) trafficAnswer {
	pattern, err := pat.New(p.Pattern, top, p.Seed, pat.Options{})
	if err != nil {
		return trafficAnswer{Error: fmt.Sprintf("pattern %s: %v", p.Pattern, err)}
	}
	start := time.Unix(0, p.Start)
	// What the underlay sends over the point: the cut links' frames, and
	// whatever else the machine's network carries.
	ul := part.Underlay
	var tx0 uint64
	var t0 time.Time
	if ul != nil {
		var err error
		if tx0, err = kernel.LinkTxBytes(ul.NS, ul.Dev); err != nil {
			return trafficAnswer{Error: fmt.Sprintf("underlay: %v", err)}
		}
		t0 = time.Now()
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
	counts, err := e.RunPart(ctx, traffic.Config{Pattern: pattern, Load: p.Load, FrameSize: p.Frame, RateBps: p.RateBps, Warmup: p.Warmup,
		Duration: p.Duration, Drain: p.Drain, Seed: p.Seed, Senders: p.Senders, Run: p.Run, StartNs: traffic.MonoAt(start), LocalLatency: localLatency})
	rep, serr := smp.Stop(ctx)
	switch {
	case err != nil:
		return trafficAnswer{Error: err.Error()}
	case serr != nil:
		return trafficAnswer{Error: fmt.Sprintf("sampler: %v", serr)}
	}
	if ul != nil {
		tx1, err := kernel.LinkTxBytes(ul.NS, ul.Dev)
		if err != nil {
			return trafficAnswer{Error: fmt.Sprintf("underlay: %v", err)}
		}
		rep.Underlay = []results.UnderlayLoad{{Machine: machine, Dev: ul.Dev, Bps: float64(tx1-tx0) * 8 / time.Since(t0).Seconds(), SpeedBps: float64(ul.SpeedBps)}}
	}
	return trafficAnswer{Part: counts, Report: rep}
}
