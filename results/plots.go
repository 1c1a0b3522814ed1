package results

import (
	"fmt"
	"math"
	"sort"

	"github.com/ethfab/ethfab/results/plot"
)

type namedChart struct {
	file  string // without extension, under plots/
	chart plot.Chart
}

// maxBacklogSeries bounds the ports in a backlog plot: more lines than
// this cannot be told apart.
const maxBacklogSeries = 6

// loadSeries is one curve of a load sweep: a phase of a run.
type loadSeries struct {
	name   string
	points []Point
}

// sweepCharts draws the load-sweep figures shared by a run's report and a
// comparison: accepted, mean and p99 latency, and non-minimal share
// against offered load.
func sweepCharts(prefix, title string, ss []loadSeries) []namedChart {
	var acc, lat, p99, nonmin plot.Chart
	acc = plot.Chart{Title: title + "accepted vs offered load", XLabel: "offered load (fraction of host link rate)", YLabel: "accepted load (fraction of host link rate)"}
	lat = plot.Chart{Title: title + "latency vs offered load", XLabel: "offered load (fraction of host link rate)", YLabel: "latency (µs)"}
	p99 = plot.Chart{Title: title + "p99 latency vs offered load", XLabel: "offered load (fraction of host link rate)", YLabel: "p99 latency (µs)"}
	nonmin = plot.Chart{Title: title + "non-minimally routed share vs offered load", XLabel: "offered load (fraction of host link rate)", YLabel: "non-minimal share of injected frames"}
	maxX := 0.0
	twoLat := len(ss) == 1
	for _, s := range ss {
		var a, m, q, n []plot.Point
		for _, p := range s.points {
			x := p.OfferedLoad
			maxX = math.Max(maxX, x)
			a = append(a, plot.Point{X: x, Y: p.AcceptedLoad})
			n = append(n, plot.Point{X: x, Y: p.NonminimalShare})
			if p.Received > 0 {
				m = append(m, plot.Point{X: x, Y: p.LatencyUS.Mean})
				q = append(q, plot.Point{X: x, Y: p.LatencyUS.P99})
			}
		}
		acc.Series = append(acc.Series, plot.Series{Name: s.name, Points: a})
		nonmin.Series = append(nonmin.Series, plot.Series{Name: s.name, Points: n})
		if twoLat {
			// One run: mean and p99 in one figure, p99 dashed.
			lat.Series = append(lat.Series, plot.Series{Name: s.name + " mean", Points: m},
				plot.Series{Name: s.name + " p99", Points: q, Dashed: true})
		} else {
			lat.Title = title + "mean latency vs offered load"
			lat.YLabel = "mean latency (µs)"
			lat.Series = append(lat.Series, plot.Series{Name: s.name, Points: m})
			p99.Series = append(p99.Series, plot.Series{Name: s.name, Points: q})
		}
	}
	if maxX > 0 {
		acc.Series = append(acc.Series, plot.Series{Name: "accepted = offered", Dashed: true, NoMarkers: true,
			Points: []plot.Point{{X: 0, Y: 0}, {X: maxX, Y: maxX}}})
	}
	logY(&lat)
	logY(&p99)
	out := []namedChart{
		{prefix + "accepted-vs-offered", acc},
		{prefix + "latency-vs-offered", lat},
	}
	if !twoLat {
		out = append(out, namedChart{prefix + "p99-latency-vs-offered", p99})
	}
	out = append(out, namedChart{prefix + "nonminimal-vs-offered", nonmin})
	var keep []namedChart
	for _, c := range out {
		c.chart.Series = nonEmpty(c.chart.Series)
		if hasData(c.chart) {
			keep = append(keep, c)
		}
	}
	return keep
}

// logY switches a latency chart to a log axis when its values span more
// than two decades: latency past saturation would flatten the rest.
func logY(c *plot.Chart) {
	lo, hi := math.Inf(1), 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if p.Y <= 0 {
				return
			}
			lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
		}
	}
	c.LogY = hi > 0 && hi/lo > 100
}

