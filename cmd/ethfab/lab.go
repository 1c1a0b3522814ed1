package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/cluster"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/scenario"
)

func loadScenario(c *cli.Context, path string) (*scenario.Scenario, error) {
	sc, err := scenario.Load(path)
	if err != nil {
		return nil, err
	}
	for _, kv := range c.StringSlice("set") {
		p, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--set %q: want PATH=VALUE", kv)
		}
		if err := sc.Set(p, v); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

func upCommand() *cli.Command {
	return &cli.Command{
		Name:      "up",
		Usage:     "bring a scenario's fabric up: namespaces, veths, tc shaping, private Open vSwitch, rules",
		ArgsUsage: "SCENARIO.yaml",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "set", Usage: "override a scenario field, PATH=VALUE (repeatable)"},
			&cli.IntFlag{Name: "instances", Usage: "private ovs-vswitchd instances sharing the bridges (0: one per 500 ports, at most 8); eBPF datapath: fabric namespaces (0: one per 256 ports)"},
			&cli.BoolFlag{Name: "json", Usage: "quiet; print the lab's status as JSON"},
		}, acrossFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("usage: ethfab up SCENARIO.yaml")
			}
			if c.IsSet("machines") {
				return upAcross(c)
			}
			if _, err := acrossOptions(c); err != nil {
				return err
			}
			if err := flagInRange(c, "instances", 0, scenario.MaxInstances); err != nil {
				return err
			}
			sc, err := loadScenario(c, c.Args().First())
			if err != nil {
				return err
			}
			ctx, stop := interruptible(0)
			defer stop()
			o := fabric.UpOptions{Instances: c.Int("instances")}
			if !c.Bool("json") {
				d := newStepDisplay(c.App.ErrWriter)
				defer d.Close()
				o.Report = d
			}
			lab, err := fabric.Up(ctx, sc, o)
			if err != nil {
				return err
			}
			return printUp(c, lab)
		},
	}
}

// printUp says what `up` brought up (--json: the lab's status).
func printUp(c *cli.Context, lab *fabric.Lab) error {
	if c.Bool("json") {
		return printJSON(c, lab)
	}
	for _, w := range lab.Warnings {
		fmt.Fprintln(c.App.ErrWriter, "warning:", w)
	}
	across := ""
	if len(lab.Machines) > 0 {
		across = fmt.Sprintf(" across %d machines", len(lab.Machines))
	}
	fmt.Fprintf(c.App.Writer, "lab %s is up%s: %d hosts, %d switches, %d links in %.2fs\n  ethfab status %s | ethfab exec %s %s -- ip link | ethfab ping %s --all | ethfab down %s\n",
		lab.Lab, across, len(lab.Hosts), len(lab.Switches), len(lab.Links), lab.Timing["total"], lab.Lab, lab.Lab, lab.Hosts[0].Name, lab.Lab, lab.Lab)
	return nil
}

