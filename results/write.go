package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ethfab/ethfab/results/plot"
)

// Names of the files in a run directory.
const (
	MetricsFile  = "metrics.json"
	SummaryFile  = "summary.md"
	ScenarioFile = "scenario.yaml"
	MachineFile  = "machine.json"
	TopologyFile = "topology.json"
	// TopologyDot and TopologySVG draw the fabric (package graph; the
	// SVG when Graphviz is installed).
	TopologyDot = "topology.dot"
	TopologySVG = "topology.svg"
	RulesFile   = "rules.json"
	PlotsDir    = "plots"
)

// Artifacts are files the caller made and the run directory keeps as
// given: the scenario as run, the machine's probe, the topology and the
// rules summary. Nil ones are not written.
type Artifacts struct {
	Scenario []byte // scenario.yaml
	Machine  []byte // machine.json
	Topology []byte // topology.json
	Rules    []byte // rules.json
	Dot, SVG []byte // topology.dot, topology.svg
}

// PhaseCSV names the CSV file of a phase.
func PhaseCSV(phase string) string { return "phase-" + safeName(phase) + ".csv" }

// ConditionsCSV names the per-flip CSV of a conditional phase.
func ConditionsCSV(phase string) string { return "conditions-" + safeName(phase) + ".csv" }

// safeName keeps a phase name usable as part of a file name.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "unnamed"
	}
	return b.String()
}

// Write lays out a run directory: the artifacts, metrics.json, one CSV per
// phase, the plots (PNG and SVG) and summary.md. It creates dir if needed
// and overwrites what an earlier Write put there. It returns the files
// written, relative to dir.
func Write(dir string, m *Metrics, a Artifacts) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{ScenarioFile, a.Scenario}, {MachineFile, a.Machine}, {TopologyFile, a.Topology}, {RulesFile, a.Rules},
		{TopologyDot, a.Dot}, {TopologySVG, a.SVG}} {
		if f.data == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return nil, fmt.Errorf("run directory: %w", err)
		}
	}
	if err := WriteMetrics(dir, m); err != nil {
		return nil, err
	}
	if err := render(dir, m); err != nil {
		return nil, err
	}
	return listFiles(dir)
}

// WriteMetrics writes metrics.json alone, e.g. after every point of a long
// run so that an interrupted run keeps what it measured. The file is
// replaced atomically.
func WriteMetrics(dir string, m *Metrics) error {
	if m.Schema == 0 {
		m.Schema = SchemaVersion
	}
	if m.Phases == nil {
		m.Phases = []Point{}
	}
	if m.Expectations == nil {
		m.Expectations = []ExpectationResult{}
	}
	if m.Fidelity.Reasons == nil {
		m.Fidelity.Reasons = []string{}
	}
	if m.Fidelity.Checks == nil {
		m.Fidelity.Checks = []FidelityCheck{}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("metrics.json: %w", err)
	}
	b = append(b, '\n')
	tmp := filepath.Join(dir, "."+MetricsFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("metrics.json: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, MetricsFile)); err != nil {
		return fmt.Errorf("metrics.json: %w", err)
	}
	return nil
}

// Load reads a run directory's metrics.json.
func Load(dir string) (*Metrics, error) {
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a run directory: no %s", dir, MetricsFile)
		}
		return nil, fmt.Errorf("load run: %w", err)
	}
	var m Metrics
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("load run %s: %w", filepath.Join(dir, MetricsFile), err)
	}
	if m.Schema > SchemaVersion {
		return nil, fmt.Errorf("load run %s: schema %d is newer than this ethfab's %d", dir, m.Schema, SchemaVersion)
	}
	return &m, nil
}

// Render regenerates every file derived from metrics.json — the phase
// CSVs, the plots and summary.md — from metrics.json alone (`ethfab report
// DIR`). It returns the directory's files.
func Render(dir string) ([]string, error) {
	m, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if err := render(dir, m); err != nil {
		return nil, err
	}
	return listFiles(dir)
}

func render(dir string, m *Metrics) error {
	for _, name := range phaseNames(m.Phases) {
		var buf bytes.Buffer
		if err := WriteCSV(&buf, pointsOf(m.Phases, name)); err != nil {
			return fmt.Errorf("%s: %w", PhaseCSV(name), err)
		}
		if err := os.WriteFile(filepath.Join(dir, PhaseCSV(name)), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("run directory: %w", err)
		}
		csvs, err := seriesCSVs(name, pointsOf(m.Phases, name))
		if err != nil {
			return err
		}
		for f, b := range csvs {
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return fmt.Errorf("run directory: %w", err)
			}
		}
	}
	pdir := filepath.Join(dir, PlotsDir)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	for _, c := range runCharts(m) {
		for _, ext := range plot.Formats {
			if err := c.chart.Save(filepath.Join(pdir, c.file+ext)); err != nil {
				return err
			}
		}
	}
	// The summary lists the files, itself included.
	files, err := listFiles(dir)
	if err != nil {
		return err
	}
	if !contains(files, SummaryFile) {
		files = append(files, SummaryFile)
		sort.Strings(files)
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(Summary(m, files)), 0o644); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// listFiles returns the regular files under dir, relative and sorted,
// leaving out hidden temporaries.
func listFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	sort.Strings(files)
	return files, nil
}

// phaseNames lists the traffic phases' names in the order they first
// appear.
func phaseNames(points []Point) []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range points {
		if p.MPI != nil {
			continue // an mpi phase has its own section (MPIMarkdown)
		}
		if !seen[p.Name] {
			seen[p.Name] = true
			names = append(names, p.Name)
		}
	}
	return names
}

func pointsOf(points []Point, phase string) []Point {
	var out []Point
	for _, p := range points {
		if p.Name == phase {
			out = append(out, p)
		}
	}
	return out
}
