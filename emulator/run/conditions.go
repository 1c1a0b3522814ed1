package run

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/condition"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/qcn"
	"github.com/ethfab/ethfab/qcnswitch"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/topology"
)

// conditions runs every switch's condition logic (conditional routing)
// while a traffic point runs: ports pause on their queue's XOFF and
// resume on XON, each flip one FlowMod made by the switch's own logic.
type conditions struct {
	mon    *condition.Monitor
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
	start  condition.PointStart

	// The run's totals: metrics.json's top-level conditions, kept as
	// samples so its percentiles are over every flip of the run.
	m        *results.Metrics
	run      results.Conditions
	reaction []float64
	recovery []float64
	flip     []float64
	applied  []float64
	last     []condition.Reaction // the point's, for its CSV
	relays   []*condition.Point   // across machines: every point's relay

	// QCN-Switch: the counters and log marks before the point, and the
	// point's logs for its CSVs.
	qbefore condition.QCNCounters
	qmark   condition.QCNMark
	p0      []condition.PortP // every transit port's P when the point started
	lastP   []condition.PChange
	lastCNM []condition.CNMRecord
	qeq     uint64 // the congestion points' Qeq
	// snoop-ar: the remote entries' expiry (dilated), the move log's mark
	// before the point, the point's moves.
	expiry    time.Duration
	stopped   time.Time // when the monitor stopped: the move log's end
	mmark     int
	lastMoves []condition.Move
}

// writeFlips appends the point's flips to conditions-<phase>.csv: one row
// per measured flip, times in ms from its onset, so how each reaction
// splits (FlowMod written, barrier reply, the frame's host sending it, the
// frame entering the switch, the frame leaving) can be read flip by flip.
func (c *conditions) writeFlips(dir, phase string, load float64) error {
	ms := func(t, from time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatFloat(float64(t.Sub(from))/float64(time.Millisecond), 'f', 3, 64)
	}
	var rows [][]string
	for _, r := range c.last {
		kind, cause := "pause", "queue"
		if r.Resume {
			kind = "resume"
		}
		if r.Upstream {
			cause = "upstream"
		}
		rows = append(rows, []string{strconv.FormatFloat(load, 'g', -1, 64), r.Switch, strconv.Itoa(r.Port), kind, cause,
			strconv.FormatInt(r.Onset.UnixNano(), 10), ms(r.Sent, r.Onset), ms(r.Applied, r.Onset), ms(r.FrameSent, r.Onset), ms(r.Arrived, r.Onset), ms(r.Seen, r.Onset), string(r.Outcome), r.Why})
	}
	return appendCSV(filepath.Join(dir, results.ConditionsCSV(phase)),
		[]string{"load", "switch", "port", "flip", "cause", "onset_unix_ns", "flowmod_ms", "applied_ms", "frame_sent_ms", "frame_in_ms", "frame_left_ms", "outcome", "why"}, rows)
}

