package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/doctor"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check what this machine offers (Open vSwitch, kernel module, qdiscs, namespaces, tools) and what ethfab will do with it",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
		Action: func(c *cli.Context) error {
			r := doctor.Run(context.Background())
			if c.Bool("json") {
				b, err := r.JSON()
				if err != nil {
					return err
				}
				fmt.Fprintln(c.App.Writer, string(b))
			} else {
				fmt.Fprint(c.App.Writer, r.Text())
			}
			if !r.OK() {
				return cli.Exit("ethfab cannot run here (see above)", 1)
			}
			return nil
		},
	}
}
