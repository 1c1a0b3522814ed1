package main

import (
	"fmt"
	"github.com/ethfab/ethfab/switchprofile"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/power"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/topology"
)

func powerCommand() *cli.Command {
	return &cli.Command{
		Name:  "power",
		Usage: "network power by component: seed 000 §VI-A's Fig. 11 and the 54.1 % (no root needed)",
		Description: `Prices every switch as CPU and logic, ports (optical between switches, electrical
to hosts), buffer memories at the worst-case 64-byte packet rate and the forwarding table (TCAM,
or CAM for traditional flat Ethernet), and sums the network.
--paper: the paper's three ~300,000-host networks × cam-flat, flat, per-switch, per-group and
compact, the saving against the Folded-Clos CAM-flat and its decomposition (compaction, topology).
--topology: any fabric ethfab can plan, from its own compiled tables; the reference is its CAM-flat.
Every result is printed with its constants (and their sources) and assumptions.

Examples:
  ethfab power --paper --out power/
  ethfab power --paper --json
  ethfab power --topology dragonfly:p=4,a=8,h=4
  ethfab power --topology flatfly:dims=8x8,t=8 --compact --json
  ethfab power --paper --constants mine.yaml --tcam-model tcam32nm.csv
--lab LAB --profile NAME: seed 002's model instead (Table 2): a running lab's switches as
PC5324, PC6224, PC6248 or SF-420, base plus active ports, with the links ethfab link
turned off, against every port on.
  ethfab power --lab mylab --profile PC5324`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "paper", Usage: "Fig. 11: the paper's networks and counts"},
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "dragonfly:p=P,a=A,h=H[,g=G] | flatfly:dims=K1xK2...,t=T | clos:k=K[,levels=3|4][,pods=N]"},
			&cli.StringFlag{Name: "addressing", Usage: "with --topology, only this organization (and the reference): cam-flat | flat | per-switch | per-group"},
			&cli.BoolFlag{Name: "compact", Usage: "with --topology, only the compact (per-group, ORTC) organization (and the reference)"},
			&cli.StringFlag{Name: "constants", Usage: "YAML or JSON file overriding constants by name (see the constants printed)"},
			&cli.StringFlag{Name: "tcam-model", Usage: "CSV of entries,watts: a measured TCAM curve replacing tcam_w_per_entry"},
			&cli.IntFlag{Name: "sample-switches", Usage: "compile only this many switches per organization, evenly spread (0: all; flat tables of large fabrics are sampled)"},
			&cli.StringFlag{Name: "lab", Usage: "a running lab, priced by seed 002's switch profiles (with --profile)"},
			&cli.StringFlag{Name: "profile", Usage: "with --lab: PC5324, PC6224, PC6248 or SF-420"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.StringFlag{Name: "out", Usage: "also write power.json, summary.md and fig11.{png,svg,pdf} here"},
		},
		Action: func(c *cli.Context) error {
			if c.IsSet("lab") || c.IsSet("profile") {
				return powerLab(c)
			}
			if c.Bool("paper") == (c.String("topology") != "") {
				return fmt.Errorf("give --paper, --topology SPEC or --lab LAB --profile NAME")
			}
			if c.Bool("paper") && (c.String("addressing") != "" || c.Bool("compact")) {
				// Fig. 11 is every organization; a silently ignored flag would mislead
				return fmt.Errorf("--addressing and --compact go with --topology; --paper prices every organization")
			}
			consts, portsSet, err := powerConstants(c)
			if err != nil {
				return err
			}
			progress := steps.Lines(c.App.ErrWriter)
			if c.Bool("json") {
				progress = nil
			}
			var r *power.Report
			if c.Bool("paper") {
				r, err = power.Paper(power.PaperOptions{Constants: consts, SampleSwitches: c.Int("sample-switches"), Report: progress})
			} else {
				r, err = powerFabric(c, consts, portsSet, progress)
			}
			if err != nil {
				return err
			}
			return writePower(c, r)
		},
	}
}

// powerConstants are the defaults with the --constants file and the
// --tcam-model curve applied; portsSet says the file gave switch_ports.
func powerConstants(c *cli.Context) (power.Constants, bool, error) {
	consts := power.Default()
	set := map[string]bool{}
	if f := c.String("constants"); f != "" {
		fc, err := power.LoadConstants(f)
		if err != nil {
			return consts, false, err
		}
		consts, set = fc.Constants, fc.Set
	}
	if f := c.String("tcam-model"); f != "" {
		cv, err := power.LoadTCAMCurve(f)
		if err != nil {
			return consts, false, err
		}
		consts = consts.WithTCAMCurve(cv, set["cam_w_per_entry"])
	}
	return consts, set["switch_ports"], nil
}

func powerFabric(c *cli.Context, consts power.Constants, portsSet bool, progress steps.Reporter) (*power.Report, error) {
	spec, err := topology.ParseSpec(c.String("topology"))
	if err != nil {
		return nil, fmt.Errorf("--topology: %w", err)
	}
	var orgs []power.Organization
	switch a := c.String("addressing"); {
	case c.Bool("compact") && a != "" && a != "per-group":
		return nil, fmt.Errorf("--compact compacts per-group tables; drop --addressing %s", a)
	case c.Bool("compact"):
		orgs = []power.Organization{power.Compact}
	case a != "":
		o, err := power.ParseOrganization(a)
		if err != nil {
			return nil, fmt.Errorf("--addressing: %w", err)
		}
		orgs = []power.Organization{o}
	}
	return power.Fabric(power.FabricOptions{Topology: spec, Constants: consts, SwitchPortsSet: portsSet,
		Organizations: orgs, SampleSwitches: c.Int("sample-switches"), Report: progress})
}

func writePower(c *cli.Context, r *power.Report) error {
	var files []string
	if dir := c.String("out"); dir != "" {
		var err error
		if files, err = r.WriteDir(dir); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return printJSON(c, r)
	}
	r.WriteText(c.App.Writer)
	for _, f := range files {
		fmt.Fprintln(c.App.Writer, f)
	}
	return nil
}

// powerLab prices a running lab's switches by a seed 002 profile.
func powerLab(c *cli.Context) error {
	if !c.IsSet("lab") || !c.IsSet("profile") || c.Bool("paper") || c.IsSet("topology") {
		return fmt.Errorf("--lab LAB --profile NAME go together, without --paper or --topology")
	}
	if err := checkLab("--lab", c.String("lab")); err != nil {
		return err
	}
	p, err := switchprofile.Profile(c.String("profile"))
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	lab, err := fabric.Load(c.String("lab"))
	if err != nil {
		return err
	}
	if err := lab.OnOneMachine("ethfab power --lab"); err != nil {
		return err
	}
	names := make([]string, len(lab.Switches))
	for i, s := range lab.Switches {
		names[i] = s.Name
	}
	speeds, err := lab.PortSpeeds()
	if err != nil {
		return err
	}
	r, err := switchprofile.PriceSwitches(p, names, speeds)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, r)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "lab %s as %s switches (seed 002 Table 2: base + active ports at their speeds, the built rate standing for 1 Gb/s), links off: %v, rates set: %v\n",
		lab.Lab, p.Name, lab.LinksOff, lab.LinkRates)
	for _, s := range r.Switches {
		fmt.Fprintf(w, "  %-10s %2d of %2d ports (%d slowed)  %6.1f W\n", s.Switch, s.Active, s.Ports, s.Slowed, s.Watts)
	}
	fmt.Fprintf(w, "  total %.1f W, with every port on %.1f W: %.1f%% saved\n", r.Watts, r.AllOnW, 100*r.Saving)
	return nil
}
