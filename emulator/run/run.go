// Package run executes a scenario end to end (`ethfab run`): it brings the
// lab up (or takes a running one), runs the phases in order — DMP boot,
// announcements, waits, traffic load sweeps — measures on the hosts and in
// the switches, tears the lab down, and writes a run directory a
// researcher can trust: what was run, on what machine, what was measured,
// and whether the machine kept up.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/cluster"
	"github.com/ethfab/ethfab/emulator/doctor"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/measure"
	"github.com/ethfab/ethfab/emulator/plan"
	"github.com/ethfab/ethfab/emulator/resources"
	"github.com/ethfab/ethfab/graph"
	"github.com/ethfab/ethfab/hostagent/traffic"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/topology"
	pat "github.com/ethfab/ethfab/traffic"
)

// Options tune a run.
type Options struct {
	// Lab, if set, runs on this running lab instead of bringing one up;
	// it must have been brought up from the same topology.
	Lab string
	// Keep leaves the lab up after the run.
	Keep bool
	// Out is the run directory; default runs/<scenario>-<time>.
	Out string
	// Version is ethfab's version, for the record.
	Version string
	// Report hears each step as it starts, i of n (n counts every phase
	// and every load; the bring-up's steps are counted apart), and one
	// line per finished step.
	Report steps.Reporter
	// Warmup and Drain frame every measured load (defaults 500ms, 500ms).
	Warmup, Drain time.Duration
	// Warn hears what the run expects to go wrong before it starts (a
	// phase asking more than the machine's measured capacity); it is
	// also recorded in metrics.json. Nil: recorded only.
	Warn io.Writer
	// Across, if set, brings the lab up across machines (cluster.Up).
	Across *cluster.Options
	// Clocks is how a run across machines takes latency ("": auto).
	Clocks cluster.Clocks
}

// Outcome is what a run left behind. A scenario with cases has one
// Outcome per case, each in its own subdirectory, and no metrics of its
// own.
type Outcome struct {
	Dir     string
	Case    string
	Metrics *results.Metrics
	Files   []string
	Cases   []*Outcome
	// Versus: the cases' expectations against each other.
	Versus []results.VersusResult
}

// Failed lists the expectations that failed, one line each; a caller
// exits non-zero when it is not empty.
func (o *Outcome) Failed() []string {
	var f []string
	for _, c := range o.Cases {
		for _, x := range c.Failed() {
			f = append(f, c.Case+": "+x)
		}
	}
	for _, v := range o.Versus {
		if !v.Pass {
			line := fmt.Sprintf("%s vs %s, %s at load %g: %s (measured %.4g, bound %.4g)", v.Case, v.Other, v.Phase, v.Load, v.Expect, v.Value, v.Bound)
			if v.Note != "" {
				line += ": " + v.Note
			}
			f = append(f, line)
		}
	}
	if o.Metrics == nil {
		return f
	}
	for _, e := range o.Metrics.Failed() {
		line := fmt.Sprintf("%s at load %g: %s (measured %.4g, bound %.4g)", e.Phase, e.Load, e.Expect, e.Value, e.Bound)
		if e.Note != "" {
			line += ": " + e.Note
		}
		f = append(f, line)
	}
	return f
}

// Run executes the scenario, or each of its cases in turn.
func Run(ctx context.Context, sc *scenario.Scenario, o Options) (*Outcome, error) {
	o.Report = steps.Or(o.Report)
	if len(sc.Cases) == 0 {
		return runOne(ctx, sc, o)
	}
	if o.Lab != "" {
		return nil, fmt.Errorf("%s has cases, each runs on its own lab: drop --lab", sc.Source)
	}
	if o.Out == "" {
		o.Out = filepath.Join("runs", sc.Name+"-"+time.Now().Format("20060102-150405"))
	}
	all := &Outcome{Dir: o.Out}
	for _, c := range sc.Cases {
		csc, err := sc.Case(c.Name)
		if err != nil {
			return nil, err
		}
		co := o
		co.Out = filepath.Join(o.Out, c.Name)
		steps.Printf(o.Report, "case %s (lab %s): %s", c.Name, csc.Name, overridesText(c))
		out, err := runOne(ctx, csc, co)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		out.Case = c.Name
		all.Cases = append(all.Cases, out)
	}
	byName := map[string]*Outcome{}
	for _, c := range all.Cases {
		byName[c.Case] = c
	}
	for _, c := range sc.Cases {
		for _, v := range c.Versus {
			all.Versus = append(all.Versus, results.EvaluateVersus(c.Name, v, byName[c.Name].Metrics.Phases, byName[v.Case].Metrics.Phases)...)
		}
	}
	if err := writeCases(sc, all); err != nil {
		return nil, err
	}
	return all, nil
}

