package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Metric is a measured quantity of a traffic phase that an expectation
// can test.
type Metric string

// Metrics. Accepted and offered are normalized loads (fractions of the
// host link rate, like Traffic.Loads); loss and nonminimal_share are
// fractions of frames (0..1); latencies are durations.
const (
	Accepted        Metric = "accepted"
	Offered         Metric = "offered"
	Loss            Metric = "loss"
	MeanLatency     Metric = "mean_latency"
	P50Latency      Metric = "p50_latency"
	P99Latency      Metric = "p99_latency"
	NonminimalShare Metric = "nonminimal_share"
	// DeliveredSpread and DeliveredMinRatio measure how evenly the
	// switches of the first group got their hosts' traffic delivered
	// (seed 004 Fig. 8): the largest relative deviation of a switch from
	// the group's mean delivered load, and the least switch's delivered
	// load over the mean of the group's other switches.
	DeliveredSpread   Metric = "delivered_spread"
	DeliveredMinRatio Metric = "delivered_min_ratio"
)

var metrics = []Metric{Accepted, Offered, Loss, MeanLatency, P50Latency, P99Latency, NonminimalShare, DeliveredSpread, DeliveredMinRatio}

// dimension groups metrics that can be compared with each other.
func (m Metric) dimension() string {
	switch m {
	case Accepted, Offered:
		return "load"
	case Loss, NonminimalShare, DeliveredSpread, DeliveredMinRatio:
		return "fraction"
	case MeanLatency, P50Latency, P99Latency:
		return "latency"
	}
	return ""
}

// IsLatency reports whether the metric is a duration.
func (m Metric) IsLatency() bool { return m.dimension() == "latency" }

// Op is a comparison operator.
type Op string

// Operators of expectations.
const (
	Less         Op = "<"
	LessEqual    Op = "<="
	Greater      Op = ">"
	GreaterEqual Op = ">="
	Equal        Op = "=="
	NotEqual     Op = "!="
)

// Expectation is one parsed `<metric> <op> <expr>` line. The right-hand
// side is Value, or Value * Of when Of is set. For latency metrics Value
// is in seconds (written as a duration, e.g. 5ms, when Of is empty).
type Expectation struct {
	Metric Metric
	Op     Op
	Value  float64
	Of     Metric // "" unless the right-hand side is `<number> * <metric>`
	Text   string // as written in the file
}

// String renders the expectation canonically.
func (e Expectation) String() string {
	rhs := strconv.FormatFloat(e.Value, 'g', -1, 64)
	switch {
	case e.Of != "":
		rhs += " * " + string(e.Of)
	case e.Metric.IsLatency():
		rhs = FormatDuration(time.Duration(e.Value * float64(time.Second)))
	}
	return fmt.Sprintf("%s %s %s", e.Metric, e.Op, rhs)
}

// Holds evaluates the expectation: lhs is the measured metric, of is the
// measured value of Of (ignored when Of is empty). Latencies in seconds.
func (e Expectation) Holds(lhs, of float64) bool {
	rhs := e.Value
	if e.Of != "" {
		rhs *= of
	}
	switch e.Op {
	case Less:
		return lhs < rhs
	case LessEqual:
		return lhs <= rhs
	case Greater:
		return lhs > rhs
	case GreaterEqual:
		return lhs >= rhs
	case Equal:
		return lhs == rhs
	case NotEqual:
		return lhs != rhs
	}
	return false
}

// ParseExpectation reads `<metric> <op> <expr>`, where expr is a number
// (a fraction may be written as a percentage, "1%"), a duration for
// latency metrics, or `<number> * <metric>` of the same dimension.
func ParseExpectation(s string) (Expectation, error) {
	e := Expectation{Text: s}
	rest := strings.TrimSpace(s)
	i := 0
	for i < len(rest) && (rest[i] == '_' || rest[i] >= 'a' && rest[i] <= 'z' || rest[i] >= '0' && rest[i] <= '9') {
		i++
	}
	name := rest[:i]
	m, ok := lookupMetric(name)
	if !ok {
		return e, fmt.Errorf("%q: unknown metric %q (want %s)", s, name, metricList())
	}
	e.Metric = m
	rest = strings.TrimSpace(rest[i:])
	for _, op := range []Op{LessEqual, GreaterEqual, Equal, NotEqual, Less, Greater} {
		if strings.HasPrefix(rest, string(op)) {
			e.Op = op
			rest = strings.TrimSpace(rest[len(op):])
			break
		}
	}
	if e.Op == "" {
		return e, fmt.Errorf("%q: want an operator (<, <=, >, >=, ==, !=) after %s", s, m)
	}
	if rest == "" {
		return e, fmt.Errorf("%q: nothing to compare %s with", s, m)
	}
	if num, of, ok := strings.Cut(rest, "*"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || !finite(v) {
			return e, fmt.Errorf("%q: %q is not a number", s, strings.TrimSpace(num))
		}
		om, ok := lookupMetric(strings.TrimSpace(of))
		if !ok {
			return e, fmt.Errorf("%q: unknown metric %q (want %s)", s, strings.TrimSpace(of), metricList())
		}
		if om.dimension() != m.dimension() {
			return e, fmt.Errorf("%q: cannot compare %s (a %s) with %s (a %s)", s, m, m.dimension(), om, om.dimension())
		}
		e.Value, e.Of = v, om
		return e, nil
	}
	if m.IsLatency() {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return e, fmt.Errorf("%q: %s needs a duration such as 5ms, got %q", s, m, rest)
		}
		e.Value = d.Seconds()
		return e, nil
	}
	num, pct := strings.CutSuffix(rest, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || !finite(v) {
		return e, fmt.Errorf("%q: %q is not a number", s, rest)
	}
	if pct {
		v /= 100
	}
	e.Value = v
	return e, nil
}

func lookupMetric(s string) (Metric, bool) {
	for _, m := range metrics {
		if string(m) == s {
			return m, true
		}
	}
	return "", false
}

func metricList() string {
	s := make([]string, len(metrics))
	for i, m := range metrics {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
