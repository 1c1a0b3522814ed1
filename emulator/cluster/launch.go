package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
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

// command is ethfab on machine m, run by launcher with args: ethfab is
// the command there (ssh, srun); exec runs this very executable.
func command(ctx context.Context, launcher, ethfab, m string, args ...string) (*exec.Cmd, error) {
	var cmd *exec.Cmd
	switch launcher {
	case Exec:
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("the ethfab executable: %w", err)
		}
		cmd = exec.CommandContext(ctx, self, args...)
	case SSH:
		// ssh joins its arguments into one line for the remote shell:
		// each is quoted, so a name never splits or expands there.
		remote := []string{shellQuote(ethfab)}
		for _, a := range args {
			remote = append(remote, shellQuote(a))
		}
		cmd = exec.CommandContext(ctx, "ssh", "-T", "-o", "BatchMode=yes", "--", m, strings.Join(remote, " "))
	case Srun:
		cmd = exec.CommandContext(ctx, "srun", append([]string{"--nodes=1", "--ntasks=1", "--nodelist=" + m, "--quiet", "--", ethfab}, args...)...)
	default:
		return nil, fmt.Errorf("launcher %q: want exec, ssh or srun", launcher)
	}
	// A cancelled coordinator ends its workers gently first: a worker in
	// the middle of `up` rolls its part back on SIGTERM.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = workerGrace
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
