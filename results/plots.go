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
		if c, ok := injectedChart(name, pts); ok {
			out = append(out, namedChart{"injected-" + safeName(name), c})
		}
		if c, ok := backlogChart(name, pts); ok {
			out = append(out, namedChart{"backlog-" + safeName(name), c})
		}
	}
	return out
}

func sortedByOffered(pts []Point) []Point {
	out := append([]Point(nil), pts...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].OfferedLoad < out[j].OfferedLoad })
	return out
}

// injectedChart is seed 004 Fig. 8: the throughput each switch of one
// group injected, by switch index, one line per load. The group shown is
// the lowest-numbered one measured (group 0 is the one an ADV pattern
// loads hardest).
func injectedChart(phase string, pts []Point) (plot.Chart, bool) {
	group := math.MaxInt
	for _, p := range pts {
		for _, s := range p.PerSwitchInjected {
			if s.Group >= 0 && s.Group < group {
				group = s.Group
			}
		}
	}
	if group == math.MaxInt {
		return plot.Chart{}, false
	}
	c := plot.Chart{Title: fmt.Sprintf("%s: injected throughput per switch of group %d", phase, group),
		XLabel: "switch index in group", YLabel: "injected load (fraction of the switch's host links)"}
	for _, p := range pts {
		var sp []plot.Point
		for _, s := range p.PerSwitchInjected {
			if s.Group == group {
				sp = append(sp, plot.Point{X: float64(s.Index), Y: s.Fraction})
			}
		}
		sort.Slice(sp, func(i, j int) bool { return sp[i].X < sp[j].X })
		if len(sp) > 0 {
			c.Series = append(c.Series, plot.Series{Name: fmt.Sprintf("load %g", p.Load), Points: sp})
		}
	}
	return c, len(c.Series) > 0
}

// backlogChart shows the queue backlog over time of the hottest ports at
// the highest load that has samples.
func backlogChart(phase string, pts []Point) (plot.Chart, bool) {
	var best *Point
	for i := range pts {
		if len(pts[i].Backlog) > 0 && (best == nil || pts[i].Load >= best.Load) {
			best = &pts[i]
		}
	}
	if best == nil {
		return plot.Chart{}, false
	}
	series := append([]BacklogSeries(nil), best.Backlog...)
	sort.SliceStable(series, func(i, j int) bool { return meanU(series[i].Bytes) > meanU(series[j].Bytes) })
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

func meanU(v []uint64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}
