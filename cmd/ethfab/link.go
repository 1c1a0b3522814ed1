package main

import (
	"context"
	"fmt"
	"github.com/ethfab/ethfab/switchprofile"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/fabric"
)

func linkCommand() *cli.Command {
	return &cli.Command{
		Name:      "link",
		Usage:     "turn the link between two switches of a running lab off or on (seed 002's on/off link regulation)",
		ArgsUsage: "LAB A B off|on",
		Description: `Off takes both veth ends of every link between switches A and B down at once;
on brings them up, after the switch's wake-up time with --profile (seed 002 Table 6:
PC5324 3.2 s, PC6224 2.6 s, PC6248 2.2 s, SF-420 1.2 s) or --hold. A and B are switch
names as ethfab status lists them.

--order safe (the default on a lab routed by VLANs, the only one it applies to) is
seed 002's: before a link goes off, every switch's VLAN paths are recomputed around
it (north-last on a two-dimensional mesh) and installed; after it comes on, they are
recomputed with it. --order unsafe leaves routing as it is: pairs whose paths cross
the link lose their frames while it is off.

Example:
  ethfab link mylab s1-1 s2-1 off
  ethfab link mylab s1-1 s2-1 on --profile PC5324`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "profile", Usage: "hold a link turned on down for this switch's Table 6 on/off time: PC5324, PC6224, PC6248 or SF-420"},
			&cli.DurationFlag{Name: "hold", Usage: "hold a link turned on down this long first (instead of --profile)"},
			&cli.StringFlag{Name: "order", Usage: "safe (move VLAN paths off the link first; the default with routing vlan) | unsafe (leave routing as it is; the default otherwise)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 4 || (c.Args().Get(3) != "off" && c.Args().Get(3) != "on") {
				return fmt.Errorf("usage: ethfab link LAB A B off|on")
			}
			name, a, b, on := c.Args().Get(0), c.Args().Get(1), c.Args().Get(2), c.Args().Get(3) == "on"
			if err := checkLab("LAB", name); err != nil {
				return err
			}
			hold := c.Duration("hold")
			switch {
			case c.IsSet("profile") && c.IsSet("hold"):
				return fmt.Errorf("--profile and --hold: give one")
			case c.IsSet("profile"):
				p, err := switchprofile.Profile(c.String("profile"))
				if err != nil {
					return fmt.Errorf("--profile: %w", err)
				}
				hold = p.OnOff
			case hold < 0:
				return fmt.Errorf("--hold %v: must not be negative", hold)
			}
			if !on && hold > 0 {
				return fmt.Errorf("--profile and --hold apply to on: a link goes off at once")
			}
			lab, err := fabric.Load(name)
			if err != nil {
				return err
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
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
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
