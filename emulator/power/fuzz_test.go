package power

import (
	"math"
	"testing"
)

// Any input gives constants the model can use, or a located error; never
// a panic.
func FuzzParseConstants(f *testing.F) {
	for _, s := range []string{"pps_overhead: 0\n", `{"cpu_w": 30, "switch_ports": 72}`, "cpu_w: 1\ncpu_w: 2\n", "tcam_curve: x.csv\n", "- 1\n", "a: &x 1\nb: *x\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, err := ParseConstants("f.yaml", data)
		if err != nil {
			return
		}
		if err := fc.Constants.Validate(); err != nil {
			t.Fatalf("accepted invalid constants: %v", err)
		}
		sw := fc.Constants.SwitchW(1, fc.Constants.TableW(CAMFlat, 1000))
		if math.IsNaN(sw.Total) || sw.Total < 0 {
			t.Fatalf("switch power %v from %q", sw.Total, data)
		}
	})
}

// Any accepted curve is increasing in entries and gives finite,
// non-negative watts, also beyond its last point.
func FuzzParseTCAMCurve(f *testing.F) {
	for _, s := range []string{"entries,watts\n1000,2\n2000,5\n", "0,1\n100,2\n", "10,1\n5,2\n", "# c\n1,1\n", "100,10\n200,1\n"} {
		f.Add([]byte(s), 1500.0)
	}
	f.Fuzz(func(t *testing.T, data []byte, entries float64) {
		cv, err := ParseTCAMCurve("f.csv", data)
		if err != nil {
			return
		}
		for i := 1; i < len(cv.Points); i++ {
			if cv.Points[i].Entries <= cv.Points[i-1].Entries {
				t.Fatalf("points not increasing: %v", cv.Points)
			}
		}
		if math.IsNaN(entries) || math.IsInf(entries, 0) || entries < 0 || entries > 1e9 {
			return
		}
		if w := cv.Watts(entries); math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			t.Fatalf("Watts(%v) = %v on %v", entries, w, cv.Points)
		}
	})
}