func nonEmpty(ss []plot.Series) []plot.Series {
	var out []plot.Series
	for _, s := range ss {
		if len(s.Points) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func hasData(c plot.Chart) bool {
	for _, s := range c.Series {
		if len(s.Points) > 0 && !s.Dashed {
			return true
		}
	}
	return false
}

// runCharts are a run's figures.
func runCharts(m *Metrics) []namedChart {
	var ss []loadSeries
	for _, name := range phaseNames(m.Phases) {
		ss = append(ss, loadSeries{name: name, points: sortedByOffered(pointsOf(m.Phases, name))})
	}
	out := sweepCharts("", "", ss)
	for _, name := range phaseNames(m.Phases) {
		pts := pointsOf(m.Phases, name)
		if c, ok := perSwitchChart(name+": injected throughput", injectedLabel, byLoad(pts), injected); ok {
			out = append(out, namedChart{"injected-" + safeName(name), c})
		}
		if c, ok := perSwitchChart(name+": throughput delivered at the sinks", deliveredLabel, byLoad(pts), delivered); ok {
			out = append(out, namedChart{"delivered-" + safeName(name), c})
		}
		if c, ok := backlogChart(name, pts); ok {
			out = append(out, namedChart{"backlog-" + safeName(name), c})
		}
		out = append(out, timeCharts(name, pts)...)
	}
	return out
}

func sortedByOffered(pts []Point) []Point {
	out := append([]Point(nil), pts...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].OfferedLoad < out[j].OfferedLoad })
	return out
}

// switchCurve is one line of a per-switch figure: a point of some run.
type switchCurve struct {
	name string
	pt   Point
}

// perSwitchChart draws seed 004 Fig. 8's kind of figure: a value for each
// switch of one group, by switch index, one line per curve. The group shown
// is the lowest-numbered one measured (group 0 is the one an ADV pattern
// loads hardest). The switches' groups and indices come from the points'
// per_switch_injected; value says a switch's figure and whether it has one.
func perSwitchChart(title, ylabel string, curves []switchCurve, value func(Point, SwitchInjected) (float64, bool)) (plot.Chart, bool) {
	group := math.MaxInt
	for _, c := range curves {
		for _, s := range c.pt.PerSwitchInjected {
			if s.Group >= 0 && s.Group < group {
				group = s.Group
			}
		}
	}
	if group == math.MaxInt {
		return plot.Chart{}, false
	}
	c := plot.Chart{Title: fmt.Sprintf("%s per switch of group %d", title, group), XLabel: "switch index in group", YLabel: ylabel}
	for _, cv := range curves {
		var sp []plot.Point
		for _, s := range cv.pt.PerSwitchInjected {
			if s.Group != group {
				continue
			}
			if y, ok := value(cv.pt, s); ok {
				sp = append(sp, plot.Point{X: float64(s.Index), Y: y})
			}
		}
		sort.Slice(sp, func(i, j int) bool { return sp[i].X < sp[j].X })
		if len(sp) > 0 {
			c.Series = append(c.Series, plot.Series{Name: cv.name, Points: sp})
		}
	}
	return c, len(c.Series) > 0
}

func injected(_ Point, s SwitchInjected) (float64, bool) { return s.Fraction, true }

func delivered(p Point, s SwitchInjected) (float64, bool) {
	v, ok := p.DeliveredBySourceSwitch[s.Switch]
	return v, ok
}

const (
	injectedLabel  = "injected load (fraction of the switch's host links)"
	deliveredLabel = "delivered load per host (fraction of host link rate)"
)