func (r *runner) startConditions(ctx context.Context) (*conditions, error) {
	q := r.sc.Routing.QCN
	if !r.sc.Routing.Watched() {
		return nil, nil
	}
	if r.cond == nil && (r.sc.Routing.Mode == controller.QCNSwitch || q.Seed003()) {
		if q.Seed003() {
			rps := "the hosts' reaction points off"
			if q.RP {
				rps = "every host's reaction points on"
			}
			ar := ""
			if r.sc.Routing.Mode == controller.SnoopAR {
				ar = fmt.Sprintf("; snoop-based adaptive routing, remote entries expiring after %s (%s dilated to the links' rate)",
					scenario.FormatDuration(q.EffectiveExpiry(r.sc.Links[scenario.LocalLinks].Rate)), scenario.FormatDuration(q.Expiry))
			}
			r.say("qcn (seed 003): congestion points on every inter-switch port at Qeq %s sample every %s received; %s%s",
				scenario.FormatSize(q.Qeq), scenario.FormatSize(q.SampleBytes), rps, ar)
		} else {
			refresh := q.Refresh
			if refresh == 0 {
				refresh = condition.AutoRefresh(r.lab.BPF != nil)
			}
			r.say("qcn-switch (%s): congestion points at Qeq %s sample every %d transit departures; N drawn every %s",
				q.Variant, scenario.FormatSize(q.Qeq), q.SampleEvery, scenario.FormatDuration(refresh))
		}
		// The draws (N, victims) follow the first traffic phase's seed, so
		// a rerun of the scenario draws the same sequence.
		seed := int64(scenario.DefaultSeed)
		for _, ph := range r.sc.Phases {
			if ph.Traffic != nil {
				seed = ph.Traffic.Seed
				break
			}
		}
		opts := qcnOptions(q, r.sc.Routing.Mode, r.sc.Links[scenario.LocalLinks].Rate, seed)
		mon, err := condition.New(r.lab, condition.Options{QCN: opts})
		if err != nil {
			return nil, fmt.Errorf("qcn congestion points: %w", err)
		}
		r.cond = &conditions{mon: mon, m: r.m, qeq: q.Qeq}
		if opts.Snoop != nil {
			r.cond.expiry = opts.Snoop.Expiry
		}
	}
	if r.cond == nil {
		mon, err := condition.New(r.lab, r.pauseOptions())
		if err != nil {
			return nil, fmt.Errorf("condition logic: %w", err)
		}
		r.cond = &conditions{mon: mon, m: r.m}
	}
	c := r.cond
	c.qbefore = c.mon.QCNCounters()
	if c.isQCN() {
		c.p0 = c.mon.Probabilities()
	}
	_, _, _, c.qmark = c.mon.QCNLog(condition.QCNMark{P: 1 << 62, CNM: 1 << 62, Intercept: 1 << 62})
	_, c.mmark = c.mon.Moves(1 << 62)
	c.start = c.mon.StartPoint()
	cctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.mon.Run(cctx); err != nil && cctx.Err() == nil {
			c.err = err
		}
	}()
	return c, nil
}

// pauseOptions are conditional routing's thresholds and reach, as the
// run says them.
func (r *runner) pauseOptions() condition.Options {
	xoff, xon := r.sc.Routing.XOff, r.sc.Routing.XOn
	if xoff.IsZero() || xon.IsZero() {
		// Unless told, pause at half the queue an inter-switch link
		// end can hold and resume at an eighth: a fixed frame count
		// would never be reached on slow links, whose tbf queues are
		// short.
		ls := r.sc.Links[scenario.GlobalLinks]
		if ls.Rate == 0 {
			ls = r.sc.Links[scenario.LocalLinks]
		}
		_, limit := kernel.TBFParams(ls.Rate)
		if ls.Limit > 0 {
			limit = uint32(ls.Limit) // the queue the scenario gave the links
		}
		if xoff.IsZero() {
			xoff = scenario.Threshold{Value: int64(limit / 2), Unit: scenario.Bytes}
		}
		if xon.IsZero() {
			xon = scenario.Threshold{Value: int64(limit / 8), Unit: scenario.Bytes}
		}
	}
	portOnly := r.sc.Routing.Pause == scenario.PausePort
	reach := "and pause the links that feed them"
	if portOnly {
		reach = "(their own port only)"
	}
	if len(r.lab.Machines) > 0 && !portOnly {
		reach += ", across machines by a relay over the underlay"
	}
	r.say("conditional routing: ports pause above %s and resume below %s of egress backlog %s", xoff, xon, reach)
	return condition.Options{XOff: xoff, XOn: xon, PortOnly: portOnly}
}

// stop ends the point's condition logic and returns what it did.
func (c *conditions) stop() (*results.Conditions, error) {
	c.cancel()
	c.wg.Wait()
	c.stopped = time.Now()
	if c.err != nil {
		return nil, c.err
	}
	return c.add(c.mon.EndPoint(c.start)), nil
}

