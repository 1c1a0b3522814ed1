package results

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/scenario"
)

// Seed 003's reset spikes as snoop-3flow's t1-ar logs them (50 s dilated
// expiry): three flows sent away by remote notifications, back together
// at every expiry and away again; in one period a flow that no
// notification moved stays, and that is not a flow left behind.
func TestResets(t *testing.T) {
	t0 := time.Unix(1_795_980_422, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var moves []ARMove
	add := func(s float64, key, cause string) {
		sw, dst, _ := strings.Cut(key, " ")
		moves = append(moves, ARMove{Time: at(s), Switch: sw, Dst: dst, Cause: cause})
	}
	for _, k := range []string{"A1 B1h0", "A2 B2h0", "A3 B3h0"} {
		add(0.05, k, "remote")
	}
	for i := 1; i <= 7; i++ {
		base := 50.0*float64(i) + 0.01*float64(i)
		add(base, "A1 B1h0", "expiry")
		add(base+0.06, "A3 B3h0", "expiry")
		if i != 3 { // A2 stayed home in period 2: nothing to move back at reset 3
			add(base+0.03, "A2 B2h0", "expiry")
		}
		add(base+0.2, "A1 B1h0", "remote")
		add(base+0.25, "A3 B3h0", "remote")
		if i != 2 {
			add(base+0.3, "A2 B2h0", "remote")
		}
	}
	r := NewResets(50*time.Second, at(400), moves)
	if r.Events != 7 || r.PeriodS == nil || r.SpreadS == nil || r.LeftMax == nil {
		t.Fatalf("%+v", r)
	}
	if *r.PeriodS < 50 || *r.PeriodS > 50.02 || *r.SpreadS < 0.059 || *r.SpreadS > 0.061 || *r.LeftMax != 0 {
		t.Errorf("period %.3f s, spread %.3f s, left %d; want 50.01, 0.06, 0", *r.PeriodS, *r.SpreadS, *r.LeftMax)
	}
	// A reset that leaves a flow away from its port: A2 away, and no
	// expiry for it at the fourth reset.
	var cut []ARMove
	for _, m := range moves {
		if !(m.Switch == "A2" && m.Cause == MoveExpiry && m.Time.After(at(199)) && m.Time.Before(at(201))) {
			cut = append(cut, m)
		}
	}
	if r := NewResets(50*time.Second, at(400), cut); r.LeftMax == nil || *r.LeftMax != 1 {
		t.Errorf("a flow left away: left %v, want 1", r.LeftMax)
	}
	// A destination a local notification moved is not the reset's to
	// bring back (its queue clears it), and no expiry at all is nothing.
	local := append(slices.Clone(moves), ARMove{Time: at(120), Switch: "S7", Dst: "B1h0", Cause: MoveLocal})
	if r := NewResets(50*time.Second, at(400), local); r.LeftMax == nil || *r.LeftMax != 0 {
		t.Errorf("a local move counted as left away: %v", r.LeftMax)
	}
	if r := NewResets(0, at(400), moves); r.Events != 0 {
		t.Errorf("no expiry: %d events", r.Events)
	}
	// A reset within half an expiry of the end may be cut short: left out.
	if r := NewResets(50*time.Second, at(380), moves); r.Events != 7 {
		t.Errorf("%d events with the point ending at 380 s, want 7", r.Events)
	}
	if r := NewResets(50*time.Second, at(370), moves); r.Events != 6 {
		t.Errorf("%d events with the point ending at 370 s, want 6 (the seventh within half an expiry of the end)", r.Events)
	}
}

// The summary shows a snoop-ar point's resets next to its counts.
func TestResetsSummary(t *testing.T) {
	period, spread, left := 50.01, 0.06, 0
	m := &Metrics{Phases: []Point{{Name: "flows", Load: 1, QCN: &QCN{Notify: true, ARMoves: 42,
		Resets: &Resets{ExpiryS: 50, Events: 7, PeriodS: &period, SpreadS: &spread, LeftMax: &left}}}}}
	var b strings.Builder
	qcnSummary(&b, m)
	if want := "| flows | 1 | 50.000 s | 7 | 50.010 s | 0.060 s | 0 |"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// The hot queue is a link's between switches: under snoop-ar a host's
// port keeps a standing queue (a flow at its link's rate), which neither
// hot_queue_qeq nor its median counts.
func TestHotQueueSkipsHostPorts(t *testing.T) {
	p := &Point{WarmupS: 0, DurationS: 10, QCN: &QCN{Notify: true, QeqBytes: 1000}, Backlog: []BacklogSeries{
		{Port: "B2:1", Host: "B2h0", T: []float64{1, 2, 3}, Bytes: []uint64{900, 900, 900}},
		{Port: "P:3", T: []float64{1, 2, 3}, Bytes: []uint64{0, 0, 1500}},
	}}
	if v, ok := MetricValue(p, scenario.HotQueueQeq); !ok || v != 0.5 {
		t.Errorf("hot_queue_qeq %v (%v), want 0.5 (P:3's mean)", v, ok)
	}
	if v, ok := MetricValue(p, scenario.HotQueueP50Qeq); !ok || v != 0 {
		t.Errorf("hot_queue_p50_qeq %v (%v), want 0 (P:3's median)", v, ok)
	}
}