// deliveredCompare is the Fig. 8 analogue of a comparison: for each load
// asked, the throughput delivered from each switch of the group, one line
// per series.
func deliveredCompare(prefix string, ss []loadSeries) []namedChart {
	var loads []float64
	seen := map[float64]bool{}
	for _, s := range ss {
		for _, p := range s.points {
			if len(p.DeliveredBySourceSwitch) > 0 && !seen[p.Load] {
				seen[p.Load] = true
				loads = append(loads, p.Load)
			}
		}
	}
	sort.Float64s(loads)
	var out []namedChart
	for _, l := range loads {
		var curves []switchCurve
		for _, s := range ss {
			for _, p := range s.points {
				if p.Load == l {
					curves = append(curves, switchCurve{name: s.name, pt: p})
				}
			}
		}
		if c, ok := perSwitchChart(fmt.Sprintf("load %g: throughput delivered at the sinks", l), deliveredLabel, curves, delivered); ok {
			out = append(out, namedChart{fmt.Sprintf("%sdelivered-load-%g", prefix, l), c})
		}
	}
	return out
}

// byLoad names a phase's points by their load, for per-switch figures.
func byLoad(pts []Point) []switchCurve {
	var out []switchCurve
	for _, p := range pts {
		out = append(out, switchCurve{name: fmt.Sprintf("load %g", p.Load), pt: p})
	}
	return out
}

// backlogChart shows the queue backlog over time of the hottest ports at
// the highest load that has samples.
func backlogChart(phase string, pts []Point) (plot.Chart, bool) {
	best := highest(pts, func(p *Point) bool { return len(p.Backlog) > 0 })
	if best == nil {
		return plot.Chart{}, false
	}
	series := append([]BacklogSeries(nil), best.Backlog...)
	sort.SliceStable(series, func(i, j int) bool { return mean(series[i].Bytes) > mean(series[j].Bytes) })
	if len(series) > maxBacklogSeries {
		series = series[:maxBacklogSeries]
	}
	c := plot.Chart{Title: fmt.Sprintf("%s: queue backlog at load %g (hottest ports)", phase, best.Load),
		XLabel: "time (s)", YLabel: "backlog (bytes)"}
	for _, s := range series {
		n := min(len(s.T), len(s.Bytes))
		sp := make([]plot.Point, n)
		for i := 0; i < n; i++ {
			sp[i] = plot.Point{X: s.T[i], Y: float64(s.Bytes[i])}
		}
		if n > 0 {
			c.Series = append(c.Series, plot.Series{Name: s.Port, Points: sp, NoMarkers: n > 50})
		}
	}
	return c, len(c.Series) > 0
}

// mean is v's mean (0 when empty).
func mean[T uint64 | float64](v []T) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}

// highest is the point of the highest load for which has says yes.
func highest(pts []Point, has func(*Point) bool) *Point {
	var best *Point
	for i := range pts {
		if has(&pts[i]) && (best == nil || pts[i].Load >= best.Load) {
			best = &pts[i]
		}
	}
	return best
}

func xy(t, y []float64) []plot.Point {
	out := make([]plot.Point, 0, min(len(t), len(y)))
	for i := range min(len(t), len(y)) {
		out = append(out, plot.Point{X: t[i], Y: y[i]})
	}
	return out
}

const timeLabel = "time since the point started (s; warm-up and drain included)"

// controlLoopChart is spec §A.4.6's figure: at the phase's highest load,
// bin by bin, the accepted load, the non-minimal share and (QCN-Switch)
// the share of transit ports with P below 50. The positive control loop
// shows as non-minimal share and low-P ports rising while accepted load
// falls.
func controlLoopChart(phase string, pts []Point) (plot.Chart, bool) {
	p := highest(pts, func(p *Point) bool { return p.Timeline != nil && len(p.Timeline.T) > 0 })
	if p == nil {
		return plot.Chart{}, false
	}
	tl := p.Timeline
	c := plot.Chart{Title: fmt.Sprintf("%s: control loop at load %g", phase, p.Load), XLabel: timeLabel, YLabel: "fraction"}
	c.Series = append(c.Series, plot.Series{Name: "accepted load", Points: xy(tl.T, tl.AcceptedLoad)})
	if len(tl.NonminimalShare) > 0 {
		// Only bins that injected frames have a share (not the drain).
		var pts []plot.Point
		for i, p := range xy(tl.T, tl.NonminimalShare) {
			if i < len(tl.InjectedFrames) && tl.InjectedFrames[i] > 0 {
				pts = append(pts, p)
			}
		}
		c.Series = append(c.Series, plot.Series{Name: "non-minimal share", Points: pts})
	}
	if q := p.QCN; q != nil && q.Series != nil && q.Series.Ports > 0 {
		share := make([]float64, len(q.Series.PortsBelow50))
		for i, n := range q.Series.PortsBelow50 {
			share[i] = float64(n) / float64(q.Series.Ports)
		}
		c.Series = append(c.Series, plot.Series{Name: "transit ports with P < 50", Points: xy(q.Series.T, share)})
	}
	return c, hasData(c)
}

