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
	// The phase's probes (probes:): how many were lost in all, by the
	// pair that lost most, how many pairs lost any; the longest outage
	// (from a pair's first lost probe to its next answered one); the
	// probes' median one-way latency; and link_recovery, the longest time
	// from a link's on (or rate) event to the next probe answered between
	// a pair that lost probes then (seed 002 Table 6's overhead), and
	// link_recovery_error the largest difference between an on or rate
	// event's recovery and its hold (Table 6 emulated: the first answered
	// probe comes the profile time later, to a probe interval).
	ProbesLost       Metric = "probes_lost"
	ProbesLostMax    Metric = "probes_lost_max"
	ProbePairsLosing Metric = "probe_pairs_losing"
	LongestOutage    Metric = "longest_outage"
	ProbeP50Latency  Metric = "probe_p50_latency"
	LinkRecovery     Metric = "link_recovery"
	LinkRecoveryErr  Metric = "link_recovery_error"
	// SwitchPower is the point's mean switch power in watts, and
	// PowerSaving its saving over every port on (1 - SwitchPower/all on),
	// as the scenario's switch_profile.
	SwitchPower Metric = "switch_power"
	PowerSaving Metric = "power_saving"
	// UnknownFloods counts the unicast frames switches flooded in their
	// VLAN for not having learned the destination (routing.vlan.macs
	// learn), summed over switches: seed 002's learning problem.
	UnknownFloods Metric = "unknown_floods"
	// SOutGlobalP and ToSOutLocalP are QCN-Switch's probabilities of
	// routing minimally (percent) at seed 004's S_out under ADV+N: its
	// global port towards the target group, and the mean of the other
	// first-group switches' local ports towards it (spec check A.6-14).
	SOutGlobalP  Metric = "s_out_global_p"
	ToSOutLocalP Metric = "to_s_out_local_p"
	// FlowAcceptedMin and FlowAcceptedMax are the least and the most
	// accepted load (a fraction of the host link rate) of any pair of a
	// flows pattern over the measured window.
	FlowAcceptedMin Metric = "flow_accepted_min"
	FlowAcceptedMax Metric = "flow_accepted_max"
	// FlowP50LatencyRatio is the largest pair's median one-way latency
	// over the smallest's (1 when they agree): pairs measured together,
	// through one switch at one time, compared with each other.
	FlowP50LatencyRatio Metric = "flow_p50_latency_ratio"
	// BinAcceptedMin is the least load (a fraction of its link's rate) any
	// receiving host (1% of its link's rate on average, more than probes)
	// was delivered in one bin of the point's timeline
	// (100 ms with probes or link events), over the bins between its first
	// and its last that delivered anything (those two are partial): a
	// path change's interruption shows as a dip (seed 002 Table 7's
	// "bandwidth ... at every 100 mseconds").
	BinAcceptedMin Metric = "bin_accepted_min"
	// FlowAcceptedMean is the mean accepted load of a flows pattern's
	// pairs (seed 003's "mean throughput/flow").
	FlowAcceptedMean Metric = "flow_accepted_mean"
	// HotQueueQeq is the time-average backlog of the fabric's hottest
	// inter-switch queue over the measured window, in units of the congestion points'
	// Qeq (seed 003: "hot queue is controlled around equilibrium").
	HotQueueQeq Metric = "hot_queue_qeq"
	// HotQueueP50Qeq is the median backlog of that same queue over the
	// window, in Qeq: under snoop-ar the queue outside the reset spikes,
	// which are short beside the expiry (seed 003: "with AR, hot spot
	// disappears"; spec check 6, below Qeq/2 except within spikes).
	HotQueueP50Qeq Metric = "hot_queue_p50_qeq"
	// ARResetPeriod is snoop-ar's median time between reset events (its
	// remote entries expiring, their destinations moving back) over the
	// dilated expiry, ARResetSpread the longest a reset took from its
	// first move to its last over the expiry, and ARResetLeftMax the most
	// destinations a reset left away from their port, of those a
	// notification had moved (spec check 4: period = expiry + at most
	// 20%, all flows moving back together: 0).
	ARResetPeriod  Metric = "ar_reset_period"
	ARResetSpread  Metric = "ar_reset_spread"
	ARResetLeftMax Metric = "ar_reset_left_max"
)

