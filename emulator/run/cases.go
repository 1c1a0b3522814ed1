package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
)

// CaseRow is one case's line in cases.json.
type CaseRow struct {
	Case       string               `json:"case"`
	Set        map[string]string    `json:"set"`
	Dir        string               `json:"dir"`
	Agents     []results.AgentPhase `json:"agents"`
	Phases     []results.Point      `json:"phases"`
	Fidelity   results.Fidelity     `json:"fidelity"`
	Failed     []string             `json:"failed_expectations"`
	Scenario   string               `json:"scenario"`
	Lab        string               `json:"lab"`
	Addressing string               `json:"addressing"`
	Assign     string               `json:"assign"`
	Routing    string               `json:"routing"`
	Topology   string               `json:"topology"`
	HostCount  int                  `json:"hosts"`
}

// writeCases puts the cases side by side: cases.json and cases.md at the
// top of the run directory.
func writeCases(sc *scenario.Scenario, all *Outcome) error {
	var rows []CaseRow
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: cases side by side\n\n", sc.Name)
	if sc.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", sc.Description)
	}
	hasAgents := false
	for k, c := range all.Cases {
		m := c.Metrics
		set := map[string]string{}
		for _, o := range sc.Cases[k].Set {
			set[o.Path] = o.Value
		}
		rows = append(rows, CaseRow{Case: c.Case, Set: set, Dir: c.Case, Agents: m.Agents, Phases: m.Phases,
			Fidelity: m.Fidelity, Failed: c.Failed(), Scenario: m.Run.Scenario, Lab: m.Run.Lab,
			Addressing: m.Run.Addressing, Assign: m.Run.Assign, Routing: m.Run.Routing, Topology: m.Run.Topology, HostCount: m.Run.Hosts})
		hasAgents = hasAgents || len(m.Agents) > 0
	}
	if hasAgents {
		b.WriteString("| case | overrides | phase | assign | peer MAC from | announcements sent / received | peers min / mean / max | connects | bad peer addr | all connected at | DMP p50 / p99 / max ms |\n")
		b.WriteString("|---|---|---|---|---|---:|---|---|---:|---:|---|\n")
		for k, r := range rows {
			for _, a := range r.Agents {
				from := a.PeerMACFrom
				if a.BeforeDMP {
					from += ", before DMP"
				}
				dmp := "–"
				if a.DMPMs != nil {
					dmp = fmt.Sprintf("%.1f / %.1f / %.1f", a.DMPMs.P50, a.DMPMs.P99, a.DMPMs.Max)
				}
				all := "never"
				if a.AllConnectedMs != nil {
					all = fmt.Sprintf("%.0f ms", *a.AllConnectedMs)
				}
				if a.Kind != string(scenario.PhaseAnnounce) {
					from, all = "–", "–"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d / %d | %d / %.1f / %d | %d of %d | %d | %s | %s |\n",
					r.Case, overridesText(sc.Cases[k]), a.Name, a.Assign, from, a.AnnouncementsSent, a.AnnouncementsReceived,
					a.PeersMin, a.PeersMean, a.PeersMax, a.ConnectSucceeded, a.ConnectAttempted, a.BadPeerAddr, all, dmp)
			}
		}
		b.WriteString("\n")
	}
	hasTraffic := false
	var mr []results.MPIRun
	for _, r := range rows {
		for _, p := range r.Phases {
			hasTraffic = hasTraffic || p.MPI == nil
		}
		mr = append(mr, results.MPIRun{Label: r.Case, Points: r.Phases})
	}
	if hasTraffic {
		b.WriteString("| case | phase | pattern | routing | load | offered | accepted | loss | p50 µs | p99 µs | non-minimal |\n")
		b.WriteString("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range rows {
			for _, p := range r.Phases {
				if p.MPI != nil {
					continue // in the MPI table below
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %g | %.3f | %.3f | %.4f | %.0f | %.0f | %.3f |\n", r.Case, p.Name, p.Pattern,
					p.Routing, p.Load, p.OfferedLoad, p.AcceptedLoad, p.Loss, p.LatencyUS.P50, p.LatencyUS.P99, p.NonminimalShare)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString(results.MPIMarkdown(mr))
	if len(all.Versus) > 0 {
		b.WriteString("## Cases against each other\n\n")
		b.WriteString("| case | versus | phase | load | expectation | measured | bound | result |\n|---|---|---|---:|---|---:|---:|---|\n")
		for _, v := range all.Versus {
			res := "pass"
			if !v.Pass {
				res = "**FAIL**"
				if v.Note != "" {
					res += ": " + v.Note
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %g | `%s` | %.4g | %.4g | %s |\n", v.Case, v.Other, v.Phase, v.Load, v.Expect, v.Value, v.Bound, res)
		}
		b.WriteString("\nLeft-hand metric: the case's; right-hand: the other case's at the same phase and load (latencies in µs).\n\n")
	}
	if hasTraffic {
		// The compare plot set, as `ethfab compare` makes it from the case
		// directories.
		dirs := make([]string, len(all.Cases))
		names := make([]string, len(all.Cases))
		for k, c := range all.Cases {
			dirs[k], names[k] = c.Dir, c.Case
		}
		cmp, err := results.CompareNamed(dirs, names, all.Dir)
		if err != nil {
			return err
		}
		b.WriteString("Plots of every case against offered load: ")
		for k, f := range cmp.Files {
			if strings.HasSuffix(f, ".png") {
				if k > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "[%s](%s)", filepath.Base(f), f)
			}
		}
		b.WriteString("; table: [compare.md](compare.md).\n\n")
	}
	b.WriteString("| case | fidelity | failed expectations | run directory |\n|---|---|---|---|\n")
	for _, r := range rows {
		fid := "ok"
		if !r.Fidelity.OK {
			fid = "NOT OK: " + strings.Join(r.Fidelity.Reasons, "; ")
		}
		fmt.Fprintf(&b, "| %s | %s | %d | [%s](%s/summary.md) |\n", r.Case, fid, len(r.Failed), r.Dir, r.Dir)
	}
	if err := os.MkdirAll(all.Dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(all.Dir, "cases.json"), map[string]any{"scenario": sc.Source, "cases": rows, "versus": all.Versus}); err != nil {
		return err
	}
	if sc.Raw != nil {
		if err := os.WriteFile(filepath.Join(all.Dir, "scenario.yaml"), sc.Raw, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(all.Dir, "cases.md"), []byte(b.String()), 0o644)
}
