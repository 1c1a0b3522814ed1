package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/gpmetis"
	"github.com/ethfab/ethfab/emulator/plan"
	"github.com/ethfab/ethfab/emulator/resources"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/partition"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

func planCommand() *cli.Command {
	return &cli.Command{
		Name:  "plan",
		Usage: "compile a fabric's tables and count rules per switch (no root needed)",
		Description: `Builds the topology, lays out hierarchical pseudo-MACs, compiles every switch's
OpenFlow table and reports sizes and rule counts by kind (min / mean / max per switch).
--verify walks the tables for every ordered host pair (a seeded sample above --max-pairs),
a broadcast from every host, the DMP rule and the source guard of every host port.
--sweep reproduces seed 000 Table I and Fig. 4 / Fig. 6 as CSV and plots.

Examples:
  ethfab plan --topology dragonfly:p=4,a=8,h=4 --verify
  ethfab plan --topology flatfly:dims=15x15x15x6,t=15 --addressing per-group --compact --json
  ethfab plan --topology torus:dims=4x4,links=2 --verify
  ethfab plan --topology mesh:dims=4x4 --vlan-assign fixed --verify
  ethfab plan --topology torus:dims=4x4,links=2 --routing vlan --link-off s1-1:s2-1 --verify
  ethfab plan --topology torus:dims=6x6,links=2 --vlan-assign fixed --vlan-torus lines --verify
  ethfab plan --topology xgft:h=2,m=8x16,w=1x8 --routing shortest --verify
  ethfab plan --topology custom:switches=A+B+C,links=A-B+B-C+A-C,hosts=A:1+C:1 --verify
  ethfab plan --topology custom:switches=A+B+C,links=A-B+B-C,hosts=A:2+C:2 --routing shortest --flows Ah0:Ch0,Ah1:Ch1
  ethfab plan --sweep --out sweep/`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "dragonfly:p=P,a=A,h=H[,g=G] | flatfly:dims=K1xK2...,t=T | clos:k=K[,levels=3|4][,pods=N] | mesh:dims=K1xK2...[,t=T] | torus:dims=K1xK2...[,t=T][,links=1|2] | ring:n=N[,t=T][,links=1|2] | mtree:dims=K1xK2...[,t=T] | myriclos:n=N[,t=T] | fattree:u=U,d=D,r=R[,t=T] | xgft:h=H,m=M1xM2...,w=1xW2... | custom:switches=A+B+...,links=A-B+...,hosts=A:N+..."},
			&cli.StringFlag{Name: "addressing", Value: "per-group", Usage: "flat | per-switch | per-group (per-switch on mesh, torus, ring, mtree, myriclos and fattree, flat on xgft and custom, which have no groups)"},
			&cli.BoolFlag{Name: "compact", Usage: "compact routing rules into an optimal prefix table (coordinate sub-fields on Flattened Butterflies)"},
			&cli.StringFlag{Name: "routing", Value: "minimal", Usage: "minimal | valiant | conditional | qcn-switch | vlan | shortest"},
			&cli.BoolFlag{Name: "source-guard", Value: true, Usage: "compile each access switch's source guard, as up does (--source-guard=false: without)"},
			&cli.StringFlag{Name: "vlan-assign", Usage: "fixed | renamed: assign seed 002's switch-tagged VLANs (mesh, torus, ring, mtree, myriclos, fattree; default renamed with --routing vlan, which compiles them as 802.1Q bridges); --verify walks them"},
			&cli.StringFlag{Name: "vlan-torus", Value: "dateline", Usage: "dateline | lines: the VLAN paths on a torus with two links between neighbours: dateline, the shorter way round each ring, lane 0 until the wrap link and lane 1 from it; lines, each ring two lines, one per lane (lane 0 without the wrap link, lane 1 without the one half way round), each source on the nearer (seed 002 Table 3's 2k^(n-1) fixed VLANs at every k; not always the shortest paths)"},
			&cli.StringSliceFlag{Name: "link-off", Usage: "A:B: route the VLAN paths around the link between switches A and B, as `ethfab link LAB A B off` does in the safe order (repeatable)"},
			&cli.StringFlag{Name: "machines", Usage: "split the fabric across machines: N, local:N or NAME[:CORES],... (whole Dragonfly groups, Flattened Butterfly rows or Clos pods; other fabrics by gpmetis when installed, else region growing)"},
			&cli.StringFlag{Name: "flows", Usage: "SRC:DST[,SRC:DST...]: saturated flows between hosts (<switch>h<index>) of a custom or xgft fabric; prints each flow's max-min fair share under the static routing and over every adaptive (snoop-ar) choice, and a model of QCN's points alone on the static paths"},
			&cli.BoolFlag{Name: "verify", Usage: "walk the compiled tables (delivery, loops, hop bound, broadcast, DMP, source guard)"},
			&cli.Int64Flag{Name: "max-pairs", Value: 2_000_000, Usage: "verify all ordered pairs up to this many, else a random sample of this size"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the verify sample"},
			&cli.IntFlag{Name: "sample-switches", Usage: "compile only this many switches, evenly spread (0: all)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.BoolFlag{Name: "sweep", Usage: "reproduce Table I / Fig. 4 / Fig. 6 for 8..96-port switches"},
			&cli.StringFlag{Name: "out", Value: "plan-sweep", Usage: "with --sweep: directory for sweep.csv and the plots"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("sweep") {
				return runSweep(c)
			}
			if c.String("topology") == "" {
				return fmt.Errorf("--topology is required, e.g. --topology dragonfly:p=4,a=8,h=4")
			}
			spec, err := topology.ParseSpec(c.String("topology"))
			if err != nil {
				return fmt.Errorf("--topology: %w", err)
			}
			sc, err := addressing.ParseScheme(c.String("addressing"))
			if err != nil {
				return fmt.Errorf("--addressing: %w", err)
			}
			if !c.IsSet("addressing") {
				sc = addressing.DefaultScheme(spec.Kind)
			}
			mode, err := controller.ParseMode(c.String("routing"))
			if err != nil {
				return fmt.Errorf("--routing: %w", err)
			}
			var vm vlan.Method
			if c.IsSet("vlan-assign") {
				if vm, err = vlan.ParseMethod(c.String("vlan-assign")); err != nil {
					return fmt.Errorf("--vlan-assign: %w", err)
				}
			}
			tp, err := vlan.ParseTorus(c.String("vlan-torus"))
			if err != nil {
				return fmt.Errorf("--vlan-torus: %w", err)
			}
			if c.IsSet("vlan-torus") && vm == "" && mode != controller.VLAN {
				return fmt.Errorf("--vlan-torus: the VLAN paths' set needs --routing vlan or --vlan-assign")
			}
			if err := tp.For(spec); err != nil {
				return fmt.Errorf("--vlan-torus: %w", err)
			}
			var off [][2]string
			for _, l := range c.StringSlice("link-off") {
				a, b, ok := strings.Cut(l, ":")
				if !ok || a == "" || b == "" {
					return fmt.Errorf("--link-off %q: want A:B, two switch names", l)
				}
				off = append(off, [2]string{a, b})
			}
			flows, err := plan.ParseFlows(c.String("flows"))
			if err != nil {
				return fmt.Errorf("--flows: %w", err)
			}
			var machines []partition.Machine
			var graph partition.GraphSplitter
			if c.IsSet("machines") {
				if machines, err = partition.ParseMachines(c.String("machines")); err != nil {
					return fmt.Errorf("--machines: %w", err)
				}
				if g, ok := gpmetis.Find(); ok {
					graph = g
				}
			}
			avail, err := kernel.MemAvailableMiB()
			if err != nil {
				return err
			}
			// A plan that takes gigabytes says so before it starts.
			if e := resources.ForPlan(spec); e.MemoryMiB > 1024 {
				fmt.Fprintf(c.App.ErrWriter, "planning %s: about %.1f GiB of memory (%.1f GiB available), %d hosts, %d switch ports\n",
					spec, e.MemoryMiB/1024, avail/1024, e.Hosts, e.Ports)
			}
			r, err := plan.Run(plan.Options{Topology: spec, Scheme: sc, Compact: c.Bool("compact"), Mode: mode,
				Verify: c.Bool("verify"), MaxPairs: c.Int64("max-pairs"), Seed: c.Int64("seed"), SampleSize: c.Int("sample-switches"),
				SourceGuard: c.Bool("source-guard"), AvailableMiB: avail, VLAN: vm, VLANTorus: tp, LinksOff: off, Machines: machines, Graph: graph, Flows: flows})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				r.WriteText(c.App.Writer)
			}
			if v := r.Verify; v != nil && v.Failed() {
				return cli.Exit("verify failed", 2)
			}
			return nil
		},
	}
}

func runSweep(c *cli.Context) error {
	var progress io.Writer = c.App.ErrWriter
	if c.Bool("json") {
		progress = nil
	}
	rows, err := plan.Sweep(progress)
	if err != nil {
		return err
	}
	files, err := plan.WriteSweep(c.String("out"), rows)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return json.NewEncoder(c.App.Writer).Encode(map[string]any{"rows": rows, "files": files})
	}
	for _, f := range files {
		fmt.Fprintln(c.App.Writer, f)
	}
	return nil
}