func overridesText(c scenario.Case) string {
	var parts []string
	for _, s := range c.Set {
		parts = append(parts, s.Path+"="+s.Value)
	}
	return strings.Join(parts, ", ")
}

// runOne executes one scenario (no cases).
func runOne(ctx context.Context, sc *scenario.Scenario, o Options) (out *Outcome, err error) {
	if o.Warmup == 0 {
		o.Warmup = 500 * time.Millisecond
	}
	if o.Drain == 0 {
		o.Drain = 500 * time.Millisecond
	}
	say := func(format string, a ...any) { steps.Printf(o.Report, format, a...) }
	dir := o.Out
	if dir == "" {
		dir = filepath.Join("runs", sc.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	// A run that fails leaves its reason beside whatever it measured, so
	// the directory never passes for a finished run.
	var partial *runner // set once there are metrics to keep
	defer func() {
		if err != nil {
			_ = os.WriteFile(filepath.Join(dir, FailedFile), []byte(err.Error()+"\n"), 0o644)
			if partial != nil {
				partial.writePartial(err)
			}
		}
	}()
	start := time.Now()
	capa, err := doctor.LoadCapacity()
	if err != nil {
		return nil, err
	}
	// The scenario is compiled once: for the capacity check, for the lab
	// (Up builds it from these tables, or a running lab is checked against
	// them) and for what runs on the lab (the condition monitor). A lab
	// to bring up is first checked for size, so a fabric too large for
	// the machine is never compiled at all.
	var lab *fabric.Lab
	var comp *fabric.Compiled
	if o.Across != nil && o.Lab != "" {
		return nil, fmt.Errorf("--lab runs on a lab that is up already: drop --machines")
	}
	switch {
	case o.Lab != "":
		if lab, err = fabric.Load(o.Lab); err != nil {
			return nil, err
		}
		if lab.State != "up" {
			return nil, fmt.Errorf("lab %s is %s, not up", o.Lab, lab.State)
		}
		if len(lab.Machines) > 0 {
			if err := checkAcross(sc); err != nil {
				return nil, err
			}
		}
		if comp, err = lab.Attach(sc); err != nil {
			return nil, err
		}
	case o.Across != nil:
		// Each machine checks its own part's size; the tables are
		// compiled with the hosts' MACs the lab was built with.
		if err := checkAcross(sc); err != nil {
			return nil, err
		}
		a := *o.Across
		a.Report = o.Report
		if lab, err = cluster.Up(ctx, sc, a); err != nil {
			return nil, err
		}
		if !o.Keep {
			defer func() {
				if derr := cluster.Down(context.WithoutCancel(ctx), lab.Lab, o.Report); derr != nil {
					err = errors.Join(err, fmt.Errorf("tearing down lab %s: %w", lab.Lab, derr))
				} else {
					say("lab %s torn down", lab.Lab)
				}
			}()
		}
		if comp, err = lab.Attach(sc); err != nil {
			return nil, err
		}
	default:
		if err := fabric.FitsMachine(sc); err != nil {
			return nil, err
		}
		if comp, err = fabric.Compile(sc); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.Source, err)
		}
	}
	top := comp.Top
	// Warned before anything is built, against the capacity of the
	// datapath the lab runs (each has its own).
	dp := fabric.DatapathOf(sc, kernel.HasOVSModule())
	if lab != nil {
		dp = lab.OVS.Datapath
	}
	warnings, err := capacityWarnings(sc, capa, dp, comp)
	if err != nil {
		return nil, err
	}
	rt, rtSay, err := realtime(sc, dp, o.Across != nil)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		if o.Warn != nil {
			fmt.Fprintf(o.Warn, "warning: %s\n", w)
		}
	}
	if o.Lab == "" && o.Across == nil {
		if lab, err = fabric.Up(ctx, sc, fabric.UpOptions{Report: o.Report, Compiled: comp}); err != nil {
			return nil, err
		}
		if !o.Keep {
			defer func() {
				if derr := fabric.Down(lab.Lab); derr != nil {
					err = errors.Join(err, fmt.Errorf("tearing down lab %s: %w", lab.Lab, derr))
				} else {
					say("lab %s torn down", lab.Lab)
				}
			}()
		}
	}

	m := &results.Metrics{Schema: results.SchemaVersion, Run: runRecord(sc, lab, start, o.Version, warnings)}
	doc := doctor.Run(ctx)
	m.Run.Machine["netem"] = yesNo(doc.Capabilities.Netem)
	m.Run.Machine["kernel"] = doc.Capabilities.Kernel
	m.Run.Machine["realtime"] = rtSay
	artifacts, err := artifactsOf(sc, lab, comp, doc)
	if err != nil {
		return nil, err
	}

	r := &runner{sc: sc, o: o, lab: lab, top: top, m: m, dir: dir, say: say, artifacts: artifacts, realtime: rt}
	partial = r
	// Deferred after the lab's down, so it runs first: a failed run's
	// sockets hold the namespaces down deletes, which the kernel would
	// free only at the process's exit, at normal grace periods (44 s of
	// background teardown for DF(4,8,4)).
	defer r.close()
	n := 0
	for _, ph := range sc.Phases {
		if ph.Kind == scenario.PhaseTraffic {
			n += len(ph.Traffic.Loads)
		} else {
			n++
		}
	}
	r.steps = n
	ctx, stopWatch := superviseDaemons(ctx, lab)
	defer stopWatch()
	for _, ph := range sc.Phases {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if err := r.phase(ctx, ph); err != nil {
			// A daemon that died is the news, not the call it broke (the
			// sampler's dump-flows may see the socket reset before the
			// supervisor's next look).
			if derr := awaitDeadDaemons(lab); derr != nil {
				err = derr
			}
			return nil, fmt.Errorf("phase %s: %w", ph.Name, err)
		}
	}
	r.close()
	m.Run.End = time.Now()
	m.Fidelity = results.EvaluateFidelity(r.fidelity)
	m.Expectations = results.EvaluateScenario(sc, m.Phases)
	files, err := results.Write(dir, m, artifacts)
	if err != nil {
		return nil, err
	}
	return &Outcome{Dir: dir, Metrics: m, Files: files}, nil
}

