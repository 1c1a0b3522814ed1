package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/graph"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/topology"
)

func graphCommand() *cli.Command {
	return &cli.Command{
		Name:         "graph",
		Usage:        "draw a fabric: Graphviz dot, Mermaid, networkx node-link JSON or SVG (no root needed)",
		ArgsUsage:    "[LAB | RUN_DIR]",
		BashComplete: completeLab(nil),
		Description: `Draws the fabric of a topology spec, of a lab (its state), or of a run directory
(its topology.json): a node per switch and host, an edge per cable styled by class (host
links grey, local blue, global red and thick), and one cluster per Dragonfly group,
Flattened Butterfly row or Clos pod. json is networkx's node-link form
(nx.node_link_graph(json.load(f), edges="links")); svg runs Graphviz's dot.

Examples:
  ethfab graph --topology dragonfly:p=2,a=4,h=2 --format svg -o df.svg
  ethfab graph --topology clos:k=4 --format mermaid
  ethfab graph mylab --format json --no-hosts
  ethfab graph runs/quickstart-20261125-120000 --format dot | dot -Tpng -o fabric.png`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "a topology spec, as plan takes it (instead of LAB or RUN_DIR)"},
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "dot", Usage: "dot | mermaid | json | svg"},
			&cli.BoolFlag{Name: "no-hosts", Usage: "leave the hosts and their links out"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to this file (default: standard output)"},
		},
		Action: func(c *cli.Context) error {
			top, err := graphTopology(c)
			if err != nil {
				return err
			}
			o := graph.Options{NoHosts: c.Bool("no-hosts")}
			var out []byte
			if f := c.String("format"); f == "svg" {
				out, err = results.RenderDot(c.Context, graph.Dot(top, o))
			} else {
				out, err = graph.Render(top, f, o)
				if err != nil {
					err = fmt.Errorf("--format: %w", err)
				}
			}
			if err != nil {
				return err
			}
			if p := c.String("output"); p != "" {
				return os.WriteFile(p, out, 0o644)
			}
			_, err = c.App.Writer.Write(out)
			return err
		},
	}
}

// graphTopology builds the topology --topology names, or the one of the
// lab or run directory given as the argument.
func graphTopology(c *cli.Context) (*topology.Topology, error) {
	var spec topology.Spec
	switch arg := c.Args().First(); {
	case c.NArg() > 1:
		return nil, fmt.Errorf("one LAB or RUN_DIR, not %d arguments", c.NArg())
	case c.IsSet("topology") && arg != "":
		return nil, fmt.Errorf("give --topology or a LAB or RUN_DIR, not both")
	case c.IsSet("topology"):
		var err error
		if spec, err = topology.ParseSpec(c.String("topology")); err != nil {
			return nil, fmt.Errorf("--topology: %w", err)
		}
	case arg == "":
		return nil, fmt.Errorf("give --topology SPEC, a LAB or a RUN_DIR")
	case strings.ContainsRune(arg, os.PathSeparator) || isDir(arg):
		// A run directory: its topology.json is the lab it ran on.
		path := filepath.Join(arg, results.TopologyFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("run directory %s: %w", arg, err)
		}
		var lab fabric.Lab // topology.json is the lab's state, as lab.json
		if err := json.Unmarshal(b, &lab); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		spec = lab.Topology
	default:
		l, err := fabric.Load(arg)
		if err != nil {
			return nil, err
		}
		spec = l.Topology
	}
	top, err := topology.Build(spec)
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", spec, err)
	}
	return top, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
