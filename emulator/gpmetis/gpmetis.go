// Package gpmetis splits a fabric's switch graph with METIS's gpmetis
// (Debian's metis package), when it is installed: fewer cut links than
// region growing on irregular graphs. It writes the graph to a temporary
// directory, runs the program, and reads the parts back.
package gpmetis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ethfab/ethfab/partition"
)

// Splitter runs gpmetis at Path.
type Splitter struct {
	Path string
}

// Find returns a Splitter for the gpmetis on PATH, or false.
func Find() (Splitter, bool) {
	p, err := exec.LookPath("gpmetis")
	if err != nil {
		return Splitter{}, false
	}
	return Splitter{Path: p}, true
}

// Name is "gpmetis".
func (Splitter) Name() string { return "gpmetis" }

// timeout bounds one run: METIS splits a million-edge graph in seconds.
const timeout = 2 * time.Minute

// Split runs gpmetis on g with the target part weights.
func (s Splitter) Split(g partition.Graph, targets []float64) ([]int, error) {
	n := len(g.Weights)
	if len(targets) == 1 {
		return make([]int, n), nil
	}
	dir, err := os.MkdirTemp("", "ethfab-gpmetis-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	graph := filepath.Join(dir, "fabric.graph")
	if err := os.WriteFile(graph, Encode(g), 0o600); err != nil {
		return nil, err
	}
	tp := filepath.Join(dir, "targets")
	var b bytes.Buffer
	for i, t := range targets {
		fmt.Fprintf(&b, "%d = %g\n", i, t)
	}
	if err := os.WriteFile(tp, b.Bytes(), 0o600); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, s.Path, "-tpwgts="+tp, graph, strconv.Itoa(len(targets))).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", s.Path, err, lastLines(out, 3))
	}
	f, err := os.ReadFile(fmt.Sprintf("%s.part.%d", graph, len(targets)))
	if err != nil {
		// METIS's own errors exit 0 and write no parts.
		return nil, fmt.Errorf("gpmetis wrote no parts (%w): %s", err, lastLines(out, 3))
	}
	return Decode(f, n, len(targets))
}

// Encode writes g in METIS's graph format: a header (vertices, edges,
// fmt 011: vertex and edge weights), then per vertex its weight and its
// neighbours (1-based) with their link counts. METIS wants positive
// vertex weights: a switch with no port (a lone switch) weighs 1.
func Encode(g partition.Graph) []byte {
	edges := 0
	for _, es := range g.Edges {
		edges += len(es)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %d 011\n", len(g.Weights), edges/2)
	for v, w := range g.Weights {
		b.WriteString(strconv.Itoa(max(w, 1)))
		for _, e := range g.Edges[v] {
			fmt.Fprintf(&b, " %d %d", e.To+1, e.Links)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Decode reads gpmetis's output: one part per line, a line per vertex.
func Decode(b []byte, vertices, parts int) ([]int, error) {
	out := make([]int, 0, vertices)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		p, err := strconv.Atoi(line)
		if err != nil || p < 0 || p >= parts {
			return nil, fmt.Errorf("gpmetis part %q on line %d: want 0 to %d", line, len(out)+1, parts-1)
		}
		if len(out) == vertices {
			return nil, fmt.Errorf("gpmetis gave more than %d parts", vertices)
		}
		out = append(out, p)
	}
	if len(out) != vertices {
		return nil, fmt.Errorf("gpmetis gave %d parts for %d switches", len(out), vertices)
	}
	return out, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "; ")
}
