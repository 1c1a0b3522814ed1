package power

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethfab/ethfab/results/plot"
)

// Report is `ethfab power --json`; scripts depend on the names.
type Report struct {
	// Mode is "paper" (Fig. 11 with the paper's counts) or "topology".
	Mode      string    `json:"mode"`
	Rows      []Row     `json:"rows"`
	Reference Reference `json:"reference"`
	// Decomposition splits the best row's saving (paper mode only).
	Decomposition *Decomposition `json:"decomposition,omitempty"`
	// Claims are the paper's own figures for the decomposition.
	Claims      *Claims       `json:"paper,omitempty"`
	Constants   []ConstantDoc `json:"constants"`
	Assumptions []string      `json:"assumptions"`
}

// Reference is the row every saving is measured against.
type Reference struct {
	Topology     string       `json:"topology"`
	Organization Organization `json:"organization"`
	NetworkMW    float64      `json:"network_mw"`
}

// Decomposition is the saving of To against From as fractions of From's
// power: Compaction from From to Via (same topology, compact tables),
// Topology the rest (Via to To).
type Decomposition struct {
	Total      float64 `json:"total"`
	Compaction float64 `json:"compaction"`
	Topology   float64 `json:"topology"`
	From       string  `json:"from"`
	Via        string  `json:"via"`
	To         string  `json:"to"`
}

// Claims are the paper's 54.1 / 17.0 / 37.1 %, as fractions.
type Claims struct {
	Total      float64 `json:"total"`
	Compaction float64 `json:"compaction"`
	Topology   float64 `json:"topology"`
}

func (r *Report) setReference(ref Row) {
	r.Reference = Reference{Topology: ref.Topology, Organization: ref.Organization, NetworkMW: ref.NetworkMW.Total}
	for i := range r.Rows {
		r.Rows[i].SavingVsReference = 1 - r.Rows[i].NetworkMW.Total/ref.NetworkMW.Total
	}
}

// Find is the row of a topology and organization, nil if absent.
func (r *Report) Find(top string, o Organization) *Row {
	for i := range r.Rows {
		if r.Rows[i].Topology == top && r.Rows[i].Organization == o {
			return &r.Rows[i]
		}
	}
	return nil
}

// unit is how the text, summary.md and the figure show network power:
// MW for the paper's networks, kW or W for the small fabrics ethfab runs
// (0.001 MW says nothing). JSON keeps network_mw.
func (r *Report) unit() (name string, perMW float64) {
	top := 0.0
	for _, x := range r.Rows {
		top = max(top, x.NetworkMW.Total)
	}
	switch {
	case top >= 1:
		return "MW", 1
	case top >= 1e-3:
		return "kW", 1e3
	}
	return "W", 1e6
}

// WriteText prints the table, the decomposition, the constants and the
// assumptions: a result is never shown without what it rests on.
func (r *Report) WriteText(w io.Writer) {
	u, perMW := r.unit()
	fmt.Fprintf(w, "%-13s %-10s %15s %9s %9s %7s %7s %8s %7s %8s %8s\n", "topology", "org", "entries/sw", "table W", "switch W",
		"CPU "+u, "ports", "buffers", "table", "total "+u, "saving")
	for _, x := range r.Rows {
		name := x.Topology
		if r.Mode != "paper" {
			name = "fabric"
		}
		n := x.NetworkMW.scale(perMW)
		fmt.Fprintf(w, "%-13s %-10s %15s %9.2f %9.1f %7.3f %7.3f %8.3f %7.3f %8.3f %7.1f%%\n", name, x.Organization, x.EntriesPerSwitch,
			x.SwitchW.Table, x.SwitchW.Total, n.CPU, n.Ports, n.Buffers, n.Table, n.Total, 100*x.SavingVsReference)
	}
	if r.Mode != "paper" && len(r.Rows) > 0 {
		x := r.Rows[0]
		fmt.Fprintf(w, "fabric: %s, %d switches, %d hosts (ethfab's counts)\n", x.Spec, x.Switches, x.Hosts)
	}
	fmt.Fprintf(w, "saving is against %s %s (%.3f %s)\n", r.Reference.Topology, r.Reference.Organization, r.Reference.NetworkMW*perMW, u)
	if d := r.Decomposition; d != nil {
		fmt.Fprintf(w, "decomposition (%s → %s → %s): total %.1f %% = compaction %.1f %% + topology %.1f %%", d.From, d.Via, d.To,
			100*d.Total, 100*d.Compaction, 100*d.Topology)
		if p := r.Claims; p != nil {
			fmt.Fprintf(w, "   (paper: %.1f = %.1f + %.1f)", 100*p.Total, 100*p.Compaction, 100*p.Topology)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "constants:")
	for _, c := range r.Constants {
		fmt.Fprintf(w, "  %-18s %12.6g %-18s %s\n", c.Name, c.Value, c.Unit, c.Source)
	}
	fmt.Fprintln(w, "assumptions:")
	for _, a := range r.Assumptions {
		fmt.Fprintf(w, "  - %s\n", a)
	}
}

// Markdown is summary.md: the same as WriteText, as tables.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# Network power (seed 000 §VI-A, Fig. 11)\n\n")
	u, perMW := r.unit()
	fmt.Fprintf(&b, "| topology | organization | switches | hosts | entries/switch | table W/sw | switch W | CPU %[1]s | ports %[1]s | buffers %[1]s | table %[1]s | total %[1]s | saving |\n", u)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Rows {
		n := x.NetworkMW.scale(perMW)
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %.2f | %.1f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f %% |\n", x.Topology, x.Organization,
			x.Switches, x.Hosts, x.EntriesPerSwitch, x.SwitchW.Table, x.SwitchW.Total, n.CPU, n.Ports, n.Buffers, n.Table, n.Total, 100*x.SavingVsReference)
	}
	fmt.Fprintf(&b, "\nReference: %s %s, %.3f %s. Saving is 1 − total / reference (negative: more power).\n", r.Reference.Topology, r.Reference.Organization, r.Reference.NetworkMW*perMW, u)
	if d := r.Decomposition; d != nil {
		b.WriteString("\n## Decomposition\n\n| | model | paper |\n|---|---|---|\n")
		p := r.Claims
		fmt.Fprintf(&b, "| total (%s → %s) | %.1f %% | %.1f %% |\n", d.From, d.To, 100*d.Total, 100*p.Total)
		fmt.Fprintf(&b, "| compaction (→ %s) | %.1f %% | %.1f %% |\n", d.Via, 100*d.Compaction, 100*p.Compaction)
		fmt.Fprintf(&b, "| topology | %.1f %% | %.1f %% |\n", 100*d.Topology, 100*p.Topology)
	}
	b.WriteString("\n## Constants\n\n| name | value | unit | source |\n|---|---|---|---|\n")
	for _, c := range r.Constants {
		fmt.Fprintf(&b, "| %s | %.6g | %s | %s |\n", c.Name, c.Value, c.Unit, strings.ReplaceAll(c.Source, "|", "\\|"))
	}
	b.WriteString("\n## Assumptions\n\n")
	for _, a := range r.Assumptions {
		fmt.Fprintf(&b, "- %s\n", a)
	}
	return b.String()
}

