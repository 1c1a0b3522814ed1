package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/scenario"
)

func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "print the JSON Schema of scenario files, for editors and validators (no root needed)",
		Description: `Prints the JSON Schema (draft 2020-12) of the scenario format this ethfab reads:
every field, its type, values and default, as scenario/schema.json in the source. Editors
that speak the YAML language server (VS Code's YAML extension, and others) validate and
complete a scenario whose first line names it:

  # yaml-language-server: $schema=../scenario/schema.json

The schema checks each field on its own; ethfab check also checks what depends on the
topology (host and switch names, times within a load, the routing a topology supports).

Examples:
  ethfab schema > scenario.schema.json
  ethfab schema -o ~/.config/ethfab/scenario.schema.json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to this file (default: standard output)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return fmt.Errorf("usage: ethfab schema [--output FILE]")
			}
			if p := c.String("output"); p != "" {
				return os.WriteFile(p, scenario.Schema(), 0o644)
			}
			_, err := c.App.Writer.Write(scenario.Schema())
			return err
		},
	}
}
