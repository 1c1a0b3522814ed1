package power

import (
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ethfab/ethfab/topology"
)

// paperReport is the paper run, computed once per test binary: building
// the three 300,000-host networks takes seconds. A sample of switches is
// compiled for the DF's compact tables (the model charges their mean).
var paperReport = sync.OnceValues(func() (*Report, error) {
	return Paper(PaperOptions{Constants: Default(), SampleSwitches: 64})
})

func paper(t *testing.T) *Report {
	t.Helper()
	r, err := paperReport()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func row(t *testing.T, r *Report, top string, o Organization) *Row {
	t.Helper()
	x := r.Find(top, o)
	if x == nil {
		t.Fatalf("no row %s %s", top, o)
	}
	return x
}

var paperTops = []string{"Folded-Clos", "4D FB", "Dragonfly"}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Seed 000 §VI-A's headline and its decomposition: 54.1 % in all, 17.0 %
// from compaction (the calibration input), 37.1 % from the topology.
func TestPaperDecomposition(t *testing.T) {
	d := paper(t).Decomposition
	if d == nil {
		t.Fatal("no decomposition")
	}
	if !near(d.Total, PaperSaving, 0.015) {
		t.Errorf("total saving %.2f %%, paper 54.1 ± 1.5", 100*d.Total)
	}
	if !near(d.Compaction, PaperCompactionShare, 1e-9) {
		t.Errorf("compaction share %.6f, want exactly the calibration input 0.170", d.Compaction)
	}
	if !near(d.Topology, PaperTopologyShare, 0.015) {
		t.Errorf("topology share %.2f %%, paper 37.1 ± 1.5", 100*d.Topology)
	}
	if !near(d.Total, d.Compaction+d.Topology, 1e-12) {
		t.Errorf("shares %v + %v do not add up to %v", d.Compaction, d.Topology, d.Total)
	}
}

// Topology first cannot give seed 000's 37.1 %: the DF's CAM-flat switch
// draws no more than the Clos's, so the topology share is at most the
// switch-count ratio.
func TestTopologyFirstRejected(t *testing.T) {
	r := paper(t)
	clos, df := row(t, r, "Folded-Clos", CAMFlat), row(t, r, "Dragonfly", CAMFlat)
	if df.SwitchW.Total >= clos.SwitchW.Total {
		t.Errorf("DF CAM-flat switch %.1f W >= Clos %.1f W", df.SwitchW.Total, clos.SwitchW.Total)
	}
	need := (1 - PaperTopologyShare) * clos.NetworkMW.Total / float64(df.Switches) * 1e6
	if need/clos.SwitchW.Total < 1.1 {
		t.Errorf("topology first needs a DF switch of %.1f W vs Clos %.1f W: expected > 1.1×", need, clos.SwitchW.Total)
	}
}

// Checks 4-6: flat TCAMs, per-switch TCAMs.
func TestPaperTableClaims(t *testing.T) {
	r := paper(t)
	minFlat := math.Inf(1)
	for _, top := range paperTops {
		f := row(t, r, top, Flat)
		if f.SwitchW.Table < PaperFlatTCAMPerSwW {
			t.Errorf("%s flat TCAM %.1f W per switch, paper: more than 900 W", top, f.SwitchW.Table)
		}
		minFlat = math.Min(minFlat, f.NetworkMW.Table*1e6)
		ps := row(t, r, top, PerSwitch).NetworkMW.Table
		if ps < 0.5 || ps > 1.5 {
			t.Errorf("%s per-switch TCAM %.3f MW overall, paper: around a MW (0.5-1.5)", top, ps)
		}
	}
	if minFlat < PaperFlatTCAMOverallW {
		t.Errorf("smallest flat TCAM total %.2f MW, paper: at least 15 MW", minFlat/1e6)
	}
}

// Checks 7-9: per-switch competitive with CAM, per-group close to
// compact, the DF best for every organization.
func TestPaperOrderings(t *testing.T) {
	r := paper(t)
	for _, top := range paperTops {
		cam, ps := row(t, r, top, CAMFlat).NetworkMW.Total, row(t, r, top, PerSwitch).NetworkMW.Total
		if ps > 1.3*cam {
			t.Errorf("%s per-switch %.3f MW > 1.3 × CAM-flat %.3f MW", top, ps, cam)
		}
		pg, c := row(t, r, top, PerGroup).NetworkMW.Total, row(t, r, top, Compact).NetworkMW.Total
		if pg > 1.05*c || pg < c {
			t.Errorf("%s per-group %.3f MW not within 5 %% above compact %.3f MW", top, pg, c)
		}
	}
	for _, o := range Organizations() {
		clos, fb, df := row(t, r, "Folded-Clos", o), row(t, r, "4D FB", o), row(t, r, "Dragonfly", o)
		if !(df.NetworkMW.Total < fb.NetworkMW.Total && fb.NetworkMW.Total < clos.NetworkMW.Total) {
			t.Errorf("%s: want DF < FB < Clos, got %.3f, %.3f, %.3f MW", o, df.NetworkMW.Total, fb.NetworkMW.Total, clos.NetworkMW.Total)
		}
	}
}

// The unit constants, and the reference row (Clos CAM-flat) worked by hand
// from seed 000 §VI-A's constants.
func TestUnitsAndReference(t *testing.T) {
	c := Default()
	if got := c.BufferWPerPort(); math.Round(got*1000) != 536 {
		t.Errorf("buffer %.4f W per port, want 0.536", got)
	}
	if c.ElectricalPortW != 0.48 || c.OpticalPortW != 0.60 || c.ElectricalPortW != c.OpticalPortW*0.8 {
		t.Errorf("ports: electrical %v, optical %v", c.ElectricalPortW, c.OpticalPortW)
	}
	if !near(c.PacketRate(), 59.52e6, 0.01e6) {
		t.Errorf("packet rate %v, want 59.52 Mpps", c.PacketRate())
	}
	if !near(c.CAMWPerEntry*1e6, 75.5, 0.05) {
		t.Errorf("CAM %.2f µW/entry, by hand 75.5", c.CAMWPerEntry*1e6)
	}
	ref := row(t, paper(t), "Folded-Clos", CAMFlat)
	for _, v := range []struct {
		what      string
		got, want float64
		tol       float64
	}{
		{"Clos CAM-flat table W", ref.SwitchW.Table, 22.90, 0.005},
		{"Clos CAM-flat switch W", ref.SwitchW.Total, 133.5, 0.05},
		{"Clos CAM-flat MW", ref.NetworkMW.Total, 3.935, 0.0005},
		{"Clos non-table W", ref.SwitchW.Total - ref.SwitchW.Table, 110.55, 0.005},
	} {
		if !near(v.got, v.want, v.tol) {
			t.Errorf("%s = %.4f, by hand %.4f", v.what, v.got, v.want)
		}
	}
}

// The variant pps_overhead 0 (64-byte frames back to back), worked by
// hand: B_c 122.61 W, C 25.37 W, and the
// headline within 0.1 points (with the Clos's and the DF's compact tables
// priced at 72 entries, no compilation needed).
func TestNoPreambleVariant(t *testing.T) {
	c := uncalibrated()
	c.PPSOverhead = 0
	c = c.Calibrate()
	clos := PaperNetworks()[0]
	b := c.SwitchW(clos.hostPortsPerSwitch(), 0).Total
	if !near(b, 122.61, 0.005) || !near(c.CAMWPerEntry*float64(clos.Hosts), 25.37, 0.005) {
		t.Errorf("B_c %.3f W, C %.3f W; by hand 122.61, 25.37", b, c.CAMWPerEntry*float64(clos.Hosts))
	}
	saving := func(c Constants) float64 {
		df := PaperNetworks()[2]
		ref := c.SwitchW(clos.hostPortsPerSwitch(), c.TableW(CAMFlat, float64(clos.Hosts))).Total * float64(clos.Switches)
		return 1 - c.SwitchW(df.hostPortsPerSwitch(), c.TCAMW(72)).Total*float64(df.Switches)/ref
	}
	if d := saving(c) - saving(Default()); math.Abs(d) > 0.001 {
		t.Errorf("pps_overhead 0 moves the total by %.2f points, want ≤ 0.1", 100*d)
	}
}

// Seed 000 Eq. 1 on the paper's three networks (and its flat and
// per-switch analogues), counted by hand from their sizes.
func TestEq1Entries(t *testing.T) {
	want := map[string][3]int{"Folded-Clos": {303_264, 8_459, 304}, "4D FB": {303_750, 20_264, 1_378}, "Dragonfly": {300_024, 16_685, 515}}
	for _, n := range PaperNetworks() {
		for i, o := range []Organization{Flat, PerSwitch, PerGroup} {
			got, err := n.Eq1Entries(o)
			if err != nil || got != want[n.Name][i] {
				t.Errorf("%s %s: %d, %v; want %d", n.Name, o, got, err, want[n.Name][i])
			}
		}
		if n.Spec.Kind != topology.Clos {
			// ethfab builds the FB and the DF as the paper counts them
			s := n.Spec.Normalize()
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The paper's FB and DF are exactly what ethfab builds; Eq. 1 matches
// ethfab's compiled per-group tables on a small Dragonfly.
func TestFabricMatchesEq1(t *testing.T) {
	spec, err := topology.ParseSpec("dragonfly:p=2,a=4,h=2")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Fabric(FabricOptions{Topology: spec, Constants: Default()})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 5 || r.Reference.Organization != CAMFlat || r.Rows[0].SavingVsReference != 0 {
		t.Fatalf("rows %d, reference %+v", len(r.Rows), r.Reference)
	}
	pg := row(t, r, spec.String(), PerGroup)
	if e := pg.EntriesPerSwitch; e.Varies() || e.Min != (9-1)+(4-1)+2 {
		t.Errorf("per-group entries %s, Eq. 1 gives 13", e)
	}
	if pg.SwitchPorts != 2+3+2 || pg.Switches != 36 || pg.Hosts != 72 {
		t.Errorf("switch ports %d, switches %d, hosts %d", pg.SwitchPorts, pg.Switches, pg.Hosts)
	}
	if e := row(t, r, spec.String(), Flat).EntriesPerSwitch; e.Min != 72 {
		t.Errorf("flat entries %s, want 72 (one per host)", e)
	}
	if r.Decomposition != nil {
		t.Error("a single fabric has no decomposition")
	}
}

// Fig. 11's flat TCAM bars (5–10× the rest) are cut, not allowed to
// flatten the others; the axis still shows every other bar whole.
func TestFig11AxisCut(t *testing.T) {
	r := paper(t)
	c := r.Fig11()
	if c.YMax == 0 {
		t.Fatal("paper figure not cut")
	}
	for _, x := range r.Rows {
		if x.Organization != Flat && x.NetworkMW.Total > c.YMax {
			t.Errorf("%s %s: %.2f MW above the cut %v", x.Topology, x.Organization, x.NetworkMW.Total, c.YMax)
		}
		if x.Organization == Flat && x.NetworkMW.Total < 2*c.YMax {
			t.Errorf("%s flat: %.2f MW, cut at %v: the cut buys little", x.Topology, x.NetworkMW.Total, c.YMax)
		}
	}
	if u, _ := r.unit(); u != "MW" {
		t.Errorf("paper unit %s", u)
	}
	small := &Report{Rows: []Row{{NetworkMW: Components{Total: 0.0123}}}}
	if u, f := small.unit(); u != "kW" || f != 1e3 {
		t.Errorf("a 12 kW fabric shown in %s (×%v)", u, f)
	}
}

// The paper's networks are built from 72-port switches: the Clos uses
// every port, the DF 71, the FB 62; fewer ports cannot price them.
func TestPaperPortsUsed(t *testing.T) {
	want := map[string]int{"Folded-Clos": 72, "4D FB": 62, "Dragonfly": 71}
	for _, n := range PaperNetworks() {
		if got := n.portsUsed(); got != want[n.Name] {
			t.Errorf("%s uses %d ports, want %d", n.Name, got, want[n.Name])
		}
	}
	c := Default()
	c.SwitchPorts = 64
	if _, err := Paper(PaperOptions{Constants: c, SampleSwitches: 1}); err == nil || !strings.Contains(err.Error(), "needs 72 ports") {
		t.Errorf("64-port switches priced the paper's networks: %v", err)
	}
}

// Scripts read these JSON names: renaming one breaks them.
func TestJSONNames(t *testing.T) {
	b, err := json.Marshal(paper(t))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Rows []map[string]json.RawMessage `json:"rows"`
		Ref  map[string]any               `json:"reference"`
		Dec  map[string]any               `json:"decomposition"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"topology", "organization", "switches", "hosts", "entries_per_switch", "switch_w", "network_mw", "saving_vs_reference"} {
		if _, ok := m.Rows[0][k]; !ok {
			t.Errorf("rows[0] has no %q", k)
		}
	}
	for _, k := range []string{"cpu", "ports", "buffers", "table", "total"} {
		if !strings.Contains(string(m.Rows[0]["switch_w"]), `"`+k+`"`) || !strings.Contains(string(m.Rows[0]["network_mw"]), `"`+k+`"`) {
			t.Errorf("switch_w or network_mw has no %q", k)
		}
	}
	if string(m.Rows[0]["entries_per_switch"]) != "303264" {
		t.Errorf("uniform entries as %s, want a number", m.Rows[0]["entries_per_switch"])
	}
	if e := string(m.Rows[14]["entries_per_switch"]); !strings.Contains(e, `"min"`) || !strings.Contains(e, `"max"`) {
		t.Errorf("DF compact entries as %s, want {min, mean, max}", e)
	}
	for _, k := range []string{"total", "compaction", "topology"} {
		if _, ok := m.Dec[k]; !ok {
			t.Errorf("decomposition has no %q", k)
		}
	}
	if m.Ref["organization"] != "cam-flat" || m.Ref["topology"] != "Folded-Clos" {
		t.Errorf("reference %v", m.Ref)
	}
}

// The output directory: power.json, summary.md with the table and the
// decomposition, the figure in three formats.
func TestWriteDir(t *testing.T) {
	files, err := paper(t).WriteDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Errorf("files %v", files)
	}
	md := paper(t).Markdown()
	for _, s := range []string{"| Dragonfly | compact |", "## Decomposition", "| compaction", "## Assumptions", "cam_w_per_entry"} {
		if !strings.Contains(md, s) {
			t.Errorf("summary.md lacks %q", s)
		}
	}
	var text strings.Builder
	paper(t).WriteText(&text)
	for _, s := range []string{"decomposition", "paper: 54.1 = 17.0 + 37.1", "assumptions:", "constants:"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q", s)
		}
	}
}