// timeByLoadChart draws one series of every point over time, a line per
// load.
func timeByLoadChart(title, ylabel string, pts []Point, series func(*Point) (t, y []float64)) (plot.Chart, bool) {
	c := plot.Chart{Title: title, XLabel: timeLabel, YLabel: ylabel}
	for i := range pts {
		if t, y := series(&pts[i]); len(t) > 0 {
			c.Series = append(c.Series, plot.Series{Name: fmt.Sprintf("load %g", pts[i].Load), Points: xy(t, y)})
		}
	}
	return c, hasData(c)
}

// hostLoadChart is each host's received load over time at the phase's
// highest load (seed 002 Fig. 6); hosts that received nothing are left
// out. Under a flows pattern whose destinations each receive one flow it
// is each flow's throughput over time (seed 003's 3-flow figures, the
// reset spikes), a line per flow named "source → destination", and the
// hosts no flow goes to are left out (they receive only CNMs).
func hostLoadChart(phase string, pts []Point) (plot.Chart, bool) {
	p := highest(pts, func(p *Point) bool { return p.Timeline != nil && len(p.Timeline.DeliveredByHost) > 0 })
	if p == nil {
		return plot.Chart{}, false
	}
	tl := p.Timeline
	c := plot.Chart{Title: fmt.Sprintf("%s: load each host received at load %g", phase, p.Load), XLabel: timeLabel, YLabel: "fraction of the host link rate"}
	if flowOf := flowByDestination(p.Flows); flowOf != nil {
		c.Title = fmt.Sprintf("%s: throughput of each flow at load %g", phase, p.Load)
		for _, f := range p.Flows {
			if y, ok := tl.DeliveredByHost[f.Dst]; ok {
				c.Series = append(c.Series, plot.Series{Name: flowOf[f.Dst], Points: xy(tl.T, y), NoMarkers: true})
			}
		}
		return c, hasData(c)
	}
	hosts := make([]string, 0, len(tl.DeliveredByHost))
	for h := range tl.DeliveredByHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		if y := tl.DeliveredByHost[h]; mean(y) > 0 {
			c.Series = append(c.Series, plot.Series{Name: h, Points: xy(tl.T, y), NoMarkers: true})
		}
	}
	return c, hasData(c)
}

// flowByDestination names each flow by its destination ("A1h0 → B1h0"),
// or is nil when there are no flows or a destination receives more than
// one (its host's load is then not one flow's).
func flowByDestination(flows []Flow) map[string]string {
	if len(flows) == 0 {
		return nil
	}
	out := make(map[string]string, len(flows))
	for _, f := range flows {
		if _, dup := out[f.Dst]; dup {
			return nil
		}
		out[f.Dst] = f.Src + " → " + f.Dst
	}
	return out
}

// maxPTraces bounds the ports in a P(t) figure.
const maxPTraces = 8

