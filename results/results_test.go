package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/traffic"
)

func samplePoints(phase, routing string) []Point {
	var pts []Point
	for i, l := range []float64{0.2, 0.5, 0.8} {
		acc := l
		if l > 0.6 {
			acc = 0.55
		}
		p := Point{Name: phase, Pattern: "uniform", Routing: routing, Load: l, OfferedLoad: l * 0.99, AcceptedLoad: acc,
			Loss: max(0, 1-acc/(l*0.99)), LatencyUS: Latency{Mean: 50 * float64(i+1), P50: 40 * float64(i+1), P99: 300 * float64(i+1), Max: 900},
			NonminimalShare: 0.1 * float64(i), Seed: 1, FrameBytes: 1000, DurationS: 4, Sent: 1000 * uint64(i+1), Received: 900 * uint64(i+1),
			Duplicates: 0, Reordered: uint64(i), CPUBusy: 0.4, RulePackets: map[string]uint64{"routing": 10, "valiant": 2},
			Drops: Drops{Queue: 7, Datapath: 1}}
		p.DeliveredBySourceSwitch = map[string]float64{}
		for sw := 0; sw < 4; sw++ {
			name := "g0s" + string(rune('0'+sw))
			p.PerSwitchInjected = append(p.PerSwitchInjected, SwitchInjected{Switch: name, Group: 0, Index: sw, Bps: 1e6, Fraction: l / float64(sw+1)})
			p.DeliveredBySourceSwitch[name] = acc / float64(sw+1)
		}
		p.Backlog = []BacklogSeries{{Port: "g0s0:5", T: []float64{0, 0.01, 0.02}, Bytes: []uint64{0, 3000, 1000}, Frames: []uint64{0, 3, 1}}}
		p.SendLateness = Lateness{MeanUS: 300, SlotUS: 400, BinS: 0.1, BinsUS: []float64{200, 900, 100}}
		p.Timeline = &Timeline{BinS: 0.5, T: []float64{0.5, 1, 1.5}, AcceptedLoad: []float64{acc, acc, acc * 0.9},
			MeanBacklogBytes: []float64{100, 2000, 4000}, NonminimalShare: []float64{0.1, 0.3, 0.6}, InjectedFrames: []uint64{10, 20, 20}}
		p.QCN = &QCN{Samples: 10, Generated: 3, PMin: ptr(40.0), Series: &QCNSeries{T: p.Timeline.T, CNMsPerS: []float64{0, 4, 8}, Ports: 20,
			PortsBelow50: []int{0, 2, 5}, PMeanLocal: []float64{100, 90, 70}, PMeanGlobal: []float64{100, 100, 95}},
			PTraces: []PTrace{{Port: "g0s0:3", Class: "local", T: []float64{0, 0.1, 0.2}, P: []float64{100, 62.5, 40}}}}
		pts = append(pts, p)
	}
	return pts
}

func sampleMetrics(routing string) *Metrics {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return &Metrics{
		Run: Run{Name: "df-" + routing, Scenario: "dragonfly-small", Lab: "hres", Topology: "dragonfly p=2 a=4 h=2",
			Hosts: 72, Switches: 36, Routing: routing, HostLinkRate: 100e6, Seeds: []int64{1},
			Start: start, End: start.Add(90 * time.Second), Version: "test", Machine: map[string]string{"datapath": "netdev"}},
		Phases:   samplePoints("un", routing),
		Fidelity: EvaluateFidelity([]FidelityInput{{Phase: "un", Load: 0.2, CPUBusy: 0.3, Sent: 100}}),
	}
}