// WriteDir writes power.json, summary.md and the Fig. 11 analogue
// (fig11.png, .svg, .pdf) into dir and returns the files.
func (r *Report) WriteDir(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []string{filepath.Join(dir, "power.json"), filepath.Join(dir, "summary.md")}
	if err := os.WriteFile(files[0], append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(files[1], []byte(r.Markdown()), 0o644); err != nil {
		return nil, err
	}
	chart := r.Fig11()
	for _, ext := range []string{".png", ".svg", ".pdf"} {
		p := filepath.Join(dir, "fig11"+ext)
		if err := chart.Save(p); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}

// Fig11 is the analogue of seed 000 Fig. 11 ("Network power consumption
// dissection"): one stacked bar per topology × organization.
func (r *Report) Fig11() plot.StackedBars {
	u, perMW := r.unit()
	c := plot.StackedBars{Title: "Network power consumption dissection (seed 000 Fig. 11)", YLabel: "network power (" + u + ")"}
	parts := []struct {
		name string
		get  func(Components) float64
	}{
		{"CPU and logic", func(x Components) float64 { return x.CPU }},
		{"ports (SerDes)", func(x Components) float64 { return x.Ports }},
		{"buffers", func(x Components) float64 { return x.Buffers }},
		{"table (CAM/TCAM)", func(x Components) float64 { return x.Table }},
	}
	// A gap between topologies groups the bars as Fig. 11 does.
	var rows []*Row
	for i := range r.Rows {
		if i > 0 && r.Rows[i].Topology != r.Rows[i-1].Topology {
			rows = append(rows, nil)
		}
		rows = append(rows, &r.Rows[i])
	}
	for _, x := range rows {
		label := ""
		if x != nil {
			label = shortName(x.Topology) + " " + string(x.Organization)
			if r.Mode != "paper" {
				label = string(x.Organization)
			}
		}
		c.Bars = append(c.Bars, label)
	}
	for _, p := range parts {
		s := plot.Stack{Name: p.name}
		for _, x := range rows {
			v := 0.0
			if x != nil {
				v = p.get(x.NetworkMW) * perMW
			}
			s.Values = append(s.Values, v)
		}
		c.Stacks = append(c.Stacks, s)
	}
	if r.Mode != "paper" && len(r.Rows) > 0 {
		c.Title = "Network power dissection: " + r.Rows[0].Spec
	}
	if c.YMax = niceCeil(r.axisCut() * perMW); c.YMax > 0 {
		c.YLabel = fmt.Sprintf("network power (%s; axis cut at %g)", u, c.YMax)
	}
	return c
}

// axisCut is where Fig11 cuts its axis (MW; 0: not cut): 1.25× the
// tallest bar that is not a flat TCAM, when a flat TCAM bar is more than
// twice that. The flat bars' size is the paper's point too, so their
// totals stay printed on them; the cut keeps the rest, and the 17 % and
// 37 % steps between them, readable.
func (r *Report) axisCut() float64 {
	rest, flat := 0.0, 0.0
	for _, x := range r.Rows {
		if x.Organization == Flat {
			flat = max(flat, x.NetworkMW.Total)
		} else {
			rest = max(rest, x.NetworkMW.Total)
		}
	}
	if rest == 0 || flat <= 2*rest {
		return 0
	}
	return 1.25 * rest
}

// niceCeil rounds v up to a whole number of its leading digit's unit
// (6.01 → 7, 0.43 → 0.5), so the cut axis ends on a tick.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	unit := math.Pow(10, math.Floor(math.Log10(v)))
	return math.Ceil(v/unit-1e-9) * unit
}

// shortName keeps bar labels short enough to sit under a bar.
func shortName(top string) string {
	switch top {
	case "Folded-Clos":
		return "Clos"
	case "4D FB":
		return "FB"
	case "Dragonfly":
		return "DF"
	}
	return top
}
