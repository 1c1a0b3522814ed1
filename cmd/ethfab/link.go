package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/power"
)

func linkCommand() *cli.Command {
	return &cli.Command{
		Name:      "link",
		Usage:     "turn the link between two switches of a running lab off or on (seed 002's on/off link regulation)",
		ArgsUsage: "LAB A B off|on",
		Description: `Off takes both veth ends of every link between switches A and B down at once;
on brings them up, after the switch's wake-up time with --profile (seed 002 Table 6:
PC5324 3.2 s, PC6224 2.6 s, PC6248 2.2 s, SF-420 1.2 s) or --hold. A and B are switch
names as ethfab status lists them. Routing is left as it is: pairs whose paths cross
the link lose their frames while it is off (seed 002's safe order is not built).

Example:
  ethfab link mylab s0 s1 off
  ethfab link mylab s0 s1 on --profile PC5324`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "profile", Usage: "hold a link turned on down for this switch's Table 6 on/off time: PC5324, PC6224, PC6248 or SF-420"},
			&cli.DurationFlag{Name: "hold", Usage: "hold a link turned on down this long first (instead of --profile)"},
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
				p, err := power.Profile(c.String("profile"))
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
			links, err := lab.SwitchLinks(a, b)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			t0 := time.Now()
			if err := fabric.SetLinks(ctx, links, on, hold); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "%s-%s: %d link(s) %s after %.2fs\n", a, b, len(links), c.Args().Get(3), time.Since(t0).Seconds())
			return nil
		},
	}
}
