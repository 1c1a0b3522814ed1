package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/switchprofile"
)

func linkCommand() *cli.Command {
	return &cli.Command{
		Name:         "link",
		Usage:        "turn the link between two switches of a running lab off or on, or change its rate (seed 002's on/off and multispeed link regulation)",
		ArgsUsage:    "LAB A B off|on|rate RATE|avoid|use",
		BashComplete: completeLab(switchNames),
		Description: `Off takes both veth ends of every link between switches A and B down at once;
on brings them up, after the switch's wake-up time with --profile (seed 002 Table 6:
PC5324 3.2 s, PC6224 2.6 s, PC6248 2.2 s, SF-420 1.2 s) or --hold. A and B are switch
names as ethfab status lists them.

rate RATE sets both ends' tbf to RATE (the queue keeps its size). Seed 002's speeds
are 1 Gb/s, 100 Mb/s and 10 Mb/s: the rate the link was built with stands for 1 Gb/s,
a tenth of it for 100 Mb/s, a hundredth for 10 Mb/s. With --profile the link loses
carrier for the switch's Table 6 time of that speed change (PC5324 1G to 100M: 4.1 s),
with --hold for that long; routing stays as it is.

avoid moves a VLAN-routed lab's paths off the link, leaving it on, and use moves them
back (seed 002's path modification, Table 7): each switch's new tables go in as one
OpenFlow bundle.

--order safe (the default on a lab routed by VLANs, the only one it applies to) is
seed 002's: before a link goes off, every switch's VLAN paths are recomputed around
it (north-last on a two-dimensional mesh with renamed VLANs, each switch's tree repaired
with fixed ones, up*/down* elsewhere) and installed; after it comes on, they are
recomputed with it. --order unsafe leaves routing as it is: pairs whose paths cross
the link lose their frames while it is off.

Example:
  ethfab link mylab s1-1 s2-1 off
  ethfab link mylab s1-1 s2-1 on --profile PC5324
  ethfab link mylab s1-1 s2-1 rate 5mbit --profile PC5324`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "profile", Usage: "hold a link turned on (or changing speed) down for this switch's Table 6 time: PC5324, PC6224, PC6248 or SF-420"},
			&cli.DurationFlag{Name: "hold", Usage: "hold a link turned on (or changing speed) down this long first (instead of --profile)"},
			&cli.StringFlag{Name: "order", Usage: "safe (move VLAN paths off the link first; the default with routing vlan) | unsafe (leave routing as it is; the default otherwise)"},
		},
		Action: func(c *cli.Context) error {
			op := c.Args().Get(3)
			if !(c.NArg() == 4 && (op == "off" || op == "on" || op == "avoid" || op == "use")) && !(c.NArg() == 5 && op == "rate") {
				return fmt.Errorf("usage: ethfab link LAB A B off|on|rate RATE|avoid|use")
			}
			name, a, b, on := c.Args().Get(0), c.Args().Get(1), c.Args().Get(2), op == "on"
			if err := checkLab("LAB", name); err != nil {
				return err
			}
			hold := c.Duration("hold")
			switch {
			case c.IsSet("profile") && c.IsSet("hold"):
				return fmt.Errorf("--profile and --hold: give one")
			case hold < 0:
				return fmt.Errorf("--hold %v: must not be negative", hold)
			}
			if (op == "off" || op == "avoid" || op == "use") && (hold > 0 || c.IsSet("profile")) {
				return fmt.Errorf("--profile and --hold apply to on and rate: a link goes off, and paths move, at once")
			}
			if (op == "avoid" || op == "use") && c.IsSet("order") {
				return fmt.Errorf("--order applies to off and on")
			}
			lab, err := fabric.Load(name)
			if err != nil {
				return err
			}
			if err := lab.OnOneMachine("ethfab link"); err != nil {
				return err
			}
			ctx, stop := interruptible(0)
			defer stop()
			switch op {
			case "rate":
				return linkRate(ctx, c, lab, a, b, c.Args().Get(4), hold)
			case "avoid", "use":
				t0 := time.Now()
				if err := fabric.AvoidLink(ctx, lab, a, b, op == "avoid"); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "%s-%s: paths %s the link after %.2fs\n", a, b, op, time.Since(t0).Seconds())
				return nil
			}
			if c.IsSet("profile") {
				p, err := switchprofile.Profile(c.String("profile"))
				if err != nil {
					return fmt.Errorf("--profile: %w", err)
				}
				hold = p.OnOff
			}
			order := c.String("order")
			switch {
			case order == "" && lab.Routing == controller.VLAN:
				order = "safe"
			case order == "":
				order = "unsafe"
			case order != "safe" && order != "unsafe":
				return fmt.Errorf("--order %q: want safe or unsafe", order)
			}
			t0 := time.Now()
			links, err := fabric.SwitchLink(ctx, lab, a, b, on, hold, order == "safe")
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "%s-%s: %d link(s) %s in the %s order after %.2fs\n", a, b, len(links), c.Args().Get(3), order, time.Since(t0).Seconds())
			return nil
		},
	}
}

// linkRate is ethfab link ... rate RATE: the hold is --hold, or the
// profile's Table 6 time for the speed change the two rates stand for.
func linkRate(ctx context.Context, c *cli.Context, lab *fabric.Lab, a, b, arg string, hold time.Duration) error {
	if c.IsSet("order") {
		return fmt.Errorf("--order applies to off and on: a speed change moves no paths")
	}
	to, err := rate.Parse(arg)
	if err != nil || to == 0 {
		return fmt.Errorf("RATE %q: want a rate such as 5mbit (%v)", arg, err)
	}
	if c.IsSet("profile") {
		p, err := switchprofile.Profile(c.String("profile"))
		if err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		from, built, err := lab.LinkRate(a, b)
		if err != nil {
			return err
		}
		if hold, err = p.SpeedChangeHold(from, to, built); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
	}
	t0 := time.Now()
	links, err := fabric.SetLinkRate(ctx, lab, a, b, to, hold)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%s-%s: %d link(s) at %s after %.2fs\n", a, b, len(links), rate.Format(to), time.Since(t0).Seconds())
	return nil
}