// Scripts (bench/*.py) read these names: renaming one breaks them.
func TestSchemaNames(t *testing.T) {
	b, err := json.Marshal(sampleMetrics("minimal"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	phases, ok := doc["phases"].([]any)
	if !ok || len(phases) != 3 {
		t.Fatalf("phases: %v", doc["phases"])
	}
	p := phases[0].(map[string]any)
	for _, k := range []string{"name", "pattern", "routing", "offered_load", "accepted_load", "loss", "latency_us", "nonminimal_share"} {
		if _, ok := p[k]; !ok {
			t.Errorf("phases[0] has no %q: %v", k, p)
		}
	}
	lat := p["latency_us"].(map[string]any)
	for _, k := range []string{"mean", "p50", "p99"} {
		if _, ok := lat[k].(float64); !ok {
			t.Errorf("latency_us has no number %q", k)
		}
	}
	fid := doc["fidelity"].(map[string]any)
	if _, ok := fid["ok"].(bool); !ok {
		t.Errorf("fidelity.ok missing: %v", fid)
	}
	if _, ok := fid["reasons"].([]any); !ok {
		t.Errorf("fidelity.reasons missing: %v", fid)
	}
}

func mustExp(t *testing.T, s string) scenario.Expectation {
	t.Helper()
	e, err := scenario.ParseExpectation(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEvaluate(t *testing.T) {
	pts := []Point{
		{Name: "un", Load: 0.2, OfferedLoad: 0.2, AcceptedLoad: 0.2, Loss: 0, Received: 10, LatencyUS: Latency{P99: 900}},
		{Name: "un", Load: 0.8, OfferedLoad: 0.8, AcceptedLoad: 0.7, Loss: 0.125, Received: 10, LatencyUS: Latency{P99: 6000}},
		{Name: "un", Load: 0.9, OfferedLoad: 0.9, AcceptedLoad: 0, Loss: 1, Received: 0},
		{Name: "other", Load: 0.2, AcceptedLoad: 0},
	}
	exps := []scenario.Expectation{mustExp(t, "accepted >= 0.95 * offered"), mustExp(t, "loss == 0"), mustExp(t, "p99_latency < 5ms")}
	res := Evaluate("un", exps, pts)
	if len(res) != 9 {
		t.Fatalf("%d results, want 3 expectations x 3 loads", len(res))
	}
	want := []bool{true, false, false, true, false, false, true, false, false}
	for i, r := range res {
		if r.Phase != "un" {
			t.Errorf("result %d is of phase %q", i, r.Phase)
		}
		if r.Pass != want[i] {
			t.Errorf("%s at load %g: pass=%v, want %v (value %g bound %g)", r.Expect, r.Load, r.Pass, want[i], r.Value, r.Bound)
		}
	}
	// Latency results are in µs; the bound of 5ms is 5000 µs.
	if r := res[6]; r.Value != 900 || r.Bound != 5000 {
		t.Errorf("p99 at 0.2: value %g bound %g, want 900 and 5000", r.Value, r.Bound)
	}
	if r := res[8]; r.Note == "" {
		t.Errorf("p99 with nothing received should say why it failed")
	}
	if r := res[1]; r.Bound != 0.95*0.8 {
		t.Errorf("accepted bound at 0.8 = %g, want %g", r.Bound, 0.95*0.8)
	}
	m := Metrics{Expectations: res}
	if len(m.Failed()) != 6 {
		t.Errorf("Failed() = %d, want 6", len(m.Failed()))
	}
	sc, err := scenario.Parse("x.yaml", []byte("name: x\ntopology: {kind: dragonfly, p: 1, a: 2, h: 1}\nphases:\n  - traffic: {pattern: uniform, loads: [0.2, 0.8]}\n    name: un\n    expect: [\"loss == 0\"]\n"))
	if err != nil {
		t.Skipf("scenario syntax differs: %v", err)
	}
	if got := EvaluateScenario(sc, pts); len(got) != 3 || got[0].Pass != true || got[1].Pass {
		t.Errorf("EvaluateScenario: %+v", got)
	}
}

func TestFidelity(t *testing.T) {
	// Lateness: DF(2,3,2) at 20 Mbit/s, faithful, 0.19 ms late on average
	// with 0.4 ms slots.
	ok := EvaluateFidelity([]FidelityInput{{Phase: "p", Load: 0.5, CPUBusy: 0.5, Sent: 100000, Drops: Drops{Queue: 5000, Datapath: 10},
		Lateness: Lateness{Late: 20490, MeanUS: 190, MaxUS: 16700, SlotUS: 400},
		Busiest:  ThreadCPU{Process: "vswitchd 0", Thread: "ovs-vswitchd", Cores: 0.6},
		Links:    []LinkRate{{Port: "a", Busy: 0.9, AchievedBps: 95e6, RateBps: 100e6}, {Port: "b", Busy: 0.1, AchievedBps: 1e6, RateBps: 100e6}},
		Leaked:   []QueueLeak{{Port: "A:2", Bytes: 1000, Limit: 256000}}}, // a frame the kernel dropped past tbf
		// vlan-tagging's idle phase: 100 Mbit/s at load 0.1, the sender's
		// timer 83 µs late, just over a slot and under the floor.
		{Phase: "idle", Load: 0.1, CPUBusy: 0.05, Sent: 5000, Lateness: Lateness{Late: 1200, MeanUS: 83, MaxUS: 900, SlotUS: 80}}})
	if !ok.OK || len(ok.Reasons) != 0 {
		t.Errorf("healthy run judged untrustworthy: %+v", ok)
	}
	for name, in := range map[string]FidelityInput{
		"cpu":      {CPUBusy: 0.97, Sent: 100},
		"drops":    {CPUBusy: 0.1, Sent: 1000, Drops: Drops{Kernel: 5}},
		"unshaped": {CPUBusy: 0.1, Sent: 100, Unshaped: []string{"g0s0:5"}},
		"rate":     {CPUBusy: 0.1, Sent: 100, Links: []LinkRate{{Port: "x", Busy: 0.8, AchievedBps: 40e6, RateBps: 100e6}}},
		// The machine half idle, one vswitchd thread saturated: only the
		// per-thread check sees it.
		"thread": {CPUBusy: 0.55, Sent: 100, Busiest: ThreadCPU{Process: "vswitchd 0", Thread: "ovs-vswitchd", Cores: 0.97}},
		// DF(4,8,4) at 1 Mbit/s, load 0.1: 18,219 of 42,000 offered frames
		// sent, none lost — the engine, not the fabric, fell behind.
		"unsent": {CPUBusy: 0.5, Sent: 18219, Offered: 42000, Unsent: 42000 - 18219},
		// DF(2,3,2) conditional on Open vSwitch at 1 Mbit/s, load 0.5: the
		// engine stalled at the point's start, then sent its backlog at
		// once, and the hosts' queues refused most of it.
		"refused late": {CPUBusy: 0.2, Sent: 235, Offered: 5229, RefusedLate: 4980},
		// DF(4,8,4) at 1 Mbit/s, uniform 0.4: the engine fell 250 ms
		// behind in the point's first second and caught up before its end,
		// so nearly nothing was unsent (100 of 316,674 frames).
		"lateness": {CPUBusy: 0.79, Sent: 316574, Offered: 316674, Unsent: 100, Lateness: Lateness{Late: 89142, MeanUS: 27950, MaxUS: 179249, SlotUS: 8000}},
		// 100 Mbit/s: 0.3 ms late on average is past the timer's floor.
		"lateness, fast link": {CPUBusy: 0.5, Sent: 1000, Offered: 1000, Lateness: Lateness{Late: 900, MeanUS: 300, MaxUS: 2000, SlotUS: 80}},
		"deleted link":        {CPUBusy: 0.1, Sent: 100, Missing: []string{"g0s0:3 -> g0s1:3"}},
		// A batch that numbered two frames of a host alike made its sink
		// count 22% duplicates, and nothing else failed.
		"duplicates": {CPUBusy: 0.5, Sent: 303156, Duplicates: 67457},
		// Seed 003's topology 1 at 355 s: the CNMs switches forwarded had
		// filled a counted queue (78 bytes each, never counted out).
		"queue counts": {CPUBusy: 0.25, Sent: 100, Leaked: []QueueLeak{{Port: "S8:1", Bytes: 2000, Limit: 256000}, {Port: "S7:4", Bytes: 262080, Limit: 262144}}},
	} {
		in.Phase, in.Load = "p", 0.9
		f := EvaluateFidelity([]FidelityInput{in})
		if f.OK || len(f.Reasons) != 1 {
			t.Errorf("%s: %+v, want one failed reason", name, f)
		}
	}
}

func TestCSVRoundTrip(t *testing.T) {
	pts := samplePoints("un", "valiant")
	pts[0].Seed = 1<<62 + 3
	var buf bytes.Buffer
	if err := WriteCSV(&buf, pts); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pts {
		pts[i].RulePackets, pts[i].PerSwitchInjected, pts[i].DeliveredBySourceSwitch, pts[i].Backlog = nil, nil, nil, nil
		pts[i].Timeline, pts[i].QCN, pts[i].SendLateness = nil, nil, Lateness{}
	}
	if !reflect.DeepEqual(got, pts) {
		t.Errorf("CSV round trip:\n got %+v\nwant %+v", got, pts)
	}
}

// Seed 004's check 13: the delivered throughput of the first group's
// switches, as their spread around the mean and the least switch over the
// mean of the others.
func TestDeliveredMetrics(t *testing.T) {
	p := Point{DeliveredBySourceSwitch: map[string]float64{"g0s0": 0.2, "g0s1": 0.4, "g0s2": 0.4, "g0s3": 0.4, "g1s0": 0.01}}
	for i, n := range []string{"g0s0", "g0s1", "g0s2", "g0s3"} {
		p.PerSwitchInjected = append(p.PerSwitchInjected, SwitchInjected{Switch: n, Group: 0, Index: i})
	}
	p.PerSwitchInjected = append(p.PerSwitchInjected, SwitchInjected{Switch: "g1s0", Group: 1})
	// Mean 0.35: g0s0 is 0.2/0.35 - 1 = -0.43 off; the others' mean is 0.4.
	for m, want := range map[scenario.Metric]float64{scenario.DeliveredSpread: 0.15 / 0.35, scenario.DeliveredMinRatio: 0.5} {
		v, ok := MetricValue(&p, m)
		if !ok || v < want-1e-12 || v > want+1e-12 {
			t.Errorf("%s = %g (%v), want %g", m, v, ok, want)
		}
	}
	r := Evaluate("", []scenario.Expectation{mustExp(t, "delivered_min_ratio <= 0.8"), mustExp(t, "delivered_spread <= 10%")}, []Point{p})
	if len(r) != 2 || !r[0].Pass || r[1].Pass {
		t.Errorf("check 13 on an unfair group: %+v", r)
	}
	if _, ok := MetricValue(&Point{}, scenario.DeliveredSpread); ok {
		t.Error("a point without delivered loads has a spread")
	}
}

func TestWriteLoadRender(t *testing.T) {
	dir := t.TempDir()
	m := sampleMetrics("valiant")
	m.Expectations = Evaluate("un", []scenario.Expectation{mustExp(t, "loss == 0")}, m.Phases)
	files, err := Write(dir, m, Artifacts{Scenario: []byte("name: x\n"), Rules: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"metrics.json", "summary.md", "scenario.yaml", "rules.json", "phase-un.csv",
		"plots/accepted-vs-offered.png", "plots/accepted-vs-offered.svg", "plots/latency-vs-offered.png",
		"plots/nonminimal-vs-offered.svg", "plots/injected-un.png", "plots/delivered-un.png", "plots/backlog-un.png",
		"plots/control-loop-un.png", "plots/mean-backlog-un.svg", "plots/cnms-un.png", "plots/p-un.png", "plots/lateness-un.png"} {
		if !contains(files, f) {
			t.Errorf("run directory lacks %s (has %v)", f, files)
		}
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Errorf("Load differs from what was written:\n got %+v\nwant %+v", back, m)
	}
	sum1, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dragonfly p=2 a=4 h=2", "### un", "`loss == 0`", "**FAIL**", "PASS", "plots/backlog-un.png", "trustworthy",
		"## QCN-Switch", "| un | 0.5 | 10 | 3 |", "plots/control-loop-un.png"} {
		if !strings.Contains(string(sum1), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum1)
		}
	}
	// Remove everything derived; Render must bring back the same summary.
	for _, f := range files {
		if f != "metrics.json" && f != "scenario.yaml" && f != "rules.json" {
			os.Remove(filepath.Join(dir, f))
		}
	}
	files2, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, files2) {
		t.Errorf("Render made %v, Write made %v", files2, files)
	}
	sum2, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sum1, sum2) {
		t.Errorf("re-rendered summary differs:\n%s\n---\n%s", sum1, sum2)
	}
	if _, err := Render(t.TempDir()); err == nil {
		t.Error("Render of a directory without metrics.json succeeded")
	}
}

func TestCompare(t *testing.T) {
	var dirs []string
	for _, r := range []string{"minimal", "valiant"} {
		d := t.TempDir()
		if _, err := Write(d, sampleMetrics(r), Artifacts{}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	out := t.TempDir()
	c, err := Compare(dirs, out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Series, []string{"minimal", "valiant"}) {
		t.Errorf("series %v, want one per run named by routing", c.Series)
	}
	for _, f := range []string{"plots/compare-accepted-vs-offered.png", "plots/compare-latency-vs-offered.svg",
		"plots/compare-p99-latency-vs-offered.png", "plots/compare-nonminimal-vs-offered.png",
		"plots/compare-delivered-load-0.5.png", "plots/compare-delivered-load-0.8.svg", "compare.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("compare did not write %s: %v", f, err)
		}
	}
	// Two runs with the same routing fall back to their run names.
	d2 := t.TempDir()
	m := sampleMetrics("minimal")
	m.Run.Name = "second"
	if _, err := Write(d2, m, Artifacts{}); err != nil {
		t.Fatal(err)
	}
	c, err = Compare([]string{dirs[0], d2}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c.Series[0] == c.Series[1] {
		t.Errorf("series names clash: %v", c.Series)
	}
}

func TestNewDistributionNearestRank(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // unsorted on purpose
	}
	d := NewDistribution(xs)
	if d.N != 100 || d.P50 != 50 || d.P90 != 90 || d.Max != 100 {
		t.Errorf("distribution of 1..100: %+v, want n 100, p50 50, p90 90, max 100", d)
	}
	if e := NewDistribution(nil); e.N != 0 || e.Max != 0 {
		t.Errorf("empty sample: %+v", e)
	}
}

// The probe, link, power and flow metrics read the point's probes, link
// events, power and flows; without them they are not measured.
func TestLinkMetrics(t *testing.T) {
	rec, rec2 := 3.25, 0.0
	p := &Point{
		Probes:     &traffic.ProbeResult{Lost: 30, MaxLost: 24, PairsLosing: 2, LongestOutageS: 1.2, P50US: 208, Received: 5},
		LinkEvents: []LinkEvent{{Op: "off"}, {Op: "on", HoldS: 3.2, RecoveryS: &rec}, {Op: "rate", RecoveryS: &rec2}},
		Power:      &Power{SwitchW: 73.9, AllOnW: 74.4, Saving: 1 - 73.9/74.4},
		Flows: []Flow{{AcceptedLoad: 0.4, Received: 9, LatencyUS: Latency{P50: 200}}, {AcceptedLoad: 0.95, Received: 9, LatencyUS: Latency{P50: 210}},
			{AcceptedLoad: 0.3, Received: 9, LatencyUS: Latency{P50: 205}}, {}},
	}
	for m, want := range map[scenario.Metric]float64{
		scenario.ProbesLost: 30, scenario.ProbesLostMax: 24, scenario.ProbePairsLosing: 2, scenario.LongestOutage: 1.2,
		scenario.ProbeP50Latency: 208e-6, scenario.LinkRecovery: 3.25, scenario.LinkRecoveryErr: 0.05,
		scenario.SwitchPower: 73.9, scenario.PowerSaving: 1 - 73.9/74.4,
		scenario.FlowAcceptedMin: 0, scenario.FlowAcceptedMax: 0.95, scenario.FlowP50LatencyRatio: 1.05,
	} {
		if v, ok := MetricValue(p, m); !ok || math.Abs(v-want) > 1e-9 {
			t.Errorf("%s = %v, %v; want %v", m, v, ok, want)
		}
		if _, ok := MetricValue(&Point{}, m); ok {
			t.Errorf("%s measured on a point without probes, link events, power or flows", m)
		}
	}
	e, err := scenario.ParseExpectation("link_recovery_error <= 100ms")
	if err != nil || e.Value != 0.1 {
		t.Fatalf("%+v, %v", e, err)
	}
	var r ExpectationResult
	check(&r, e, p, p)
	if !r.Pass || expValue(e.String(), r.Value) != "0.05 s" {
		t.Errorf("%+v (%s)", r, expValue(e.String(), r.Value))
	}
}

// An expectation naming another phase compares with that phase's point at
// the same load.
func TestExpectationOtherPhase(t *testing.T) {
	e, err := scenario.ParseExpectation("p50_latency <= 1.01 * fixed.p50_latency")
	if err != nil || e.OfPhase != "fixed" || e.Of != scenario.P50Latency || e.String() != "p50_latency <= 1.01 * fixed.p50_latency" {
		t.Fatalf("%+v, %v", e, err)
	}
	pts := []Point{
		{Name: "fixed", Load: 0.9, Received: 1, LatencyUS: Latency{P50: 261}},
		{Name: "dynamic", Load: 0.9, Received: 1, LatencyUS: Latency{P50: 263}},
		{Name: "dynamic", Load: 0.5, Received: 1, LatencyUS: Latency{P50: 200}},
	}
	rs := Evaluate("dynamic", []scenario.Expectation{e}, pts)
	if len(rs) != 2 || !rs[0].Pass || rs[0].Bound != 261*1.01 || rs[1].Pass || rs[1].Note == "" {
		t.Errorf("%+v", rs)
	}
}

// bin_accepted_min reads each receiving host's bins between its first
// and last that delivered anything (both partial): a dip in between is
// the value, the edges, silent hosts and hosts that got only probes are
// not.
func TestBinAcceptedMin(t *testing.T) {
	tl := &Timeline{BinS: 0.1, DeliveredByHost: map[string][]float64{
		"a": {0, 0.3, 0.9, 0.95, 0.5, 0.92, 0.2, 0},
		"b": {0, 0, 0},
		"c": {1.0, 0.99},
		"d": {0.0001, 0.0002, 0.0001, 0.0002}, // probes only
		"e": {0, 0, 0.7, 0},                   // one bin: no whole one
	}}
	p := &Point{Timeline: tl}
	if v, ok := MetricValue(p, scenario.BinAcceptedMin); !ok || v != 0.5 {
		t.Errorf("bin_accepted_min = %v, %v; want 0.5", v, ok)
	}
	if _, ok := MetricValue(&Point{}, scenario.BinAcceptedMin); ok {
		t.Error("a point without a timeline has a bin_accepted_min")
	}
	tl.DeliveredByHost = map[string][]float64{"c": {1.0, 0.99}}
	if _, ok := MetricValue(p, scenario.BinAcceptedMin); ok {
		t.Error("two bins, both edges: no whole bin, yet a value")
	}
}

func ptr[T any](v T) *T { return &v }

// Under a flows pattern the host-load figure is each flow's throughput
// over time, named by the flow; hosts that only received CNMs are left
// out. When a destination receives two flows it stays per host.
func TestFlowThroughputChart(t *testing.T) {
	tl := &Timeline{T: []float64{0.5, 1}, DeliveredByHost: map[string][]float64{
		"Bh0": {0.3, 0.4}, "Bh1": {0.5, 0.5}, "Ah0": {0.001, 0}, "Ah1": {0.001, 0}}}
	p := Point{Load: 1, Timeline: tl, Flows: []Flow{{Src: "Ah0", Dst: "Bh0"}, {Src: "Ah1", Dst: "Bh1"}}}
	c, ok := hostLoadChart("f", []Point{p})
	if !ok || len(c.Series) != 2 || c.Series[0].Name != "Ah0 → Bh0" || c.Series[1].Name != "Ah1 → Bh1" || !strings.Contains(c.Title, "each flow") {
		t.Errorf("flows chart: %q, %+v", c.Title, c.Series)
	}
	p.Flows = append(p.Flows, Flow{Src: "Ah1", Dst: "Bh0"})
	if c, _ := hostLoadChart("f", []Point{p}); len(c.Series) != 4 || strings.Contains(c.Title, "each flow") {
		t.Errorf("two flows to one host: %q, %d series, want one per host", c.Title, len(c.Series))
	}
}

// A point keeps its whole latency distribution: the CDF rises to 1 over
// the buckets' upper bounds, and the figure draws one line per load that
// has one, leaving a 0 ns bucket off its log axis.
func TestLatencyCDF(t *testing.T) {
	h := &LatencyHistogram{Unit: "ns", Buckets: [][2]uint64{{0, 1}, {1000, 2}, {5119, 6}, {1 << 20, 1}}}
	us, frac := h.CDF()
	want := []float64{0.1, 0.3, 0.9, 1}
	for i := range want {
		if math.Abs(frac[i]-want[i]) > 1e-12 || us[i] != float64(h.Buckets[i][0])/1e3 {
			t.Fatalf("CDF %v %v, want fractions %v", us, frac, want)
		}
	}
	c, ok := latencyCDFChart("p", []Point{{Load: 0.5, LatencyHistogram: h}, {Load: 0.7}})
	if !ok || len(c.Series) != 1 || len(c.Series[0].Points) != 3 || !c.LogX {
		t.Errorf("CDF chart %+v", c)
	}
	b, err := json.Marshal(Point{LatencyUS: Latency{P999: 12}, LatencyHistogram: h})
	if err != nil || !strings.Contains(string(b), `"latency_histogram":{"unit":"ns","buckets":[[0,1],[1000,2]`) || !strings.Contains(string(b), `"p999":12`) {
		t.Errorf("metrics.json names: %s", b)
	}
}

// A phase's series come out as tidy CSVs, one observation per row: every
// timeline bin of every metric and host, every backlog sample, every
// switch; a phase without series writes none.
func TestSeriesCSVs(t *testing.T) {
	pts := []Point{{Load: 0.5,
		Timeline: &Timeline{T: []float64{0.5, 1}, AcceptedLoad: []float64{0.4, 0.5}, MeanBacklogBytes: []float64{10, 20},
			DeliveredByHost: map[string][]float64{"h1": {0.1, 0.2}, "h0": {0.3, 0.4}}},
		Backlog:                 []BacklogSeries{{Port: "g0s0:3", Link: "g0s0:3 -> g0s1:3", T: []float64{0.1, 0.2, 0.3}, Bytes: []uint64{1, 2, 3}, Frames: []uint64{1, 1, 1}}},
		PerSwitchInjected:       []SwitchInjected{{Switch: "g0s0", Group: 0, Index: 0, Bps: 1e6, Fraction: 0.25}, {Switch: "g0s1", Index: 1, Bps: 2e6, Fraction: 0.5}},
		DeliveredBySourceSwitch: map[string]float64{"g0s0": 0.2},
	}}
	csvs, err := seriesCSVs("un", pts)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) [][]string {
		rows, err := csv.NewReader(bytes.NewReader(csvs[name])).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return rows
	}
	tl := read("timeline-un.csv")
	// 2 bins x (accepted, backlog, delivered:h0, delivered:h1).
	if len(tl) != 1+8 || strings.Join(tl[0], ",") != "load,t_s,metric,value" || strings.Join(tl[5], ",") != "0.5,0.5,delivered:h0,0.3" {
		t.Errorf("timeline rows %v", tl)
	}
	if bl := read("backlog-un.csv"); len(bl) != 4 || strings.Join(bl[3], ",") != "0.5,g0s0:3,g0s0:3 -> g0s1:3,0.3,3,1" {
		t.Errorf("backlog rows %v", bl)
	}
	if sw := read("switches-un.csv"); len(sw) != 3 || strings.Join(sw[1], ",") != "0.5,g0s0,0,0,1e+06,0.25,0.2" || sw[2][6] != "" {
		t.Errorf("switch rows %v", sw)
	}
	if csvs, _ := seriesCSVs("x", []Point{{Load: 1}}); len(csvs) != 0 {
		t.Errorf("a phase without series wrote %v", csvs)
	}
}

// A machine's underlay past MaxUnderlayShare of its speed fails the
// verdict, naming the machine; one whose speed is unknown is not judged.
func TestFidelityUnderlay(t *testing.T) {
	in := FidelityInput{Phase: "un", Load: 0.5, CPUBusy: -1, Sent: 100, Offered: 100}
	in.Underlay = []UnderlayLoad{{Machine: "a", Dev: "eth1", Bps: 5e9, SpeedBps: 10e9}, {Machine: "b", Dev: "eth1", Bps: 9.5e9, SpeedBps: 10e9}}
	f := EvaluateFidelity([]FidelityInput{in})
	if f.OK || len(f.Reasons) != 1 || !strings.Contains(f.Reasons[0], "machine b's underlay interface eth1") {
		t.Fatalf("underlay at 95%%: %+v", f)
	}
	in.Underlay[1].Bps = 8e9
	if f := EvaluateFidelity([]FidelityInput{in}); !f.OK {
		t.Fatalf("underlay at 80%%: %+v", f)
	}
	in.Underlay = []UnderlayLoad{{Machine: "a", Dev: "eth1", Bps: 5e9}}
	for _, c := range EvaluateFidelity([]FidelityInput{in}).Checks {
		if c.Check == "underlay" {
			t.Errorf("an underlay of unknown speed judged: %+v", c)
		}
	}
}