var metrics = []Metric{Accepted, Offered, Loss, MeanLatency, P50Latency, P99Latency, NonminimalShare, DeliveredSpread, DeliveredMinRatio,
	ProbesLost, ProbesLostMax, ProbePairsLosing, LongestOutage, ProbeP50Latency, LinkRecovery, LinkRecoveryErr, SwitchPower, PowerSaving, UnknownFloods, SOutGlobalP, ToSOutLocalP,
	FlowAcceptedMin, FlowAcceptedMax, FlowP50LatencyRatio, BinAcceptedMin, FlowAcceptedMean, HotQueueQeq,
	HotQueueP50Qeq, ARResetPeriod, ARResetSpread, ARResetLeftMax}

// Dimension groups metrics that can be compared with each other: load,
// fraction, latency, time, count or power ("" for an unknown metric).
func (m Metric) Dimension() string {
	switch m {
	case Accepted, Offered, FlowAcceptedMin, FlowAcceptedMax, BinAcceptedMin, FlowAcceptedMean:
		return "load"
	case Loss, NonminimalShare, DeliveredSpread, DeliveredMinRatio, PowerSaving, FlowP50LatencyRatio, HotQueueQeq, HotQueueP50Qeq,
		ARResetPeriod, ARResetSpread:
		return "fraction"
	case SwitchPower:
		return "power"
	case SOutGlobalP, ToSOutLocalP:
		return "percent"
	case MeanLatency, P50Latency, P99Latency, ProbeP50Latency:
		return "latency"
	case LongestOutage, LinkRecovery, LinkRecoveryErr:
		return "time"
	case ProbesLost, ProbesLostMax, ProbePairsLosing, UnknownFloods, ARResetLeftMax:
		return "count"
	}
	return ""
}

// IsLatency reports whether the metric is a frame's latency (reported in
// µs).
func (m Metric) IsLatency() bool { return m.Dimension() == "latency" }

// IsDuration reports whether the metric is a time, written as a duration
// (latencies, and the probes' outages and recoveries, reported in s).
func (m Metric) IsDuration() bool { return m.IsLatency() || m.Dimension() == "time" }

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
	// OfPhase, with Of, names another traffic phase of the run whose
	// point at the same load gives Of (`<number> * <phase>.<metric>`):
	// two phases of one lab compared, where two labs differ by more than
	// the effect measured.
	OfPhase string
	Text    string // as written in the file
}

// String renders the expectation canonically.
func (e Expectation) String() string {
	rhs := strconv.FormatFloat(e.Value, 'g', -1, 64)
	switch {
	case e.Of != "" && e.OfPhase != "":
		rhs += " * " + e.OfPhase + "." + string(e.Of)
	case e.Of != "":
		rhs += " * " + string(e.Of)
	case e.Metric.IsDuration():
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
// latency metrics, or `<number> * <metric>` of the same dimension, or
// `<number> * <phase>.<metric>` (another phase's point at the same load).
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
		of = strings.TrimSpace(of)
		if ph, m, ok := strings.Cut(of, "."); ok {
			if ph == "" {
				return e, fmt.Errorf("%q: no phase before .%s", s, m)
			}
			e.OfPhase, of = ph, m
		}
		om, ok := lookupMetric(of)
		if !ok {
			return e, fmt.Errorf("%q: unknown metric %q (want %s)", s, of, metricList())
		}
		if om.Dimension() != m.Dimension() {
			return e, fmt.Errorf("%q: cannot compare %s (a %s) with %s (a %s)", s, m, m.Dimension(), om, om.Dimension())
		}
		e.Value, e.Of = v, om
		return e, nil
	}
	if m.IsDuration() {
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
