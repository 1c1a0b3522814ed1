package plan

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/results/plot"
	"github.com/ethfab/ethfab/topology"
)

// SweepPorts are the switch sizes of seed 000 Fig. 4 and Fig. 6.
var SweepPorts = []int{8, 16, 24, 48, 96}

// SweepTopology is a topology family sized for P-port switches as in
// seed 000 Table I.
type SweepTopology struct {
	Name string
	Spec func(ports int) topology.Spec
}

// SweepTopologies follow seed 000 Table I: a balanced Dragonfly (p = h = P/4,
// a = P/2), n-dimensional Flattened Butterflies with as many hosts per
// switch as switches per dimension (k + n(k-1) <= P), and the full
// 3-level Clos of P-port switches.
var SweepTopologies = []SweepTopology{
	{"3-level Folded-Clos", func(p int) topology.Spec { return topology.Spec{Kind: topology.Clos, K: p} }},
	{"2D Flattened Butterfly", func(p int) topology.Spec { return fbFor(p, 2) }},
	{"3D Flattened Butterfly", func(p int) topology.Spec { return fbFor(p, 3) }},
	{"4D Flattened Butterfly", func(p int) topology.Spec { return fbFor(p, 4) }},
	{"Dragonfly", func(p int) topology.Spec {
		return topology.Spec{Kind: topology.Dragonfly, P: p / 4, A: p / 2, H: p / 4}
	}},
}

func fbFor(ports, n int) topology.Spec {
	k := (ports + n) / (n + 1)
	dims := make([]int, n)
	for i := range dims {
		dims[i] = k
	}
	return topology.Spec{Kind: topology.FlatFly, Dims: dims, T: k}
}

// SweepRow is one point of the figures.
type SweepRow struct {
	Topology string
	Ports    int
	Spec     string
	Switches int
	Hosts    int
	Scheme   string // flat, per-switch, per-group, compact
	Rules    controller.Spread
	Compiled int
}

// SweepSamples bounds how many switches are compiled per point; the
// figures need the spread, not every switch of a million-host network.
const SweepSamples = 48

// Sweep computes every point; progress, if not nil, hears of each.
func Sweep(progress io.Writer) ([]SweepRow, error) {
	var rows []SweepRow
	for _, st := range SweepTopologies {
		for _, p := range SweepPorts {
			spec := st.Spec(p).Normalize()
			top, err := topology.Build(spec)
			if err != nil {
				return nil, fmt.Errorf("%s with %d ports: %w", st.Name, p, err)
			}
			for _, v := range []struct {
				name    string
				scheme  addressing.Scheme
				compact bool
			}{{"flat", addressing.Flat, false}, {"per-switch", addressing.PerSwitch, false}, {"per-group", addressing.PerGroup, false}, {"compact", addressing.PerGroup, true}} {
				ap, err := addressing.New(top, v.scheme, v.compact)
				if err != nil {
					return nil, err
				}
				ctl, err := controller.New(ap, controller.Options{Mode: controller.Minimal, Compact: v.compact})
				if err != nil {
					return nil, err
				}
				n := SweepSamples
				if v.scheme == addressing.Flat && len(top.Hosts) > 100_000 {
					n = 4 // a flat table has one rule per host: a few switches show it
				}
				st2, err := ctl.Stats(Sample(len(top.Switches), n))
				if err != nil {
					return nil, err
				}
				routing := st2.ByKind["routing"]
				up := st2.ByKind["uplink"]
				row := SweepRow{Topology: st.Name, Ports: p, Spec: spec.String(), Switches: len(top.Switches), Hosts: len(top.Hosts),
					Scheme: v.name, Compiled: st2.Switches,
					Rules: controller.Spread{Min: routing.Min + up.Min, Mean: routing.Mean + up.Mean, Max: routing.Max + up.Max}}
				rows = append(rows, row)
				if progress != nil {
					fmt.Fprintf(progress, "%-24s P=%-3d %-34s %8d hosts  %-10s routing rules min %6d mean %9.1f max %6d\n",
						st.Name, p, spec.String(), len(top.Hosts), v.name, row.Rules.Min, row.Rules.Mean, row.Rules.Max)
				}
			}
		}
	}
	return rows, nil
}

// WriteSweep writes sweep.csv, fig4 (per-switch and per-group) and fig6
// (compact, with the Dragonfly's min and max) as PNG and SVG.
func WriteSweep(dir string, rows []SweepRow) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	csvPath := filepath.Join(dir, "sweep.csv")
	f, err := os.Create(csvPath)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"topology", "switch_ports", "spec", "switches", "hosts", "addressing", "routing_rules_min", "routing_rules_mean", "routing_rules_max", "switches_compiled"})
	for _, r := range rows {
		w.Write([]string{r.Topology, strconv.Itoa(r.Ports), r.Spec, strconv.Itoa(r.Switches), strconv.Itoa(r.Hosts), r.Scheme,
			strconv.Itoa(r.Rules.Min), strconv.FormatFloat(r.Rules.Mean, 'f', 1, 64), strconv.Itoa(r.Rules.Max), strconv.Itoa(r.Compiled)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	files := []string{csvPath}
	series := func(scheme string, pick func(controller.Spread) float64, suffix string, dashed bool) []plot.Series {
		var out []plot.Series
		for _, st := range SweepTopologies {
			s := plot.Series{Name: st.Name + " " + suffix, Dashed: dashed}
			for _, r := range rows {
				if r.Topology == st.Name && r.Scheme == scheme {
					s.Points = append(s.Points, plot.Point{X: float64(r.Hosts), Y: pick(r.Rules)})
				}
			}
			out = append(out, s)
		}
		return out
	}
	maxOf := func(s controller.Spread) float64 { return float64(s.Max) }
	minOf := func(s controller.Spread) float64 { return float64(s.Min) }
	tcam := []plot.HLine{{Y: 4096, Label: "4K TCAM"}, {Y: 32768, Label: "32K TCAM"}}
	fig4 := plot.Chart{Title: "Routing rules per switch (seed 000 Fig. 4)", XLabel: "network endpoints (H)", YLabel: "TCAM entries (R), max per switch",
		LogX: true, LogY: true, HLines: tcam}
	fig4.Series = append(series("per-switch", maxOf, "per-switch", true), series("per-group", maxOf, "per-group", false)...)
	fig6 := plot.Chart{Title: "Routing rules after compaction (seed 000 Fig. 6)", XLabel: "network endpoints (H)", YLabel: "TCAM entries (R)",
		LogX: true, LogY: true, HLines: tcam}
	fig6.Series = series("compact", maxOf, "compact (max)", false)
	for _, s := range series("compact", minOf, "compact (min)", true) {
		if s.Name == "Dragonfly compact (min)" {
			fig6.Series = append(fig6.Series, s)
		}
	}
	for _, c := range []struct {
		name  string
		chart plot.Chart
	}{{"fig4", fig4}, {"fig6", fig6}} {
		for _, ext := range plot.Formats {
			p := filepath.Join(dir, c.name+ext)
			if err := c.chart.Save(p); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			files = append(files, p)
		}
	}
	return files, nil
}
