package results

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethfab/ethfab/results/plot"
)

// Comparison is what Compare made.
type Comparison struct {
	// Series names one curve per run and phase, in argument order.
	Series []string
	Files  []string // relative to the output directory
}

// Compare overlays several runs in one plot set — accepted, mean and p99
// latency and non-minimal share against offered load — written under
// out/plots as compare-*.png/svg, with a compare.md table. Each run is one
// series named by its routing mode; when two runs share a routing mode,
// by run name, and when those clash too, by directory. A run with several
// traffic phases gives one series per phase ("valiant adv").
func Compare(dirs []string, out string) (*Comparison, error) {
	return CompareNamed(dirs, nil, out)
}

// CompareNamed is Compare with the runs' names given (e.g. the cases of
// one scenario), one per directory; nil names them as Compare does.
func CompareNamed(dirs, names []string, out string) (*Comparison, error) {
	if names != nil && len(names) != len(dirs) {
		return nil, fmt.Errorf("compare: %d names for %d runs", len(names), len(dirs))
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("compare: no run directories")
	}
	runs := make([]*Metrics, len(dirs))
	for i, d := range dirs {
		m, err := Load(d)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		runs[i] = m
	}
	labels := names
	if labels == nil {
		labels = runLabels(dirs, runs)
	}
	var ss []loadSeries
	for i, m := range runs {
		names := phaseNames(m.Phases)
		for _, ph := range names {
			name := labels[i]
			if len(names) > 1 {
				name += " " + ph
			}
			ss = append(ss, loadSeries{name: name, points: sortedByOffered(pointsOf(m.Phases, ph))})
		}
	}
	pdir := filepath.Join(out, PlotsDir)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	c := &Comparison{}
	for _, s := range ss {
		c.Series = append(c.Series, s.name)
	}
	for _, nc := range append(sweepCharts("compare-", "", ss), deliveredCompare("compare-", ss)...) {
		for _, ext := range plot.Formats {
			f := filepath.Join(PlotsDir, nc.file+ext)
			if err := nc.chart.Save(filepath.Join(out, f)); err != nil {
				return nil, fmt.Errorf("compare: %w", err)
			}
			c.Files = append(c.Files, filepath.ToSlash(f))
		}
	}
	md := compareMarkdown(dirs, labels, runs, ss, c.Files)
	if err := os.WriteFile(filepath.Join(out, "compare.md"), []byte(md), 0o644); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	c.Files = append(c.Files, "compare.md")
	return c, nil
}

// runLabels names each run by routing mode, falling back to the run name
// and then the directory where those are not unique.
func runLabels(dirs []string, runs []*Metrics) []string {
	unique := func(f func(i int) string) ([]string, bool) {
		out := make([]string, len(runs))
		seen := map[string]bool{}
		for i := range runs {
			out[i] = f(i)
			if out[i] == "" || seen[out[i]] {
				return out, false
			}
			seen[out[i]] = true
		}
		return out, true
	}
	if l, ok := unique(func(i int) string { return runs[i].Run.Routing }); ok {
		return l
	}
	if l, ok := unique(func(i int) string {
		n := runs[i].Run.Name
		if n == "" {
			n = runs[i].Run.Scenario
		}
		if r := runs[i].Run.Routing; r != "" && n != "" {
			n = r + " " + n
		}
		return n
	}); ok {
		return l
	}
	l, _ := unique(func(i int) string { return filepath.Base(filepath.Clean(dirs[i])) })
	if _, ok := unique(func(i int) string { return l[i] }); !ok {
		for i := range l {
			l[i] = fmt.Sprintf("%d: %s", i+1, l[i])
		}
	}
	return l
}

func compareMarkdown(dirs, labels []string, runs []*Metrics, ss []loadSeries, files []string) string {
	var b strings.Builder
	b.WriteString("# ethfab compare\n\n| series | run directory | scenario | topology | routing | fidelity |\n|---|---|---|---|---|---|\n")
	for i, m := range runs {
		fid := "ok"
		if !m.Fidelity.OK {
			fid = "**untrustworthy**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", labels[i], dirs[i], m.Run.Scenario, m.Run.Topology, m.Run.Routing, fid)
	}
	b.WriteString("\n| series | load | offered | accepted | loss | mean µs | p99 µs | non-minimal |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range ss {
		for _, p := range s.points {
			fmt.Fprintf(&b, "| %s | %g | %.3f | %.3f | %s | %.1f | %.1f | %.3f |\n", s.name, p.Load, p.OfferedLoad, p.AcceptedLoad,
				pct(p.Loss), p.LatencyUS.Mean, p.LatencyUS.P99, p.NonminimalShare)
		}
	}
	b.WriteString("\n")
	var mr []MPIRun
	for i, m := range runs {
		mr = append(mr, MPIRun{Label: labels[i], Points: m.Phases})
	}
	b.WriteString(MPIMarkdown(mr))
	b.WriteString("## Plots\n\n")
	for _, f := range files {
		if strings.HasSuffix(f, ".png") {
			fmt.Fprintf(&b, "![%s](%s)\n", f, f)
		}
	}
	return b.String()
}