// add takes a point's condition logic (one monitor's, or every machine's
// merged) into the run's totals and returns the point's record.
func (c *conditions) add(p *condition.Point) *results.Conditions {
	out := p.Results()
	c.last = p.Reactions
	c.reaction = append(c.reaction, p.Reaction...)
	c.recovery = append(c.recovery, p.Recovery...)
	c.flip = append(c.flip, p.Flip...)
	c.applied = append(c.applied, p.Applied...)
	t := &c.run
	t.AddCounts(out)
	t.ReactionMS = results.NewDistribution(c.reaction)
	t.RecoveryMS = results.NewDistribution(c.recovery)
	t.FlipMS = results.NewDistribution(c.flip)
	t.AppliedMS = results.NewDistribution(c.applied)
	t.OnsetResolutionMS, t.ReactLimitMS = out.OnsetResolutionMS, out.ReactLimitMS
	if p.Relay != nil {
		c.relays = append(c.relays, &condition.Point{Relay: p.Relay})
		t.PauseRelay = condition.MergePoints(c.relays).Results().PauseRelay
	}
	if c.m != nil && !c.isQCN() {
		run := *t
		c.m.Conditions = &run
	}
	return out
}

// qcnOptions are the monitor's QCN-Switch settings from routing.qcn.
func qcnOptions(q *scenario.QCN, routing controller.Mode, linkBps uint64, seed int64) *condition.QCN {
	mode := qcn.QoldSample
	if q.Qold == scenario.QoldCNM {
		mode = qcn.QoldCNM
	}
	var snoop *condition.SnoopOptions
	if routing == controller.SnoopAR {
		snoop = &condition.SnoopOptions{Expiry: q.EffectiveExpiry(linkBps), RemoteRefresh: q.RemoteRefresh}
	}
	return &condition.QCN{
		Notify: q.Seed003(), SampleBytes: int(q.SampleBytes), Snoop: snoop,
		Switch: qcnswitch.Params{Variant: qcnswitch.Variant(q.Variant), Lf: q.Lf, Ai: q.Ai, PCl: q.PCl, PMin: q.PMin},
		Qeq:    int(q.Qeq), W: q.W, SampleEvery: q.SampleEvery, Qold: mode,
		CNMProbability: q.CNMProbability, CNMPriority: q.CNMPriority, Refresh: q.Refresh, Seed: uint64(seed),
	}
}

// qcnPoint is what QCN-Switch did during the point (nil under PAUSE),
// with its series on the bins ending at bins (seconds since start, the
// sampler's; every 500 ms up to now when there are none) and the P traces
// of the ports of the switches first names. It keeps the point's logs for
// writeQCN.
func (c *conditions) qcnPoint(start time.Time, bins []float64, first map[string]bool) *results.QCN {
	if !c.isQCN() {
		return nil
	}
	a, b := c.mon.QCNCounters(), c.qbefore
	ps, cs, _, mark := c.mon.QCNLog(c.qmark)
	c.lastP, c.lastCNM, c.qmark = ps, cs, mark
	q := &results.QCN{Samples: a.Samples - b.Samples, Generated: a.Generated - b.Generated, Intercepted: a.Intercepted - b.Intercepted,
		Dropped: a.Dropped - b.Dropped, NoVictim: a.NoVictim - b.NoVictim, MaskWrites: a.MaskWrites - b.MaskWrites,
		PChanges: a.PChanges - b.PChanges, Notify: c.mon.QCNNotify(), QeqBytes: c.qeq,
		ARMoves: a.Moves - b.Moves, ARMoveErrors: a.MoveErrs - b.MoveErrs}
	c.lastMoves, c.mmark = c.mon.Moves(c.mmark)
	if c.expiry > 0 {
		q.Resets = results.NewResets(c.expiry, c.stopped, c.lastMoves)
	}
	if !q.Notify {
		byClass, low := c.mon.PStats()
		q.PMeanByClass, q.PMin = byClass, &low
		if sent := q.Generated - q.NoVictim - q.Dropped; sent > q.Intercepted {
			q.Lost = sent - q.Intercepted
		}
	}
	if len(bins) == 0 {
		for t := 0.5; t <= time.Since(start).Seconds(); t += 0.5 {
			bins = append(bins, t)
		}
	}
	q.Series, q.PTraces = qcnSeries(start, bins, c.p0, ps, cs, first)
	q.Series.Truncated = uint64(len(ps)) != q.PChanges
	if q.Notify {
		// Only the CNM rate: there are no probabilities to follow.
		q.Series = &results.QCNSeries{T: q.Series.T, CNMsPerS: q.Series.CNMsPerS}
		q.PTraces = nil
	}
	return q
}