// pChart is P over time of the first group's transit ports at the
// phase's highest load: the ports whose P fell lowest on average, at most
// maxPTraces.
func pChart(phase string, pts []Point) (plot.Chart, bool) {
	p := highest(pts, func(p *Point) bool { return p.QCN != nil && len(p.QCN.PTraces) > 0 })
	if p == nil {
		return plot.Chart{}, false
	}
	tr := append([]PTrace(nil), p.QCN.PTraces...)
	sort.SliceStable(tr, func(i, j int) bool { return mean(tr[i].P) < mean(tr[j].P) })
	title := fmt.Sprintf("%s: P of group's transit ports at load %g", phase, p.Load)
	if len(tr) > maxPTraces {
		title = fmt.Sprintf("%s: P of the %d lowest of %d transit ports at load %g", phase, maxPTraces, len(tr), p.Load)
		tr = tr[:maxPTraces]
	}
	c := plot.Chart{Title: title, XLabel: timeLabel, YLabel: "probability of routing minimally (%)"}
	for _, t := range tr {
		c.Series = append(c.Series, plot.Series{Name: t.Port + " " + t.Class, Points: xy(t.T, t.P), NoMarkers: true})
	}
	return c, hasData(c)
}

// timeCharts are a phase's figures over time: the control loop, the
// inter-switch backlog, and QCN-Switch's CNMs per second and P(t).
func timeCharts(phase string, pts []Point) []namedChart {
	var out []namedChart
	name := safeName(phase)
	if c, ok := controlLoopChart(phase, pts); ok {
		out = append(out, namedChart{"control-loop-" + name, c})
	}
	if c, ok := timeByLoadChart(phase+": mean inter-switch queue backlog", "bytes", pts, func(p *Point) ([]float64, []float64) {
		if p.Timeline == nil {
			return nil, nil
		}
		return p.Timeline.T, p.Timeline.MeanBacklogBytes
	}); ok {
		out = append(out, namedChart{"mean-backlog-" + name, c})
	}
	if c, ok := timeByLoadChart(phase+": CNMs sent per second", "CNMs/s", pts, func(p *Point) ([]float64, []float64) {
		if p.QCN == nil || p.QCN.Series == nil {
			return nil, nil
		}
		return p.QCN.Series.T, p.QCN.Series.CNMsPerS
	}); ok {
		out = append(out, namedChart{"cnms-" + name, c})
	}
	if c, ok := timeByLoadChart(phase+": traffic engine's mean lateness (frames due in each bin)", "ms", pts, func(p *Point) ([]float64, []float64) {
		l := p.SendLateness
		if l.BinS <= 0 {
			return nil, nil
		}
		var t, y []float64
		for i, us := range l.BinsUS {
			if us >= 0 { // -1: nothing was due
				// At the bin's end, as the timeline's bins.
				t = append(t, p.WarmupS+min(float64(i+1)*l.BinS, p.DurationS))
				y = append(y, us/1e3)
			}
		}
		return t, y
	}); ok {
		out = append(out, namedChart{"lateness-" + name, c})
	}
	if c, ok := pChart(phase, pts); ok {
		out = append(out, namedChart{"p-" + name, c})
	}
	if c, ok := hostLoadChart(phase, pts); ok {
		out = append(out, namedChart{"host-load-" + name, c})
	}
	if c, ok := latencyCDFChart(phase, pts); ok {
		out = append(out, namedChart{"latency-cdf-" + name, c})
	}
	return out
}

// latencyCDFChart is each load's latency distribution (the share of
// frames at or below each latency, µs on a log axis): the tail the mean,
// p50 and p99 leave out.
func latencyCDFChart(phase string, pts []Point) (plot.Chart, bool) {
	c := plot.Chart{Title: phase + ": latency distribution", XLabel: "latency (µs)", YLabel: "fraction of frames at or below", LogX: true}
	for i := range pts {
		if h := pts[i].LatencyHistogram; h != nil {
			us, frac := h.CDF()
			var sp []plot.Point
			for j := range us {
				if us[j] > 0 { // a log axis: a 0 ns latency has no place on it
					sp = append(sp, plot.Point{X: us[j], Y: frac[j]})
				}
			}
			if len(sp) > 0 {
				c.Series = append(c.Series, plot.Series{Name: fmt.Sprintf("load %g", pts[i].Load), Points: sp, NoMarkers: true})
			}
		}
	}
	return c, hasData(c)
}
