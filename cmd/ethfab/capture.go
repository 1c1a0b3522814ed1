package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/capture"
	"github.com/ethfab/ethfab/emulator/fabric"
)

func captureCommand() *cli.Command {
	return &cli.Command{
		Name:         "capture",
		Usage:        "record the frames on a host's link, a switch port or a link between two switches, as pcap or one line per frame",
		ArgsUsage:    "LAB HOST|SWITCH:PORT|SWITCH-SWITCH",
		BashComplete: completeLab(func(l *fabric.Lab) []string { return append(hostNames(l), switchNames(l)...) }),
		Description: `Listens in the right namespace on the interface the name denotes: a host's own
interface, a switch's end of its port's link, or switch A's end of its link to switch B.
It sees what arrives and what leaves, each frame stamped by the kernel. Without -w it
prints one line per frame; -w FILE writes pcap (nanosecond stamps), -w - streams it.
Ctrl-C or -c N ends it.

Examples:
  ethfab capture df-small g0s0h0 -c 10
  ethfab capture df-small g0s0:5 -w g0s0-5.pcap
  ethfab capture df-small g0s0-g1s0 -w - | wireshark -k -i -
  ethfab capture df-small g0s0h0 -w - | tshark -r - -X lua_script:...`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "count", Aliases: []string{"c"}, Usage: "stop after this many frames (0: until Ctrl-C)"},
			&cli.StringFlag{Name: "write", Aliases: []string{"w"}, Usage: "write pcap to this file (- for standard output)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fmt.Errorf("want LAB and what to capture (HOST, SWITCH:PORT or SWITCH-SWITCH), got %d arguments", c.NArg())
			}
			if c.Int("count") < 0 {
				return fmt.Errorf("--count %d: want 0 (no limit) or more", c.Int("count"))
			}
			l, err := loadLab(c.Args().Get(0))
			if err != nil {
				return err
			}
			if err := l.OnOneMachine("ethfab capture"); err != nil {
				return err
			}
			p, err := capture.Resolve(l, c.Args().Get(1))
			if err != nil {
				return err
			}
			var w capture.Writer = capture.Text{W: c.App.Writer}
			info := c.App.ErrWriter
			switch f := c.String("write"); f {
			case "":
				info = io.Discard
			case "-":
				if w, err = capture.NewPcap(os.Stdout); err != nil {
					return err
				}
			default:
				out, err := os.Create(f)
				if err != nil {
					return err
				}
				defer out.Close()
				if w, err = capture.NewPcap(out); err != nil {
					return err
				}
			}
			cs, err := capture.Open(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(info, "capturing on %s (%s in netns %s)\n", p.Name, p.Iface, p.NetNS)
			ctx, stop := interruptible(0)
			defer stop()
			n, err := cs.Run(ctx, c.Int("count"), w)
			fmt.Fprintf(info, "%d frames\n", n)
			return err
		},
	}
}