func downCommand() *cli.Command {
	return &cli.Command{
		Name:         "down",
		Usage:        "remove everything a lab made (works after a crash; a lab that does not exist is an error)",
		ArgsUsage:    "[LAB...]",
		BashComplete: completeLabs,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "remove every ethfab lab"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object: removed (lab, seconds) and errors"}},
		Action: func(c *cli.Context) error {
			type removed struct {
				Lab     string  `json:"lab"`
				Seconds float64 `json:"seconds"`
			}
			out := struct {
				Removed []removed `json:"removed"`
				Errors  []string  `json:"errors"`
			}{Removed: []removed{}, Errors: []string{}}
			labs := c.Args().Slice()
			if c.Bool("all") {
				all, err := fabric.List()
				if err != nil {
					return err
				}
				labs = all
				if len(labs) == 0 {
					if c.Bool("json") {
						if err := printJSON(c, out); err != nil {
							return err
						}
					} else {
						fmt.Fprintln(c.App.Writer, "no labs")
					}
					// A down killed after removing the last lab leaves
					// host settings to the next down: this one.
					return fabric.RestoreHostSettings()
				}
			} else {
				if len(labs) == 0 {
					return fmt.Errorf("usage: ethfab down LAB... | ethfab down --all")
				}
				// Every name is checked before anything is removed.
				for i, l := range labs {
					if err := checkLab(fmt.Sprintf("LAB %d", i+1), l); err != nil {
						return err
					}
				}
			}
			if c.Bool("all") {
				labs = withoutParts(labs)
			}
			var errs []error
			for _, l := range labs {
				t := time.Now()
				if err := cluster.Down(context.Background(), l, steps.Lines(c.App.ErrWriter)); err != nil {
					errs = append(errs, fmt.Errorf("down %s: %w", scenario.Abbrev(l), err))
					out.Errors = append(out.Errors, errs[len(errs)-1].Error())
					continue
				}
				out.Removed = append(out.Removed, removed{l, time.Since(t).Seconds()})
				if !c.Bool("json") {
					fmt.Fprintf(c.App.Writer, "lab %s removed (%.2fs)\n", l, time.Since(t).Seconds())
				}
			}
			if c.Bool("json") {
				if err := printJSON(c, out); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
}

// flagInRange checks an integer flag, when given, against lo..hi.
func flagInRange(c *cli.Context, name string, lo, hi int) error {
	if v := c.Int(name); c.IsSet(name) && (v < lo || v > hi) {
		return fmt.Errorf("--%s: %d is out of range %d..%d", name, v, lo, hi)
	}
	return nil
}

// checkLab checks a lab name given on the command line, naming the
// argument or flag it came from.
// loadLab reads the state of the lab the LAB argument names.
func loadLab(name string) (*fabric.Lab, error) {
	if err := checkLab("LAB", name); err != nil {
		return nil, err
	}
	return fabric.Load(name)
}

// interruptible is a context that Ctrl-C or SIGTERM cancels, and, with d
// above zero, d ends.
func interruptible(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if d <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); stop() }
}

func checkLab(what, name string) error {
	if err := scenario.CheckLabName(name); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:         "status",
		Usage:        "show a lab's hosts, switches, links and Open vSwitch instance (all labs without LAB)",
		ArgsUsage:    "[LAB]",
		BashComplete: completeLab(nil),
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				labs, err := fabric.List()
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c, map[string]any{"labs": labs})
				}
				if len(labs) == 0 {
					fmt.Fprintln(c.App.Writer, "no labs")
				}
				for _, l := range labs {
					lab, err := fabric.Load(l)
					if err != nil {
						fmt.Fprintf(c.App.Writer, "%s\t(unreadable: %v)\n", l, err)
						continue
					}
					where := ""
					if len(lab.Machines) > 0 {
						where = fmt.Sprintf("\tacross %d machines", len(lab.Machines))
					} else if p := lab.Part; p != nil {
						where = fmt.Sprintf("\tpart of %s on machine %s", p.Lab, p.Machine)
					}
					fmt.Fprintf(c.App.Writer, "%s\t%s\t%s\t%d hosts\t%d switches%s\n", l, lab.State, lab.Topology, len(lab.Hosts), len(lab.Switches), where)
				}
				return nil
			}
			lab, err := loadLab(c.Args().First())
			if err != nil {
				return err
			}
			if err := fabric.RefreshFlows(context.Background(), lab); err != nil {
				fmt.Fprintln(c.App.ErrWriter, "warning: reading flow counts:", err)
			}
			if c.Bool("json") {
				return printJSON(c, lab)
			}
			w := tabwriter.NewWriter(c.App.Writer, 2, 4, 2, ' ', 0)
			compact := ""
			if lab.Compact {
				compact = " compact"
			}
			fmt.Fprintf(w, "lab %s (%s): %s, addressing %s%s, assign %s, routing %s\n", lab.Lab, lab.State, lab.Topology, lab.Addressing, compact, lab.Assign, lab.Routing)
			if lab.State != "up" {
				for _, warning := range lab.Warnings {
					fmt.Fprintln(w, "warning:", warning)
				}
			}
			if b := lab.BPF; b != nil {
				fabs := map[string]bool{}
				for _, s := range lab.Switches {
					fabs[s.NetNS] = true
				}
				fmt.Fprintf(w, "eBPF datapath: program %d on every switch port in %d namespace(s), flow cache %s, maps conditions %d, counters %d (bpftool prog show id %d)\n",
					b.Program, len(fabs), orUnknown(lab.OVS.FlowCache), b.Conditions, b.Counters, b.Program)
			} else {
				fmt.Fprintf(w, "ovs %s, %s datapath, %d instance(s), flow cache %s, malloc %s, run dir %s\n", lab.OVS.Version, lab.OVS.Datapath,
					len(lab.OVS.Instances), orUnknown(lab.OVS.FlowCache), orUnknown(lab.OVS.Allocator), lab.OVS.RunDir)
			}
			for _, in := range lab.OVS.Instances {
				fmt.Fprintf(w, "  db %s (netns %s)\n", in.DB, in.NetNS)
			}
			// What ethfab link changed since up.
			for _, p := range lab.LinksOff {
				fmt.Fprintf(w, "link %s-%s: off\n", p[0], p[1])
			}
			for _, r := range lab.LinkRates {
				fmt.Fprintf(w, "link %s-%s: at %s\n", r.Link[0], r.Link[1], rate.Format(r.RateBps))
			}
			for _, p := range lab.VLANOff {
				fmt.Fprintf(w, "link %s-%s: VLAN paths avoid it\n", p[0], p[1])
			}
			for _, m := range lab.Machines {
				fmt.Fprintf(w, "machine %s (%s, underlay %s): part %s, %d switches, %d hosts, %d cut links\n", m.Name, m.Launcher, m.Addr, m.Part, m.Switches, m.Hosts, m.CutLinks)
			}
			if p := lab.Part; p != nil {
				fmt.Fprintf(w, "part of lab %s on machine %s\n", p.Lab, p.Machine)
			}
			fmt.Fprintln(w, "\nHOST\tNETNS\tMAC\tIP\tSWITCH\tPORT\tMACHINE")
			for _, h := range lab.Hosts {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", h.Name, h.NetNS, h.MAC, h.IP, h.Switch, h.Port, orDash(h.Machine))
			}
			fmt.Fprintln(w, "\nSWITCH\tPORTS\tRULES\tMGMT\tMACHINE")
			for _, s := range lab.Switches {
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", s.Name, s.Ports, s.Flows, s.Mgmt, orDash(s.Machine))
			}
			fmt.Fprintf(w, "\n%d links; `ethfab status %s --json` lists them with their shaping\n", len(lab.Links), lab.Lab)
			return w.Flush()
		},
	}
}

