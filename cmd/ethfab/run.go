package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/cluster"
	"github.com/ethfab/ethfab/emulator/run"
	"github.com/ethfab/ethfab/results"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a scenario end to end: bring the lab up, run its phases, measure, tear down, write a run directory",
		ArgsUsage: "SCENARIO.yaml",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "set", Usage: "override a scenario field for this run, PATH=VALUE (repeatable), e.g. routing.mode=valiant"},
			&cli.StringFlag{Name: "lab", Usage: "run on this running lab instead of bringing one up"},
			&cli.BoolFlag{Name: "keep", Usage: "leave the lab up after the run"},
			&cli.StringFlag{Name: "out", Usage: "run directory (default runs/<scenario>-<time>)"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress; print only the run directory"},
			&cli.BoolFlag{Name: "json", Usage: "no progress; print one JSON object: dir, fidelity, failed expectations (per case with cases)"},
		}, append(acrossFlags(), clocksFlag)...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("usage: ethfab run SCENARIO.yaml")
			}
			if c.IsSet("lab") {
				if err := checkLab("--lab", c.String("lab")); err != nil {
					return err
				}
			}
			sc, err := loadScenario(c, c.Args().First())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			across, err := acrossOptions(c)
			if err != nil {
				return err
			}
			clocks, err := cluster.ParseClocks(c.String("clocks"))
			if err != nil {
				return fmt.Errorf("--clocks: %w", err)
			}
			o := run.Options{Lab: c.String("lab"), Keep: c.Bool("keep"), Out: c.String("out"), Version: version, Warn: c.App.ErrWriter, Across: across,
				Clocks: clocks}
			if !c.Bool("quiet") && !c.Bool("json") {
				d := newStepDisplay(c.App.ErrWriter)
				defer d.Close()
				o.Report = d
			}
			out, err := run.Run(ctx, sc, o)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if err := printJSON(c, outcomeJSON(out)); err != nil {
					return err
				}
			} else {
				if !c.Bool("quiet") {
					fmt.Fprint(c.App.Writer, out.Brief())
				}
				// The run directory is the last line, for scripts.
				fmt.Fprintln(c.App.Writer, out.Dir)
			}
			if failed := out.Failed(); len(failed) > 0 {
				return cli.Exit(fmt.Sprintf("%d expectation(s) failed", len(failed)), 1)
			}
			return nil
		},
	}
}

// runJSON is `ethfab run --json`: where the run went, whether it is to
// be trusted, what failed; each case the same.
type runJSON struct {
	Dir      string            `json:"dir"`
	Case     string            `json:"case,omitempty"`
	Fidelity *results.Fidelity `json:"fidelity,omitempty"`
	Failed   []string          `json:"failed"`
	Cases    []runJSON         `json:"cases,omitempty"`
}

func outcomeJSON(o *run.Outcome) runJSON {
	j := runJSON{Dir: o.Dir, Case: o.Case, Failed: nonNil(o.Failed())}
	if o.Metrics != nil {
		j.Fidelity = &o.Metrics.Fidelity
	}
	for _, c := range o.Cases {
		j.Cases = append(j.Cases, outcomeJSON(c))
	}
	return j
}
