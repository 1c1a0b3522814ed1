package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/results"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "render a run directory's plots and summary.md again from its metrics.json",
		ArgsUsage: "DIR",
		Flags:     []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON object: dir, points, files, fidelity, failed expectations"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("report: want one run directory, got %d arguments", c.NArg())
			}
			dir := c.Args().First()
			files, err := results.Render(dir)
			if err != nil {
				return err
			}
			m, err := results.Load(dir)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, map[string]any{"dir": dir, "points": len(m.Phases), "files": files,
					"fidelity": m.Fidelity, "failed": nonNil(m.Failed())})
			}
			fmt.Fprintf(c.App.Writer, "%s: %d points, %d files\n", dir, len(m.Phases), len(files))
			if !m.Fidelity.OK {
				fmt.Fprintln(c.App.Writer, "fidelity: UNTRUSTWORTHY")
				for _, r := range m.Fidelity.Reasons {
					fmt.Fprintln(c.App.Writer, "  -", r)
				}
			}
			if f := m.Failed(); len(f) > 0 {
				fmt.Fprintf(c.App.Writer, "expectations: %d of %d failed\n", len(f), len(m.Expectations))
			}
			fmt.Fprintf(c.App.Writer, "summary: %s/%s\n", dir, results.SummaryFile)
			return nil
		},
	}
}

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "overlay several runs (e.g. minimal against valiant routing) in one plot set",
		ArgsUsage: "DIR...",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "compare", Usage: "directory for compare.md and plots/compare-*"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object: out, series, files"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return fmt.Errorf("compare: want at least one run directory")
			}
			cmp, err := results.Compare(c.Args().Slice(), c.String("out"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, map[string]any{"out": c.String("out"), "series": cmp.Series, "files": cmp.Files})
			}
			fmt.Fprintf(c.App.Writer, "%d series (%v), %d files in %s\n", len(cmp.Series), cmp.Series, len(cmp.Files), c.String("out"))
			return nil
		},
	}
}

// nonNil keeps an empty list a list in JSON ([] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