// runRecord is metrics.json's run: what ran on which lab, as the lab was
// built.
func runRecord(sc *scenario.Scenario, lab *fabric.Lab, start time.Time, version string, warnings []string) results.Run {
	return results.Run{
		Name: sc.Name, Scenario: sc.Source, Description: sc.Description, Lab: lab.Lab, Topology: lab.Topology.String(),
		Hosts: len(lab.Hosts), Switches: len(lab.Switches), Addressing: string(lab.Addressing), Assign: string(lab.Assign), Routing: string(lab.Routing),
		HostLinkRate: sc.Links[scenario.HostLinks].Rate, Start: start, Version: version, Warnings: warnings,
		Machine: map[string]string{"datapath": lab.OVS.Datapath, "ovs": lab.OVS.Version, "ovs_malloc": lab.OVS.Allocator, "ovs_flow_cache": lab.OVS.FlowCache, "cores": strconv.Itoa(runtime.NumCPU())},
	}
}

type runner struct {
	sc    *scenario.Scenario
	o     Options
	lab   *fabric.Lab
	top   *topology.Topology
	m     *results.Metrics
	dir   string
	say   func(string, ...any)
	step  int
	steps int

	artifacts results.Artifacts
	engine    *traffic.Engine
	sampler   *measure.Sampler
	across    *cluster.Traffic // a lab across machines' engines and samplers
	// acrossHere: the lab's machines are emulated on this one.
	acrossHere bool
	cond       *conditions
	fidelity   []results.FidelityInput
	// realtime: the traffic points run under SCHED_FIFO (ovs.realtime).
	realtime bool
}

