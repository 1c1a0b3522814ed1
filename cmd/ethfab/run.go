package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/run"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a scenario end to end: bring the lab up, run its phases, measure, tear down, write a run directory",
		ArgsUsage: "SCENARIO.yaml",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "set", Usage: "override a scenario field for this run, PATH=VALUE (repeatable), e.g. routing.mode=valiant"},
			&cli.StringFlag{Name: "lab", Usage: "run on this running lab instead of bringing one up"},
			&cli.BoolFlag{Name: "keep", Usage: "leave the lab up after the run"},
			&cli.StringFlag{Name: "out", Usage: "run directory (default runs/<scenario>-<time>)"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress; print only the run directory"},
		},
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
			o := run.Options{Lab: c.String("lab"), Keep: c.Bool("keep"), Out: c.String("out"), Version: version, Warn: c.App.ErrWriter}
			if !c.Bool("quiet") {
				d := newStepDisplay(c.App.ErrWriter)
				defer d.Close()
				o.Report = d
			}
			out, err := run.Run(ctx, sc, o)
			if err != nil {
				return err
			}
			if !c.Bool("quiet") {
				fmt.Fprint(c.App.Writer, out.Brief())
			}
			// The run directory is the last line, for scripts.
			fmt.Fprintln(c.App.Writer, out.Dir)
			if failed := out.Failed(); len(failed) > 0 {
				return cli.Exit(fmt.Sprintf("%d expectation(s) failed", len(failed)), 1)
			}
			return nil
		},
	}
}
