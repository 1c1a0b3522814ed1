package results

import (
	"strings"
	"testing"

	"github.com/ethfab/ethfab/scenario"
)

// A versus compares the case's metric with the other case's at the same
// load, and fails a load either case did not measure.
func TestEvaluateVersus(t *testing.T) {
	e, err := scenario.ParseExpectation("accepted >= 3 * accepted")
	if err != nil {
		t.Fatal(err)
	}
	mine := []Point{{Name: "adv", Load: 0.3, AcceptedLoad: 0.3}, {Name: "adv", Load: 0.5, AcceptedLoad: 0.45}, {Name: "un", Load: 0.5, AcceptedLoad: 0.01}}
	theirs := []Point{{Name: "adv", Load: 0.3, AcceptedLoad: 0.125}, {Name: "adv", Load: 0.5, AcceptedLoad: 0.125}}
	rs := EvaluateVersus("cond", scenario.Versus{Case: "min", Phase: "adv", Expect: []scenario.Expectation{e}}, mine, theirs)
	if len(rs) != 2 {
		t.Fatalf("%d results, want one per load of phase adv: %+v", len(rs), rs)
	}
	if rs[0].Pass || rs[0].Bound != 0.375 || !rs[1].Pass || rs[1].Value != 0.45 || rs[1].Case != "cond" || rs[1].Other != "min" {
		t.Fatalf("results %+v", rs)
	}
	rs = EvaluateVersus("cond", scenario.Versus{Case: "min", Phase: "adv", Loads: []float64{0.7}, Expect: []scenario.Expectation{e}}, mine, theirs)
	if len(rs) != 1 || rs[0].Pass || rs[0].Note == "" {
		t.Fatalf("unmeasured load: %+v", rs)
	}
}

// The conditional section explains a mixed minimal/non-minimal split and a
// non-minimal share that climbs with uniform load, from the points alone.
func TestConditionsReading(t *testing.T) {
	c := &Conditions{PauseEvents: 10}
	pts := []Point{
		{Name: "adv", Pattern: "adv+1", Load: 0.1, NonminimalShare: 0.02, Conditions: &Conditions{}},
		{Name: "adv", Pattern: "adv+1", Load: 0.2, NonminimalShare: 0.48, Conditions: c, LatencyUS: Latency{Mean: 9000}},
		{Name: "un", Pattern: "uniform", Load: 0.5, NonminimalShare: 0, Conditions: &Conditions{}},
		{Name: "un", Pattern: "uniform", Load: 0.8, NonminimalShare: 0.02, Conditions: c},
		{Name: "un", Pattern: "uniform", Load: 0.9, NonminimalShare: 0.78, Conditions: c, Loss: 0.37, AcceptedLoad: 0.57, OfferedLoad: 0.9},
	}
	got := conditionsReading(pts)
	for _, want := range []string{"**adv at load 0.2:** 52% of the frames went minimal", "Fig. 12b", "**un, non-minimal share against load:** 0.5 → 0.00, 0.8 → 0.02, 0.9 → 0.78", "positive control loop"} {
		if !strings.Contains(got, want) {
			t.Errorf("reading lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(conditionsReading(pts[2:3]), "control loop") {
		t.Error("a flat non-minimal share read as a control loop")
	}
}