func execCommand() *cli.Command {
	return &cli.Command{
		Name:         "exec",
		Usage:        "run a command inside a host's namespace",
		ArgsUsage:    "LAB HOST -- CMD [ARGS...]",
		BashComplete: completeLab(hostNames),
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) > 2 && args[2] == "--" {
				args = append(args[:2], args[3:]...)
			}
			if len(args) < 3 {
				return fmt.Errorf("usage: ethfab exec LAB HOST -- CMD [ARGS...]")
			}
			lab, err := loadLab(args[0])
			if err != nil {
				return err
			}
			h := lab.Host(args[1])
			if h == nil {
				return fmt.Errorf("lab %s has no host %s", lab.Lab, scenario.Abbrev(args[1]))
			}
			cmd := exec.Command("ip", append([]string{"netns", "exec", h.NetNS}, args[2:]...)...)
			if len(lab.Machines) > 0 {
				if cmd, err = cluster.ExecIn(context.Background(), lab, h, args[2:]); err != nil {
					return err
				}
			}
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				if ee, ok := err.(*exec.ExitError); ok {
					return cli.Exit("", ee.ExitCode())
				}
				return err
			}
			return nil
		},
	}
}

func printJSON(c *cli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func pingCommand() *cli.Command {
	return &cli.Command{
		Name:         "ping",
		Usage:        "check reachability with real frames sent from the hosts through the fabric; lists every unreachable pair",
		ArgsUsage:    "LAB",
		BashComplete: completeLab(nil),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "every ordered host pair (the default)"},
			&cli.IntFlag{Name: "sample", Usage: "this many random ordered pairs instead"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the sample"},
			&cli.IntFlag{Name: "broadcast", Usage: "also send a broadcast from this many hosts (drawn from --seed; all when it covers them) and check each reaches every other host exactly once and never its source"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("usage: ethfab ping LAB [--all | --sample N] [--broadcast N]")
			}
			// --sample 0 or below would silently mean every pair.
			if err := flagInRange(c, "sample", 1, math.MaxInt32); err != nil {
				return err
			}
			if err := flagInRange(c, "broadcast", 1, math.MaxInt32); err != nil {
				return err
			}
			lab, err := loadLab(c.Args().First())
			if err != nil {
				return err
			}
			ctx, stop := interruptible(0)
			defer stop()
			ping := func() (*fabric.PingReport, error) { return fabric.Ping(ctx, lab, c.Int("sample"), c.Int64("seed")) }
			if len(lab.Machines) > 0 {
				ping = func() (*fabric.PingReport, error) {
					return cluster.Ping(ctx, lab, c.Int("sample"), c.Int64("seed"), steps.Lines(c.App.ErrWriter))
				}
			}
			r, err := ping()
			if err != nil {
				return err
			}
			if c.IsSet("broadcast") {
				if r.Broadcast, err = fabric.Broadcast(ctx, lab, c.Int("broadcast"), c.Int64("seed")); err != nil {
					return err
				}
			}
			if c.Bool("json") {
				if err := printJSON(c, r); err != nil {
					return err
				}
			} else {
				w := c.App.Writer
				for _, u := range r.Unreachable {
					fmt.Fprintf(w, "unreachable: %s -> %s\n", u.Src, u.Dst)
				}
				fmt.Fprintf(w, "%d of %d pairs reachable (%.2fs)\n", r.Reached, r.Pairs, r.Seconds)
				if b := r.Broadcast; b != nil {
					for _, u := range b.Missing {
						fmt.Fprintf(w, "broadcast missing: %s -> %s\n", u.Src, u.Dst)
					}
					for _, u := range b.Duplicated {
						fmt.Fprintf(w, "broadcast duplicated: %s -> %s\n", u.Src, u.Dst)
					}
					for _, h := range b.Returned {
						fmt.Fprintf(w, "broadcast returned to its source: %s\n", h)
					}
					fmt.Fprintf(w, "%d broadcasts: %d of %d deliveries, %d duplicated, %d returned (%.2fs)\n",
						b.Sources, b.Delivered, b.Expected, len(b.Duplicated), len(b.Returned), b.Seconds)
				}
			}
			if len(r.Unreachable) > 0 || r.Broadcast != nil && !r.Broadcast.OK() {
				return cli.Exit("", 2)
			}
			return nil
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// orUnknown keeps status readable for labs brought up by older versions.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