func (r *runner) next(what string) {
	r.step++
	r.o.Report.Start(r.step, r.steps, what)
}

func (r *runner) phase(ctx context.Context, ph scenario.Phase) error {
	switch ph.Kind {
	case scenario.PhaseWait:
		r.next(fmt.Sprintf("%s: waiting %s", ph.Name, ph.Wait))
		select {
		case <-time.After(ph.Wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		r.say("%s: waited %s", ph.Name, ph.Wait)
		return nil
	case scenario.PhaseTraffic:
		return r.traffic(ctx, ph)
	case scenario.PhaseDMP, scenario.PhaseAnnounce:
		return r.agents(ctx, ph)
	case scenario.PhaseMPI:
		return r.mpi(ctx, ph)
	}
	return fmt.Errorf("unknown phase kind %q", ph.Kind)
}

// trafficHosts are the lab's hosts as traffic endpoints, addressed the way
// the fabric routes: by their current MAC, or by pseudo-MAC under assign
// rewrite (the access switch restores the original on delivery).
func (r *runner) trafficHosts() ([]traffic.Host, error) {
	hs := make([]traffic.Host, len(r.lab.Hosts))
	for i, h := range r.lab.Hosts {
		th := traffic.Host{Name: h.Name, NetNS: h.NetNS, Iface: h.Iface, Switch: r.top.Hosts[i].Switch,
			Group: r.top.Switches[r.top.Hosts[i].Switch].Group}
		if r.lab.Assign == addressing.AssignRewrite {
			mac, err := net.ParseMAC(h.PseudoMAC)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", h.Name, err)
			}
			th.MAC = mac
		}
		hs[i] = th
	}
	return hs, nil
}

// close closes the engine, the sampler and the condition monitor, the
// grace periods of their sockets expedited (see traffic); once.
func (r *runner) close() {
	if r.across != nil {
		r.across.Close()
		r.across = nil
	}
	if r.engine == nil && r.sampler == nil && r.cond == nil {
		return
	}
	restore := r.expediteRCU()
	if r.engine != nil {
		r.engine.Close()
		r.engine = nil
	}
	if r.sampler != nil {
		r.sampler.Close()
		r.sampler = nil
	}
	if r.cond != nil {
		if r.cond.mon != nil {
			r.cond.mon.Close() // across machines, the workers hold the monitors
		}
		r.cond = nil
	}
	restore()
}

// expediteRCU is fabric.ExpediteRCU for the run's own sockets; a setting
// it could not put back is a warning (the next `down` tries again), not a
// failed run.
func (r *runner) expediteRCU() (restore func()) {
	back := fabric.ExpediteRCU()
	return func() {
		if err := back(); err != nil && r.o.Warn != nil {
			fmt.Fprintf(r.o.Warn, "warning: %v\n", err)
		}
	}
}

func (r *runner) traffic(ctx context.Context, ph scenario.Phase) error {
	t := ph.Traffic
	if len(r.lab.Machines) > 0 {
		return r.trafficAcross(ctx, ph)
	}
	if r.engine == nil {
		hs, err := r.trafficHosts()
		if err != nil {
			return err
		}
		// Said before the engine opens a socket, not as EMFILE or the
		// machine swapping half-way through.
		if avail, err := kernel.MemAvailableMiB(); err == nil {
			if err := resources.CheckTraffic(len(hs), avail); err != nil {
				return fmt.Errorf("phase %s: %w", ph.Name, err)
			}
		}
		// A receiving and a sending socket per host.
		if err := kernel.NeedDescriptors(2*len(hs), fmt.Sprintf("phase %s: the traffic engine for %d hosts", ph.Name, len(hs))); err != nil {
			return err
		}
		// A socket and a send stamp per host, each attach and close a
		// grace period (fabric.ExpediteRCU).
		restore := r.expediteRCU()
		if r.engine, err = traffic.Open(hs, traffic.Options{}); err != nil {
			err = fmt.Errorf("traffic engine: %w", err)
		} else {
			err = r.openSampler()
		}
		restore()
		if err != nil {
			return err
		}
		r.m.Run.Machine["traffic_send"] = r.engine.SendMode()
	} else if r.lab.Assign != addressing.AssignRewrite {
		// DMP may have changed the hosts' addresses since the engine opened.
		for i := range r.lab.Hosts {
			if mac, err := currentMAC(r.lab.Hosts[i]); err == nil {
				r.engine.SetMAC(i, mac)
			}
		}
	}
	p, warmup, err := r.pattern(t)
	if err != nil {
		return err
	}
	rate := r.sc.Links[scenario.HostLinks].Rate
	probes, err := r.probes(ph)
	if err != nil {
		return err
	}
	// Links turned off and on show in 100 ms bins (seed 002 measured
	// "at every 100 mseconds"), and so do phases with probes, which are
	// what such a phase is compared with (Table 7's fixed path).
	var bin time.Duration
	if len(ph.LinkEvents) > 0 || probes != nil {
		bin = linkEventBin
	}
	r.sampler.SetBin(bin)
	for _, load := range t.Loads {
		r.next(fmt.Sprintf("%s: %s at load %.2f for %s", ph.Name, t.PatternString(), load, t.Duration))
		// Before the sampler: the hosts' tagged broadcasts are not the
		// point's frames.
		stopLearning, err := r.learnVLANs(ctx)
		if err != nil {
			return err
		}
		if err := r.sampler.Start(ctx); err != nil {
			stopLearning()
			return fmt.Errorf("sampler: %w", err)
		}
		cond, err := r.startConditions(ctx)
		if err != nil {
			stopLearning()
			return err
		}
		events := make(chan linkEventsDone, 1)
		go func(t0 time.Time) { events <- r.linkEvents(ctx, ph.LinkEvents, t0) }(time.Now())
		var rp *traffic.RPConfig
		if r.sc.Routing.Notifies() {
			rp = &traffic.RPConfig{Timed: r.sc.Routing.QCN.RPIncrease == scenario.RPTime}
		}
		res, err := r.engine.Run(ctx, traffic.Config{Pattern: p, Load: load, FrameSize: t.Frame, RateBps: rate,
			Warmup: warmup, Duration: t.Duration, Drain: r.o.Drain, Seed: t.Seed, Probes: probes, RP: rp, Realtime: r.realtime})
		done := <-events
		stopLearning()
		if done.err != nil && err == nil {
			err = fmt.Errorf("link events: %w", done.err)
		}
		var conds *results.Conditions
		if cond != nil {
			var cerr error
			if conds, cerr = cond.stop(); cerr != nil && err == nil {
				err = fmt.Errorf("condition logic: %w", cerr)
			}
			if cerr == nil && !cond.isQCN() {
				if werr := cond.writeFlips(r.dir, ph.Name, load); werr != nil && err == nil {
					err = fmt.Errorf("conditions CSV: %w", werr)
				}
			}
		}
		rep, serr := r.sampler.Stop(ctx)
		var qp *results.QCN
		if cond != nil && cond.isQCN() && serr == nil {
			// After the sampler: QCN's series take the timeline's bins.
			var bins []float64
			if rep.Timeline != nil {
				bins = rep.Timeline.T
			}
			qp = cond.qcnPoint(rep.Start, bins, r.firstGroup())
			// Check 14 over the measurement window.
			qp.SOut, qp.SOutGlobalP, qp.ToSOutLocalP = sOutP(r.top, t.AdvOffset, qp.PTraces,
				warmup.Seconds(), (warmup + t.Duration).Seconds())
			if werr := cond.writeQCN(r.dir, ph.Name, load); werr != nil && err == nil {
				err = fmt.Errorf("qcn CSV: %w", werr)
			}
		}
		if err != nil {
			return fmt.Errorf("traffic at load %g: %w", load, err)
		}
		if serr != nil {
			return fmt.Errorf("sampler: %w", serr)
		}
		pt := r.pointOf(ph, load, res, rep)
		if qp == nil {
			pt.Conditions = conds // QCN-Switch pauses nothing: its point has qcn instead
		}
		pt.QCN = qp
		pt.LinkEvents = done.events
		pt.Probes = res.Probes
		if pt.Power, err = r.pointPower(done.power, (warmup + t.Duration).Seconds()); err != nil {
			return fmt.Errorf("power at load %g: %w", load, err)
		}
		recoveries(pt.LinkEvents, pt.Probes)
		if err := r.keep(ph, load, pt, rep); err != nil {
			return err
		}
	}
	return nil
}

// pattern is a traffic phase's pattern, and its warm-up (the phase's, or
// the run's).
func (r *runner) pattern(t *scenario.Traffic) (pat.Pattern, time.Duration, error) {
	p, err := pat.New(t.PatternSpec(), r.top, t.Seed, pat.Options{})
	if err != nil {
		return nil, 0, fmt.Errorf("pattern %s: %w", t.PatternString(), err)
	}
	warmup := r.o.Warmup
	if t.Warmup > 0 {
		warmup = t.Warmup
	}
	return p, warmup, nil
}

// pointOf is a measured point: the engine's result and the sampler's
// report.
func (r *runner) pointOf(ph scenario.Phase, load float64, res *traffic.Result, rep *measure.Report) results.Point {
	pt := pointOf(ph, string(r.lab.Routing), load, res)
	pt.DeliveredBySourceSwitch = r.deliveredBySwitch(res)
	rep.Fill(&pt)
	return pt
}

// keep records a point, its seed and its fidelity input, and writes the
// metrics so far.
func (r *runner) keep(ph scenario.Phase, load float64, pt results.Point, rep *measure.Report) error {
	r.m.Phases = append(r.m.Phases, pt)
	r.m.Run.Seeds = appendSeed(r.m.Run.Seeds, ph.Traffic.Seed)
	r.fidelity = append(r.fidelity, rep.FidelityInput(pt))
	if err := results.WriteMetrics(r.dir, r.m); err != nil {
		return err
	}
	r.say("%s: load %.2f offered %.3f accepted %.3f loss %.4f latency p50 %.0f µs p99 %.0f µs non-minimal %.2f",
		ph.Name, load, pt.OfferedLoad, pt.AcceptedLoad, pt.Loss, pt.LatencyUS.P50, pt.LatencyUS.P99, pt.NonminimalShare)
	return nil
}

// firstGroup names the switches of the lowest-numbered group (the one an
// ADV pattern loads hardest; seed 004 traces group 0's ports).
func (r *runner) firstGroup() map[string]bool {
	low := -1
	for _, s := range r.top.Switches {
		if s.Group >= 0 && (low < 0 || s.Group < low) {
			low = s.Group
		}
	}
	out := map[string]bool{}
	for i, s := range r.top.Switches {
		if s.Group == low && low >= 0 && i < len(r.lab.Switches) {
			out[r.lab.Switches[i].Name] = true
		}
	}
	return out
}

// deliveredBySwitch names each source switch's delivered load, per host.
func (r *runner) deliveredBySwitch(res *traffic.Result) map[string]float64 {
	out := make(map[string]float64, len(res.Switches))
	for _, s := range res.Switches {
		if s.Hosts > 0 && s.Switch < len(r.lab.Switches) {
			out[r.lab.Switches[s.Switch].Name] = s.DeliveredLoad / float64(s.Hosts)
		}
	}
	return out
}

// pointOf turns the engine's result into a metrics point; the fabric
// sampler's Fill adds the switches' side.
func pointOf(ph scenario.Phase, routing string, load float64, res *traffic.Result) results.Point {
	a := res.Aggregate
	f := res.Fidelity
	var flows []results.Flow
	for _, fl := range res.Flows {
		flows = append(flows, results.Flow{Src: fl.Src, Dst: fl.Dst, Sent: fl.Sent, Received: fl.Received, Lost: fl.Lost, Reordered: fl.Reordered,
			AcceptedLoad: fl.AcceptedLoad, DeliveredBps: fl.DeliveredBps,
			LatencyUS: latencyUS(fl.Latency)})
	}
	var rp *results.ReactionPoints
	if r := res.RP; r != nil {
		rp = &results.ReactionPoints{CNMs: r.CNMs, Limiters: r.Limiters, Released: r.Released, Held: r.Held,
			Dropped: r.Dropped, HeldAtEnd: r.HeldAtEnd, Unknown: r.Unknown, Malformed: r.Malformed, ReadErrs: r.ReadErrs}
	}
	return results.Point{
		Flows: flows, ReactionPoints: rp,
		Name: ph.Name, Pattern: ph.Traffic.PatternString(), Routing: routing, Load: load,
		OfferedLoad: a.OfferedLoad, AcceptedLoad: a.AcceptedLoad, Loss: a.Loss,
		LatencyUS:        latencyUS(a.Latency),
		Seed:             res.Seed,
		LatencyHistogram: latencyHistogram(res.Latency),
		FrameBytes:       res.FrameSize, DurationS: res.Duration.Seconds(), WarmupS: res.Warmup.Seconds(),
		Sent: a.Sent, Offered: a.Offered, Unsent: f.Unsent, Refused: f.SendNoBufs, RefusedLate: f.SendNoBufsLate,
		SendLateness: results.Lateness{Late: f.LateFrames, MeanUS: f.MeanLatenessUs, MaxUS: f.MaxLatenessUs, SlotUS: f.SlotUs, BinS: f.LateBinS, BinsUS: f.LateBinsUs},
		Received:     a.Received, Duplicates: a.Duplicates, Reordered: a.Reordered, Unclocked: f.Unclocked,
		// ENOBUFS is the host's own link queue (modelled) refusing a frame:
		// offered, not sent, not lost. Everything else is the machine's.
		Drops: results.Drops{Socket: f.SendAgain + f.SendOther + f.RxDrops, SendAgain: f.SendAgain, SendOther: f.SendOther, RxRing: f.RxDrops},
	}
}

func appendSeed(seeds []int64, s int64) []int64 {
	for _, x := range seeds {
		if x == s {
			return seeds
		}
	}
	return append(seeds, s)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// currentMAC reads a host's interface address now.
func currentMAC(h fabric.Host) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := kernel.InNamespace(h.NetNS, func() error {
		ifi, err := net.InterfaceByName(h.Iface)
		if err == nil {
			mac = ifi.HardwareAddr
		}
		return err
	})
	return mac, err
}

// drawHosts and drawTimeout bound the run directory's picture of the
// fabric: dot lays DF(2,4,2) with its 72 hosts out in 0.3 s, and a
// drawing with a thousand hosts is unreadable anyway.
const (
	drawHosts   = 128
	drawTimeout = 20 * time.Second
)

// artifactsOf gathers the files a run directory keeps: the scenario as
// run, the machine's probe, the lab (topology, hosts, switches, links),
// the rules summary and the fabric's picture (topology.dot, .svg).
func artifactsOf(sc *scenario.Scenario, lab *fabric.Lab, comp *fabric.Compiled, doc doctor.Report) (results.Artifacts, error) {
	var a results.Artifacts
	var err error
	if a.Scenario, err = sc.MarshalYAML(); err != nil {
		return a, err
	}
	if a.Machine, err = json.MarshalIndent(doc, "", "  "); err != nil {
		return a, err
	}
	if a.Topology, err = json.MarshalIndent(lab, "", "  "); err != nil {
		return a, err
	}
	// The fabric's picture: the hosts too up to drawHosts of them. The
	// SVG only where Graphviz is installed, and within drawTimeout: a
	// run never waits on its drawing.
	dot := graph.Dot(comp.Top, graph.Options{NoHosts: len(comp.Top.Hosts) > drawHosts})
	a.Dot = []byte(dot)
	ctx, cancel := context.WithTimeout(context.Background(), drawTimeout)
	a.SVG, _ = results.RenderDot(ctx, dot)
	cancel()
	// The rules summary describes the lab's own tables, walked as plan
	// --verify walks them.
	pr, err := plan.Describe(controller.TablesOf(comp.Ctl, comp.Tables), plan.Options{Verify: true, MaxPairs: 200_000, Seed: 1})
	if err != nil {
		return a, fmt.Errorf("rules summary: %w", err)
	}
	a.Rules, err = json.MarshalIndent(pr, "", "  ")
	return a, err
}

// Brief is the few lines a terminal shows after a run: each point, the
// expectations that failed and the fidelity verdict.
func (o *Outcome) Brief() string {
	var b strings.Builder
	if o.Cases != nil {
		for _, c := range o.Cases {
			fmt.Fprintf(&b, "== case %s (%s)\n", c.Case, c.Dir)
			b.WriteString(c.Brief())
		}
		fmt.Fprintf(&b, "cases side by side: %s\n", filepath.Join(o.Dir, "cases.md"))
		return b.String()
	}
	m := o.Metrics
	fmt.Fprintf(&b, "%s on %s, %s routing, %s addressing\n", m.Run.Name, m.Run.Topology, m.Run.Routing, m.Run.Addressing)
	for _, a := range m.Agents {
		fmt.Fprintf(&b, "  %s\n", agentLine(a))
	}
	if len(m.Phases) > 0 {
		fmt.Fprintf(&b, "  %-12s %-10s %6s %8s %8s %8s %9s %9s %6s\n", "phase", "pattern", "load", "offered", "accepted", "loss", "p50 µs", "p99 µs", "nonmin")
		for _, p := range m.Phases {
			if x := p.MPI; x != nil {
				fmt.Fprintf(&b, "  %-12s %-10s mpirun -np %d %s: %.2f s, %d frames into the fabric, non-minimal %.2f, %d result(s) (summary.md)\n",
					p.Name, p.Pattern, x.NP, strings.Join(x.Program, " "), x.WallS, p.Sent, p.NonminimalShare, len(x.Results))
				continue
			}
			fmt.Fprintf(&b, "  %-12s %-10s %6.2f %8.3f %8.3f %8.4f %9.0f %9.0f %6.2f\n", p.Name, p.Pattern, p.Load,
				p.OfferedLoad, p.AcceptedLoad, p.Loss, p.LatencyUS.P50, p.LatencyUS.P99, p.NonminimalShare)
		}
	}
	failed := o.Failed()
	fmt.Fprintf(&b, "expectations: %d checked, %d failed\n", len(m.Expectations), len(failed))
	for _, f := range failed {
		fmt.Fprintf(&b, "  FAIL %s\n", f)
	}
	if m.Fidelity.OK {
		b.WriteString("fidelity: ok (the machine kept up)\n")
	} else {
		b.WriteString("fidelity: NOT OK, treat these figures with care:\n")
		for _, r := range m.Fidelity.Reasons {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
	}
	return b.String()
}

// writePartial renders what a failed run measured before it stopped, with
// the reason in metrics.json (run.failed) and at the top of the summary,
// so the directory reads as an incomplete run, not as a machine that did
// not keep up or a scenario without expectations.
func (r *runner) writePartial(cause error) {
	r.m.Run.End = time.Now()
	r.m.Run.Failed = cause.Error()
	r.m.Fidelity = results.EvaluateFidelity(r.fidelity)
	r.m.Expectations = results.EvaluateScenario(r.sc, r.m.Phases)
	_, _ = results.Write(r.dir, r.m, r.artifacts)
}

// latencyUS is the engine's latency figures as results records them.
// latencyHistogram keeps the point's whole distribution (nil without
// samples).
func latencyHistogram(h *pat.Histogram) *results.LatencyHistogram {
	if h == nil || h.N == 0 {
		return nil
	}
	return &results.LatencyHistogram{Unit: "ns", Buckets: h.Buckets()}
}

func latencyUS(l traffic.Latency) results.Latency {
	return results.Latency{Mean: l.Mean, P50: l.P50, P99: l.P99, P999: l.P999, Max: l.Max}
}
