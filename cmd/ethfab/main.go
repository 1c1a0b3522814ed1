// Command ethfab builds emulated commodity-Ethernet HPC fabrics on Open
// vSwitch and network namespaces. This file only wires flags to packages.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/kernel"
)

// version and commit are set at build time with -ldflags "-X
// main.version=... -X main.commit=..." (make build); commit otherwise
// comes from Go's build information where the build recorded it.
var (
	version = "0.1.0-dev"
	commit  = ""
)

// StateDirEnv moves the labs' state (default /run/ethfab): a second set
// of labs on one machine, or a test's.
const StateDirEnv = "ETHFAB_STATE_DIR"

// stateDirFromEnv applies StateDirEnv.
func stateDirFromEnv() error {
	if d := os.Getenv(StateDirEnv); d != "" {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("%s=%q: want an absolute path", StateDirEnv, d)
		}
		fabric.StateRoot = filepath.Clean(d)
	}
	return nil
}

func main() {
	if err := stateDirFromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "ethfab:", err)
		os.Exit(1)
	}
	kernel.RaiseFileLimit()
	app := newApp()
	if err := app.Run(flagsFirst(app, os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "ethfab:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	cli.VersionPrinter = printVersion
	return &cli.App{
		Name:    "ethfab",
		Usage:   "emulate commodity-Ethernet HPC fabrics (Dragonfly, Flattened Butterfly, folded-Clos) on Open vSwitch",
		Version: version,
		// --set values are YAML: "loads=[0.1, 0.2]" must reach the
		// scenario whole, not split at its commas.
		DisableSliceFlagSeparator: true,
		// ethfab completion: the scripts ask for the words.
		EnableBashCompletion: true,
		Commands: []*cli.Command{
			planCommand(),
			graphCommand(),
			powerCommand(),
			doctorCommand(),
			upCommand(),
			downCommand(),
			statusCommand(),
			execCommand(),
			pingCommand(),
			hostfileCommand(),
			mpirunCommand(),
			linkCommand(),
			captureCommand(),
			agentCommand(),
			runCommand(),
			checkCommand(),
			schemaCommand(),
			reportCommand(),
			compareCommand(),
			completionCommand(),
			manCommand(),
			versionCommand(),
			workerCommand(),
		},
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print ethfab's version (--json: with its commit, Go's and Open vSwitch's)",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON object: version, commit, modified, go, ovs"}},
		Action: func(c *cli.Context) error {
			if c.Bool("json") {
				return printVersionJSON(c)
			}
			printVersion(c)
			return nil
		},
	}
}

// printVersion is the one version line of `ethfab version` and
// `ethfab --version` alike (urfave/cli's own says "ethfab version X"), so a
// script reads the same line from either.
func printVersion(c *cli.Context) {
	fmt.Fprintln(c.App.Writer, c.App.Name, c.App.Version)
}

// flagsFirst moves a subcommand's flags ahead of its arguments, so that
// `ethfab status LAB --json` works as people type it (urfave/cli stops
// parsing flags at the first argument). Everything after "--" is left alone.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 3 || args[len(args)-1] == "--generate-bash-completion" {
		// A completion request must stay last, where urfave/cli looks
		// for it (ethfab completion).
		return args
	}
	var cmd *cli.Command
	for _, c := range app.Commands {
		if c.HasName(args[1]) {
			cmd = c
		}
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		// A command with subcommands (worker) takes its flags after the
		// subcommand's name, where its callers put them.
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var flags, rest []string
	in := args[2:]
	for i := 0; i < len(in); i++ {
		a := in[i]
		if a == "--" {
			rest = append(rest, in[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(in) {
			i++
			flags = append(flags, in[i])
		}
	}
	out := append([]string{args[0], args[1]}, flags...)
	return append(out, rest...)
}
