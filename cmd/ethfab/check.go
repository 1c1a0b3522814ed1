package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/scenario"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "validate a scenario without building anything: its fields (file:line errors), the overrides, every case, the compiled tables, the machine's limits (no root needed)",
		ArgsUsage: "SCENARIO.yaml",
		Description: `Reads the scenario as run would, applies --set, and for it (or each of its cases)
compiles the topology, addresses and every switch's table, and checks that the fabric fits
this machine's memory and kernel limits. Nothing is created. Exits 1 with the errors, naming
file, line and field.

Examples:
  ethfab check scenarios/quickstart.yaml
  ethfab check scenarios/qcn-df-un.yaml --set links.local.rate=2mbit`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "set", Usage: "override a scenario field, PATH=VALUE (repeatable)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("usage: ethfab check SCENARIO.yaml [--set PATH=VALUE]")
			}
			sc, err := loadScenario(c, c.Args().First())
			if err != nil {
				return err
			}
			runs := []*scenario.Scenario{sc}
			names := []string{""}
			if len(sc.Cases) > 0 {
				runs, names = nil, nil
				for _, k := range sc.Cases {
					cs, err := sc.Case(k.Name)
					if err != nil {
						return err
					}
					runs, names = append(runs, cs), append(names, "case "+k.Name+": ")
				}
			}
			for i, s := range runs {
				comp, err := fabric.Compile(s)
				if err != nil {
					return fmt.Errorf("%s: %scompiling the tables: %w", sc.Source, names[i], err)
				}
				if err := fabric.FitsMachine(s); err != nil {
					return fmt.Errorf("%s%w", names[i], err)
				}
				rules := 0
				for _, t := range comp.Tables {
					rules += len(t.Rules)
				}
				fmt.Fprintf(c.App.Writer, "%sok: %s, %d hosts, %d switches, routing %s, %d rules, %d phase(s)\n",
					names[i], s.Topology, len(comp.Top.Hosts), len(comp.Top.Switches), s.Routing.Mode, rules, len(s.Phases))
			}
			return nil
		},
	}
}
