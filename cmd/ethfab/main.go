// Command ethfab builds emulated commodity-Ethernet HPC fabrics on Open
// vSwitch and network namespaces. This file only wires flags to packages.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	app := &cli.App{
		Name:    "ethfab",
		Usage:   "emulate commodity-Ethernet HPC fabrics (Dragonfly, Flattened Butterfly, folded-Clos) on Open vSwitch",
		Version: version,
		Commands: []*cli.Command{
			planCommand(),
			versionCommand(),
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "ethfab:", err)
		os.Exit(1)
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print ethfab's version",
		Action: func(c *cli.Context) error {
			fmt.Fprintln(c.App.Writer, "ethfab", version)
			return nil
		},
	}
}