// qcnSeries replays a point's P changes from the probabilities at its
// start: CNMs sent per second, ports below P 50 and mean P per class at
// each bin's end, and the first group's P every PTraceStep.
func qcnSeries(start time.Time, bins []float64, p0 []condition.PortP, ps []condition.PChange, cs []condition.CNMRecord,
	first map[string]bool) (*results.QCNSeries, []results.PTrace) {
	type key struct {
		sw   string
		port int
	}
	cur := make(map[key]*condition.PortP, len(p0))
	ports := make([]condition.PortP, len(p0))
	copy(ports, p0)
	var traces []results.PTrace
	traceOf := map[key]int{}
	for i := range ports {
		k := key{ports[i].Switch, ports[i].Port}
		cur[k] = &ports[i]
		if first[k.sw] {
			traceOf[k] = len(traces)
			traces = append(traces, results.PTrace{Port: fmt.Sprintf("%s:%d", k.sw, k.port), Class: ports[i].Class})
		}
	}
	// The logs are in poll order, not quite time order.
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Time.Before(ps[j].Time) })
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Time.Before(cs[j].Time) })
	at := func(t float64) time.Time { return start.Add(time.Duration(t * float64(time.Second))) }
	next := 0 // the first change not yet applied
	apply := func(until time.Time) {
		for ; next < len(ps) && !ps[next].Time.After(until); next++ {
			if p := cur[key{ps[next].Switch, ps[next].Port}]; p != nil {
				p.P = ps[next].New
			}
		}
	}
	ser := &results.QCNSeries{Ports: len(ports)}
	step := 0 // the traces' next sample, at step × PTraceStep
	nextCNM := 0
	prev := 0.0
	for _, end := range bins {
		// The traces' steps up to this bin's end (a millisecond's slack
		// for the float steps), then the bin itself.
		for ; float64(step)*results.PTraceStep <= end+1e-3; step++ {
			ts := math.Round(float64(step)*results.PTraceStep*1e3) / 1e3
			apply(at(ts))
			for k, i := range traceOf {
				traces[i].T = append(traces[i].T, ts)
				traces[i].P = append(traces[i].P, cur[k].P)
			}
		}
		apply(at(end))
		var sent int
		for ; nextCNM < len(cs) && cs[nextCNM].Time.Sub(start).Seconds() <= end; nextCNM++ {
			if x := cs[nextCNM]; x.Time.Sub(start).Seconds() > prev && x.Dropped == "" && !x.NoVictim {
				sent++
			}
		}
		rate := 0.0
		if end > prev {
			rate = float64(sent) / (end - prev)
		}
		below := 0
		for _, p := range ports {
			if p.P < 50 {
				below++
			}
		}
		byClass, _ := condition.MeanP(ports)
		ser.T = append(ser.T, end)
		ser.CNMsPerS = append(ser.CNMsPerS, rate)
		ser.PortsBelow50 = append(ser.PortsBelow50, below)
		ser.PMeanLocal = append(ser.PMeanLocal, byClass["local"])
		ser.PMeanGlobal = append(ser.PMeanGlobal, byClass["global"])
		prev = end
	}
	return ser, traces
}

func (c *conditions) isQCN() bool { return c.mon != nil && c.mon.QCNEnabled() }

