package results

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrNoGraphviz: SVG drawings of a fabric need Graphviz's dot.
var ErrNoGraphviz = errors.New("an SVG needs Graphviz's dot, which is not installed (apt-get install graphviz; scripts/provision.sh installs it)")

// RenderDot draws a Graphviz graph (graph.Dot) as SVG with Graphviz's
// dot: ErrNoGraphviz when it is not installed.
func RenderDot(ctx context.Context, dot string) ([]byte, error) {
	path, err := exec.LookPath("dot")
	if err != nil {
		return nil, ErrNoGraphviz
	}
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("dot -Tsvg: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
