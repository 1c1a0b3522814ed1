package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/cluster"
	"github.com/ethfab/ethfab/internal/steps"
)

// workerCommand is the machine's side of a lab across machines, which the
// coordinator (`ethfab up --machines`) runs there: not for people.
func workerCommand() *cli.Command {
	return &cli.Command{
		Name:   "worker",
		Usage:  "one machine's part of a lab across machines, run by `ethfab up --machines` over exec, ssh or srun",
		Hidden: true,
		Subcommands: []*cli.Command{
			{
				Name:  "up",
				Usage: "build the part planned on standard input (a JSON line); its end cancels",
				Flags: []cli.Flag{&cli.StringFlag{Name: "machine", Required: true, Usage: "this machine's name in the plan"}},
				Action: func(c *cli.Context) error {
					ctx, stop := interruptible(0)
					defer stop()
					return cluster.WorkerUp(ctx, c.String("machine"), os.Stdin, c.App.Writer, steps.Lines(c.App.ErrWriter))
				},
			},
			{
				Name:      "down",
				Usage:     "remove part K of lab LAB (one that is not there is no error; a lab of that name that is not that part is left alone)",
				ArgsUsage: "PART",
				Flags: []cli.Flag{&cli.StringFlag{Name: "of", Required: true, Usage: "the lab across machines the part belongs to"},
					&cli.IntFlag{Name: "index", Required: true, Usage: "the part's machine index in that lab"}},
				Action: func(c *cli.Context) error {
					if err := partArg(c, "down"); err != nil {
						return err
					}
					if err := checkLab("--of", c.String("of")); err != nil {
						return err
					}
					left, err := cluster.WorkerDown(c.Args().First(), c.String("of"), c.Int("index"))
					if left != "" {
						fmt.Fprintln(c.App.ErrWriter, left)
					}
					return err
				},
			},
			{
				Name:      "traffic",
				Usage:     "this machine's traffic engine and sampler in a run across machines, spoken in JSON lines",
				ArgsUsage: "PART",
				Action: func(c *cli.Context) error {
					if err := partArg(c, "traffic"); err != nil {
						return err
					}
					ctx, stop := interruptible(0)
					defer stop()
					return cluster.WorkerTraffic(ctx, c.Args().First(), os.Stdin, c.App.Writer)
				},
			},
			{
				Name:      "agents",
				Usage:     "this machine's host agents in a DMP or announcement phase across machines, spoken in JSON lines",
				ArgsUsage: "PART",
				Action: func(c *cli.Context) error {
					if err := partArg(c, "agents"); err != nil {
						return err
					}
					ctx, stop := interruptible(0)
					defer stop()
					return cluster.WorkerAgents(ctx, c.Args().First(), os.Stdin, c.App.Writer)
				},
			},
			{
				Name:      "ping",
				Usage:     "this machine's side of a ping across machines, spoken in JSON lines",
				ArgsUsage: "PART",
				Action: func(c *cli.Context) error {
					if err := partArg(c, "ping"); err != nil {
						return err
					}
					ctx, stop := interruptible(0)
					defer stop()
					return cluster.WorkerPing(ctx, c.Args().First(), os.Stdin, c.App.Writer)
				},
			},
		},
	}
}

// partArg checks a worker subcommand's one argument, the part's name.
func partArg(c *cli.Context, sub string) error {
	if c.NArg() != 1 {
		return fmt.Errorf("usage: ethfab worker %s PART", sub)
	}
	return checkLab("PART", c.Args().First())
}
