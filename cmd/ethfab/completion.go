package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
)

// The shell scripts ask ethfab itself for the words (urfave/cli's
// --generate-bash-completion), so lab and host names come from the
// labs' state. Adapted from urfave/cli v2's autocomplete/ (MIT).
const bashCompletion = `# ethfab completion for bash: source <(ethfab completion bash)
_ethfab_complete() {
  local cur words cword
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion -n "=:" || return
  else
    words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
  fi
  words=("${words[@]:0:$cword}")
  local request="${words[*]} --generate-bash-completion"
  if [[ "$cur" == "-"* ]]; then
    request="${words[*]} ${cur} --generate-bash-completion"
  fi
  COMPREPLY=($(compgen -W "$(eval "${request}" 2>/dev/null)" -- "${cur}"))
}
complete -o bashdefault -o default -o nospace -F _ethfab_complete ethfab
`

const zshCompletion = `#compdef ethfab
# ethfab completion for zsh: source <(ethfab completion zsh)
_ethfab_complete() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _ethfab_complete ethfab
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script (lab, host and switch names included)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Examples:
  source <(ethfab completion bash)          # or put it in /etc/bash_completion.d/ethfab
  source <(ethfab completion zsh)
  ethfab completion fish > ~/.config/fish/completions/ethfab.fish`,
		Action: func(c *cli.Context) error {
			var script string
			switch c.Args().First() {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				var err error
				if script, err = c.App.ToFishCompletion(); err != nil {
					return err
				}
			default:
				return fmt.Errorf("want bash, zsh or fish, got %q", c.Args().First())
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}

func manCommand() *cli.Command {
	return &cli.Command{
		Name:  "man",
		Usage: "print ethfab's manual page (roff): ethfab man > ethfab.1; man ./ethfab.1",
		Action: func(c *cli.Context) error {
			page, err := c.App.ToMan()
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, page)
			return err
		},
	}
}

// completeLab completes a command's LAB argument with the labs' names
// and, with then, its next argument from the lab's state.
func completeLab(then func(l *fabric.Lab) []string) cli.BashCompleteFunc {
	return func(c *cli.Context) {
		switch c.NArg() {
		case 0:
			completeLabs(c)
		case 1:
			if then != nil {
				if l, err := fabric.Load(c.Args().First()); err == nil {
					printWords(c, then(l))
				}
			}
		}
	}
}

// completeLabs completes every argument with the labs' names (down).
func completeLabs(c *cli.Context) {
	labs, _ := fabric.List()
	printWords(c, labs)
}

func printWords(c *cli.Context, words []string) {
	for _, w := range words {
		fmt.Fprintln(c.App.Writer, w)
	}
}

func hostNames(l *fabric.Lab) []string {
	var out []string
	for _, h := range l.Hosts {
		out = append(out, h.Name)
	}
	return out
}

func switchNames(l *fabric.Lab) []string {
	var out []string
	for _, s := range l.Switches {
		out = append(out, s.Name)
	}
	return out
}

// versionInfo is `ethfab version --json`.
type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Modified: the binary was built from a tree with uncommitted changes.
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	// OVS is `ovs-vswitchd --version`'s, where it is installed.
	OVS string `json:"ovs,omitempty"`
}

func readVersion(v string) versionInfo {
	info := versionInfo{Version: v, Commit: commit, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if out, err := exec.Command("ovs-vswitchd", "--version").Output(); err == nil {
		// "ovs-vswitchd (Open vSwitch) 3.1.0"
		line, _, _ := strings.Cut(string(out), "\n")
		info.OVS = line[strings.LastIndex(line, " ")+1:]
	}
	return info
}

func printVersionJSON(c *cli.Context) error {
	b, err := json.MarshalIndent(readVersion(c.App.Version), "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(c.App.Writer, string(b))
	return err
}
