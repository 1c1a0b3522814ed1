package results

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// Graphviz draws a fabric's dot as SVG. CI installs it
// (scripts/provision.sh), so there a missing dot fails the test rather
// than skipping it.
func TestRenderDot(t *testing.T) {
	svg, err := RenderDot(context.Background(), "graph \"g\" {\n\t\"a\" -- \"b\" [class=local];\n}\n")
	if errors.Is(err, ErrNoGraphviz) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), ">a</text>") {
		t.Errorf("no SVG drawing of node a:\n%.300s", svg)
	}
	if _, err := RenderDot(context.Background(), "graph {"); err == nil || errors.Is(err, ErrNoGraphviz) {
		t.Errorf("a broken graph: %v, want dot's error", err)
	}
}