// writeQCN appends the point's probability changes to qcn-<phase>.csv and
// its CNMs to cnm-<phase>.csv.
func (c *conditions) writeQCN(dir, phase string, load float64) error {
	l := strconv.FormatFloat(load, 'g', -1, 64)
	ns := func(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	var rows [][]string
	for _, p := range c.lastP {
		rows = append(rows, []string{l, ns(p.Time), p.Switch, strconv.Itoa(p.Port), p.Class, string(p.Cause),
			strconv.Itoa(int(p.Fbq)), f(p.FbAvg), f(p.Old), f(p.New)})
	}
	if err := appendCSV(filepath.Join(dir, results.QCNCSV(phase)),
		[]string{"load", "unix_ns", "switch", "port", "class", "cause", "fbq", "fb_avg", "p_old", "p_new"}, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, x := range c.lastCNM {
		rows = append(rows, []string{l, ns(x.Time), x.Switch, strconv.Itoa(x.Port), strconv.Itoa(x.Q), strconv.Itoa(x.Qoff), strconv.Itoa(x.Qdelta),
			strconv.Itoa(int(x.Fbq)), x.VictimSrc, x.VictimDst, strconv.FormatBool(x.NoVictim), strconv.Itoa(x.Out), x.Dropped})
	}
	if err := appendCSV(filepath.Join(dir, results.CNMCSV(phase)),
		[]string{"load", "unix_ns", "cp_switch", "cp_port", "q_bytes", "qoff_bytes", "qdelta_bytes", "fbq", "victim_src", "victim_dst", "no_victim", "out_port", "dropped"}, rows); err != nil {
		return err
	}
	if len(c.lastMoves) == 0 {
		return nil
	}
	rows = rows[:0]
	for _, x := range c.lastMoves {
		rows = append(rows, []string{l, ns(x.Time), x.Switch, x.Dst, strconv.Itoa(x.Port), x.Cause})
	}
	return appendCSV(filepath.Join(dir, results.MovesCSV(phase)), []string{"load", "unix_ns", "switch", "dst", "port", "cause"}, rows)
}

// appendCSV appends rows to a CSV file, with the header when it is new.
func appendCSV(path string, header []string, rows [][]string) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if os.IsNotExist(statErr) {
		w.Write(header)
	}
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sOutP finds seed 004's S_out under ADV+offset on a Dragonfly: the
// switch of group 0 whose global link leads to group offset, where all
// of group 0's minimal traffic leaves. It returns the mean, over the
// traces' samples in [from, to] seconds, of that global port's P, and of
// the other group-0 switches' local ports towards S_out, averaged over
// them (spec check A.6-14). Nothing when the topology is no Dragonfly or
// the traces lack the ports.
func sOutP(top *topology.Topology, offset int, traces []results.PTrace, from, to float64) (name string, global, local *float64) {
	if top.Spec.Kind != topology.Dragonfly || offset <= 0 {
		return "", nil, nil
	}
	target := offset % top.NumGroups()
	out, port := -1, 0
	for _, sw := range top.Switches {
		if sw.Group != 0 {
			continue
		}
		for _, p := range sw.Ports {
			if p.Class == topology.ClassGlobal && top.Switches[p.Peer.Switch].Group == target {
				out, port = sw.ID, p.Num
			}
		}
	}
	if out < 0 {
		return "", nil, nil
	}
	mean := func(label string) (float64, bool) {
		for _, tr := range traces {
			if tr.Port != label {
				continue
			}
			var sum float64
			n := 0
			for i, t := range tr.T {
				if t >= from && t <= to && i < len(tr.P) {
					sum += tr.P[i]
					n++
				}
			}
			return sum / float64(max(n, 1)), n > 0
		}
		return 0, false
	}
	name = top.Switches[out].Name
	if g, ok := mean(fmt.Sprintf("%s:%d", name, port)); ok {
		global = &g
	}
	var sum float64
	n := 0
	for _, sw := range top.Switches {
		if sw.Group != 0 || sw.ID == out {
			continue
		}
		for _, p := range sw.Ports {
			if p.Class == topology.ClassLocal && p.Peer.Switch == out {
				if v, ok := mean(fmt.Sprintf("%s:%d", sw.Name, p.Num)); ok {
					sum += v
					n++
				}
			}
		}
	}
	if n > 0 {
		l := sum / float64(n)
		local = &l
	}
	return name, global, local
}
