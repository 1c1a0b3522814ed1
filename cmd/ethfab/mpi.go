package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/mpi"
)

var mpiHostFlags = []cli.Flag{
	&cli.StringFlag{Name: "hosts", Usage: "comma-separated host names, in rank order (default: every host of the lab)"},
	&cli.IntFlag{Name: "slots", Value: 1, Usage: "ranks per host"},
}

func hostfileCommand() *cli.Command {
	return &cli.Command{
		Name:         "hostfile",
		Usage:        "print an Open MPI hostfile naming the lab's hosts",
		ArgsUsage:    "LAB",
		BashComplete: completeLab(nil),
		Flags:        mpiHostFlags,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("want one LAB, got %d arguments", c.NArg())
			}
			lab, err := loadUpLab(c.Args().First())
			if err != nil {
				return err
			}
			text, err := mpi.Hostfile(lab, splitHosts(c.String("hosts")), c.Int("slots"))
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, text)
			return err
		},
	}
}

func mpirunCommand() *cli.Command {
	return &cli.Command{
		Name:         "mpirun",
		Usage:        "run an MPI program on the lab's hosts, ranks talking TCP over the fabric",
		ArgsUsage:    "LAB -- PROGRAM [ARGS...]",
		BashComplete: completeLab(nil),
		Description: `Runs Open MPI's mpirun in the first host's namespace and starts a daemon on
every other host through ethfab's launch agent (in place of ssh): each in its host's
network namespace, named after the host, with the lab's hosts in /etc/hosts. Ranks
talk TCP over the hosts' interfaces, so their traffic crosses the emulated switches
(ethfab status LAB shows the rules' counters). Ranks run at idle priority: Open MPI
polls, and a polling rank must not take the CPU the switches need.

Examples:
  ethfab mpirun df-small -- ethfab-mpibench pingpong
  ethfab mpirun df-small -np 8 --hosts g0s0h0,g4s3h1 --slots 4 -- ethfab-mpibench alltoall`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "np", Usage: "number of ranks (default: hosts × slots)"},
			&cli.StringSliceFlag{Name: "mca", Usage: "an Open MPI parameter, NAME=VALUE (repeatable)"},
			&cli.BoolFlag{Name: "cpu", Usage: "print the CPU time mpirun, its launch agents, daemons and ranks took (standard error)"},
			&cli.DurationFlag{Name: "timeout", Usage: "stop the job after this long (mpirun, then whatever of it is left), exit status 124"},
		}, mpiHostFlags...),
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) > 1 && args[1] == "--" {
				args = append(args[:1], args[2:]...)
			}
			if len(args) < 2 {
				return fmt.Errorf("usage: ethfab mpirun LAB [-np N] -- PROGRAM [ARGS...]")
			}
			lab, err := loadUpLab(args[0])
			if err != nil {
				return err
			}
			mca := map[string]string{}
			for _, kv := range c.StringSlice("mca") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--mca %q: want NAME=VALUE", kv)
				}
				mca[k] = v
			}
			job, err := mpi.Prepare(lab, mpi.Options{Program: args[1:], Hosts: splitHosts(c.String("hosts")),
				Slots: c.Int("slots"), NP: c.Int("np"), MCA: mca})
			if err != nil {
				return err
			}
			defer job.Close()
			ctx, stop := interruptible(c.Duration("timeout"))
			defer stop()
			cmd := job.Command(ctx)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, c.App.Writer, c.App.ErrWriter
			err = cmd.Run()
			// The launch agents and daemons outlive mpirun by a moment:
			// wait for them, so nothing of the job runs on after this
			// (Close ends what is still there).
			if werr := job.Wait(10 * time.Second); werr != nil {
				fmt.Fprintf(c.App.ErrWriter, "ethfab mpirun: %v\n", werr)
			}
			if c.Bool("cpu") {
				switch cpu, cerr := job.CPU(); {
				case cerr != nil:
					fmt.Fprintf(c.App.ErrWriter, "ethfab mpirun: the job's CPU time: %v\n", cerr)
				case cpu >= 0:
					fmt.Fprintf(c.App.ErrWriter, "ethfab mpirun: the job took %.2f s of CPU\n", cpu)
				default:
					fmt.Fprintf(c.App.ErrWriter, "ethfab mpirun: no cgroup v2 hierarchy here: the job's CPU time is not measured\n")
				}
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return cli.Exit(fmt.Sprintf("ethfab mpirun: the job did not finish within %s", c.Duration("timeout")), 124)
			}
			if errors.Is(err, exec.ErrWaitDelay) {
				err = nil // mpirun exited 0; something it left held the output
			}
			if err != nil {
				if ee, ok := err.(*exec.ExitError); ok {
					if code := ee.ExitCode(); code >= 0 {
						return cli.Exit("", code)
					}
					return fmt.Errorf("mpirun: %v", ee) // killed by a signal
				}
				return err
			}
			return nil
		},
	}
}

// loadUpLab is the running lab the LAB argument names: MPI needs its
// hosts' namespaces.
func loadUpLab(name string) (*fabric.Lab, error) {
	lab, err := loadLab(name)
	if err != nil {
		return nil, err
	}
	if err := lab.OnOneMachine("ethfab mpi"); err != nil {
		return nil, err
	}
	if lab.State != "up" {
		return nil, fmt.Errorf("lab %s is %s, not up", lab.Lab, lab.State)
	}
	return lab, nil
}

func splitHosts(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
