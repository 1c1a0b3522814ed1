package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/cluster"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/gpmetis"
	"github.com/ethfab/ethfab/partition"
	"github.com/ethfab/ethfab/scenario"
)

// acrossFlags are up's and run's flags for a lab across machines.
func acrossFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "machines", Usage: "run across machines: local:N (N emulated on this one), or NAME[:CORES],... (ssh destinations, or Slurm nodes with --launcher srun); see `ethfab plan --machines`"},
		&cli.StringFlag{Name: "launcher", Usage: "how workers start on the machines: exec (local:N's default), ssh (named machines' default) or srun"},
		&cli.BoolFlag{Name: "emulated-underlay", Usage: "named machines are this one, joined by an emulated underlay as local:N's are (for testing the ssh path on one machine)"},
		&cli.StringFlag{Name: "ethfab", Value: "ethfab", Usage: "the ethfab command on the machines (ssh, srun), words split at spaces: e.g. \"sudo -n ethfab\" for a login that is not root"},
		&cli.StringFlag{Name: "ssh-config", Usage: "an ssh configuration file to use instead of ~/.ssh/config (ssh -F)"},
		&cli.IntFlag{Name: "underlay-mtu", Usage: "emulated machines' underlay MTU (default 9000; 1500 shows what a LAN without jumbo frames does to 1,500-byte links)"},
	}
}

// clocksFlag is run's choice of how latency is taken across machines.
var clocksFlag = &cli.StringFlag{Name: "clocks", Value: string(cluster.ClocksAuto), Usage: "across machines, one-way latency by: one (emulated machines' one clock), wall (the machines' wall clocks, synchronized: PTP), local (within a machine only), auto (one on emulated machines, wall where ethfab doctor's clock check passes on every machine, else local)"}

// acrossOptions reads acrossFlags: nil without --machines (and then no
// other of them may be set).
func acrossOptions(c *cli.Context) (*cluster.Options, error) {
	if !c.IsSet("machines") {
		for _, f := range []string{"launcher", "emulated-underlay", "ethfab", "underlay-mtu", "ssh-config"} {
			if c.IsSet(f) {
				return nil, fmt.Errorf("--%s applies with --machines", f)
			}
		}
		return nil, nil
	}
	if err := flagInRange(c, "instances", 0, scenario.MaxInstances); err != nil {
		return nil, err
	}
	spec := c.String("machines")
	machines, err := partition.ParseMachines(spec)
	if err != nil {
		return nil, fmt.Errorf("--machines: %w", err)
	}
	emulated := strings.HasPrefix(spec, "local:")
	o := &cluster.Options{Machines: machines, Emulated: emulated || c.Bool("emulated-underlay"), Ethfab: c.String("ethfab"), Instances: c.Int("instances"),
		UnderlayMTU: c.Int("underlay-mtu"), SSHConfig: c.String("ssh-config")}
	switch {
	case c.IsSet("launcher"):
		if o.Launcher, err = cluster.ParseLauncher(c.String("launcher")); err != nil {
			return nil, fmt.Errorf("--launcher: %w", err)
		}
	case emulated:
		o.Launcher = cluster.Exec
	default:
		o.Launcher = cluster.SSH
	}
	if o.SSHConfig != "" {
		// Down and ping read it from the lab's state, from anywhere.
		if o.SSHConfig, err = filepath.Abs(o.SSHConfig); err != nil {
			return nil, fmt.Errorf("--ssh-config: %w", err)
		}
	}
	if g, ok := gpmetis.Find(); ok {
		o.Graph = g
	}
	return o, nil
}

// upAcross is `ethfab up --machines`: the lab split across machines.
func upAcross(c *cli.Context) error {
	o, err := acrossOptions(c)
	if err != nil {
		return err
	}
	sc, err := loadScenario(c, c.Args().First())
	if err != nil {
		return err
	}
	ctx, stop := interruptible(0)
	defer stop()
	if !c.Bool("json") {
		d := newStepDisplay(c.App.ErrWriter)
		defer d.Close()
		o.Report = d
	}
	lab, err := cluster.Up(ctx, sc, *o)
	if err != nil {
		return err
	}
	return printUp(c, lab)
}

// withoutParts drops from labs the parts of labs across machines that
// are in labs too: their coordinator's down removes them.
func withoutParts(labs []string) []string {
	in := map[string]bool{}
	for _, l := range labs {
		in[l] = true
	}
	var out []string
	for _, l := range labs {
		if s, err := fabric.Load(l); err == nil && s.Part != nil && in[s.Part.Lab] {
			continue
		}
		out = append(out, l)
	}
	return out
}
