package power

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConstants(t *testing.T) {
	fc, err := ParseConstants("c.yaml", []byte("# no preamble\npps_overhead: 0\ncpu_w: 25.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := fc.Constants
	if c.PPSOverhead != 0 || c.CPUW != 25.5 || !fc.Set["cpu_w"] || fc.Set["link_gbps"] {
		t.Errorf("constants %+v, set %v", c, fc.Set)
	}
	if c.LinkGbps != 40 {
		t.Errorf("unset link_gbps = %v, want the default 40", c.LinkGbps)
	}
	// the CAM is calibrated again on the new constants: 17.0 % still holds
	clos := PaperNetworks()[0]
	ref := c.SwitchW(clos.hostPortsPerSwitch(), c.TableW(CAMFlat, float64(clos.Hosts))).Total
	cmp := c.SwitchW(clos.hostPortsPerSwitch(), c.TCAMW(PaperClosCompactEntries)).Total
	if !near(1-cmp/ref, 0.170, 1e-9) {
		t.Errorf("compaction share %v after recalibration", 1-cmp/ref)
	}
	fc, err = ParseConstants("c.json", []byte(`{"cam_w_per_entry": 1e-4, "switch_ports": 64}`))
	if err != nil {
		t.Fatal(err)
	}
	if fc.Constants.CAMWPerEntry != 1e-4 || fc.Constants.SwitchPorts != 64 {
		t.Errorf("JSON: %+v", fc.Constants)
	}
}

func TestParseConstantsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"cpu_w: 30\ncpuw: 3\n", "c.yaml:2:1: unknown constant \"cpuw\""},
		{"cpu_w: -1\n", "c.yaml:1:8: cpu_w: -1 is not a finite number >= 0"},
		{"cpu_w: abc\n", "c.yaml:1:8: cpu_w: want a number"},
		{"link_gbps: 40\nswitch_ports: 7.5\n", "c.yaml:2:15: switch_ports: want a whole number"},
		{"frame_bytes: 0\n", "c.yaml:1:14: frame_bytes: must be > 0"},
		{"compaction_share: 1\n", "c.yaml:1:19: compaction_share: a fraction, want < 1"},
		{`{"cpu_w": 1, "cpu_w": 2}`, `c.yaml:1:14: mapping key "cpu_w" already defined`},
		{"cpu_w: 1\ncpu_w: 2\n", `c.yaml:2:1: mapping key "cpu_w" already defined`},
		{"- 1\n- 2\n", "c.yaml:1:1: want a mapping"},
		{"tcam_curve: 3\n", "c.yaml:1:13: tcam_curve: want the path"},
		{"cpu_w: .inf\n", "c.yaml:1:8: cpu_w: +Inf is not a finite number"},
		{"a: b: c\n", "c.yaml:"},
	} {
		_, err := ParseConstants("c.yaml", []byte(tc.in))
		wantError(t, tc.in, err, tc.want)
	}
}

func wantError(t *testing.T, in string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: error %v, want %q", in, err, want)
	}
}

func TestTCAMCurve(t *testing.T) {
	cv, err := ParseTCAMCurve("t.csv", []byte("entries,watts\n# 32 nm\n1000, 2\n2000, 5\n4000, 9\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ e, w float64 }{{0, 0}, {500, 1}, {1000, 2}, {1500, 3.5}, {3000, 7}, {4000, 9}, {6000, 13}} {
		if got := cv.Watts(v.e); !near(got, v.w, 1e-9) {
			t.Errorf("Watts(%v) = %v, want %v", v.e, got, v.w)
		}
	}
	// a static floor at zero entries is kept
	cv, err = ParseTCAMCurve("t.csv", []byte("0,1\n100,2\n"))
	if err != nil || !near(cv.Watts(50), 1.5, 1e-9) || !near(cv.Watts(300), 4, 1e-9) {
		t.Errorf("floor curve: %v, %v", cv, err)
	}
	// one point: proportional
	cv, err = ParseTCAMCurve("t.csv", []byte("100,0.3\n"))
	if err != nil || !near(cv.Watts(300), 0.9, 1e-9) {
		t.Errorf("one point: %v, %v", cv, err)
	}
	c := Default().WithTCAMCurve(cv, false)
	if !near(c.TableW(Flat, 1000), 3, 1e-9) || c.CAMWPerEntry != Default().CAMWPerEntry {
		// a proportional curve at 3 mW/entry is the default model
		t.Errorf("curve model: flat 1000 = %v W, CAM %v", c.TableW(Flat, 1000), c.CAMWPerEntry)
	}
}

func TestTCAMCurveErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "t.csv:1: no point"},
		{"entries,watts\n", "t.csv:1: no point"},
		{"0,1\n", "t.csv:1: no point with entries > 0"},
		{"10,1\n5,2\n", "t.csv:2: entries 5: want them increasing"},
		{"10,1\n20\n", "t.csv:2: wrong number of fields"},
		{"10,1\n20,x\n", `t.csv:2: watts: want a number, got "x"`},
		{"10,1\n# c\n20,-1\n", "t.csv:3: watts -1: want a finite number >= 0"},
		{"10,1\nNaN,2\n", "t.csv:2: entries NaN"},
		{"10,1\n20,\"2\n", "t.csv:2:"},
	} {
		_, err := ParseTCAMCurve("t.csv", []byte(tc.in))
		wantError(t, tc.in, err, tc.want)
	}
}

func TestLoadConstantsWithCurve(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tcam.csv"), []byte("1000,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte("tcam_curve: tcam.csv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fc, err := LoadConstants(p)
	if err != nil {
		t.Fatal(err)
	}
	c := fc.Constants
	if c.TCAMCurve == nil || !near(c.TableW(PerGroup, 500), 2, 1e-9) {
		t.Fatalf("curve not applied: %+v", c.TCAMCurve)
	}
	if c.CAMWPerEntry == Default().CAMWPerEntry {
		t.Error("CAM not calibrated again on the curve")
	}
	found := false
	for _, d := range c.Doc() {
		if d.Name == "tcam_w_per_entry" && strings.Contains(d.Source, "tcam.csv") {
			found = true
		}
	}
	if !found {
		t.Error("the constants printed do not name the curve")
	}
	if err := os.WriteFile(p, []byte("tcam_curve: missing.csv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConstants(p); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing curve: %v", err)
	}
}

// Validate holds constants built in code to a constants file's ranges.
func TestValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.CAMWPerEntry = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cam_w_per_entry = -1") {
		t.Errorf("negative CAM: %v", err)
	}
	c = Default()
	c.SwitchPorts = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "switch_ports = 0: must be > 0") {
		t.Errorf("no ports: %v", err)
	}
}
