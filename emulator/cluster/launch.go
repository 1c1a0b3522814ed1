package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/ethfab/ethfab/emulator/fabric"
)

// Launchers: how the coordinator runs `ethfab worker` on a machine.
const (
	// Exec runs it on this machine, for emulated machines: the same
	// worker, plans and protocol as on real ones, only the transport
	// differs.
	Exec = "exec"
	// SSH runs it with ssh, which honours the user's ~/.ssh/config
	// (users, keys, jump hosts); BatchMode, so a missing key fails
	// instead of asking for a password nobody will type.
	SSH = "ssh"
	// Srun runs it as a one-task step of the Slurm allocation the
	// coordinator runs in, pinned to the machine (--nodelist).
	Srun = "srun"
)

// ParseLauncher checks a launcher name.
func ParseLauncher(s string) (string, error) {
	switch s {
	case Exec, SSH, Srun:
		return s, nil
	}
	return "", fmt.Errorf("%q: want exec, ssh or srun", s)
}

// command is ethfab on machine m with args, run by m's launcher: exec
// runs this very executable; ssh and srun m.Ethfab, words split at
// spaces (e.g. "sudo -n ethfab", for a login that is not root).
func command(ctx context.Context, m fabric.MachineState, args ...string) (*exec.Cmd, error) {
	ethfab := strings.Fields(m.Ethfab)
	if len(ethfab) == 0 {
		ethfab = []string{"ethfab"}
	}
	var cmd *exec.Cmd
	switch m.Launcher {
	case Exec:
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("the ethfab executable: %w", err)
		}
		cmd = exec.CommandContext(ctx, self, args...)
	case SSH:
		// ssh joins its arguments into one line for the remote shell:
		// each is quoted, so a name never splits or expands there.
		var remote []string
		for _, a := range append(ethfab, args...) {
			remote = append(remote, shellQuote(a))
		}
		opts := []string{"-T", "-o", "BatchMode=yes"}
		if m.SSHConfig != "" {
			opts = append(opts, "-F", m.SSHConfig)
		}
		cmd = exec.CommandContext(ctx, "ssh", append(opts, "--", m.Name, strings.Join(remote, " "))...)
	case Srun:
		cmd = exec.CommandContext(ctx, "srun", append(append([]string{"--nodes=1", "--ntasks=1", "--nodelist=" + m.Name, "--quiet", "--"}, ethfab...), args...)...)
	default:
		return nil, fmt.Errorf("launcher %q: want exec, ssh or srun", m.Launcher)
	}
	return cmd, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
