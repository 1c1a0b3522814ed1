package ovs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ethfab/ethfab/kernel"
)

// CallTimeout bounds every ovs-ofctl and ovs-appctl call. A call talks to
// a daemon of the lab over a unix socket; when the daemon is wedged or
// dead the tools can wait for ever (ovs-ofctl dump-flows with the lab's
// ovsdb-server killed never returned), and a run must fail naming the
// daemon instead. The largest legitimate call, one bundle of a 1,056-host
// Dragonfly switch's ~60 rules or the whole 14,254-rule lab read back in
// parallel, takes well under a second here; a minute leaves room for a
// loaded machine.
var CallTimeout = time.Minute

// call runs an OVS tool with CallTimeout and returns its stdout; the
// error carries stderr and, on a timeout, says which socket did not
// answer.
func call(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s %s: no answer within %v (is the lab's ovs-vswitchd alive? ethfab status)", name, strings.Join(args, " "), CallTimeout)
		}
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Appctl sends a unixctl command to the ovs-vswitchd running in runDir
// (ovs-appctl -t RUNDIR/ovs-vswitchd.ctl ARGS...) and returns its answer.
func Appctl(ctx context.Context, runDir string, args ...string) (string, error) {
	out, err := call(ctx, "ovs-appctl", append([]string{"-t", filepath.Join(runDir, switchCtl)}, args...)...)
	return string(out), err
}

// Dead names the daemons of the instance in runDir that are not running:
// "ovsdb-server (pid N)", "ovs-vswitchd (pid N)". A run checks it while
// traffic flows, so a daemon that dies fails the run at once and by name
// rather than as missing frames or a hung call.
func Dead(runDir string) []string {
	var dead []string
	for _, d := range []struct{ name, pidfile string }{{"ovsdb-server", dbPid}, {"ovs-vswitchd", switchPid}} {
		pid := readPid(filepath.Join(runDir, d.pidfile))
		if pid == 0 {
			dead = append(dead, d.name+" (no pidfile)")
		} else if !processAlive(pid, runDir) {
			dead = append(dead, fmt.Sprintf("%s (pid %d)", d.name, pid))
		}
	}
	return dead
}

// StopOrphans stops every ovsdb-server and ovs-vswitchd whose command line
// names a run directory under root — a lab's daemons found by what they
// were started with, when the pidfiles that list them are gone (the lab's
// state directory deleted by hand). It returns how many it stopped.
func StopOrphans(root string) (int, error) {
	root = filepath.Clean(root)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if comm, _, ok := kernel.ParseStat(st); !ok || comm != "ovsdb-server" && comm != "ovs-vswitchd" {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmd), root+"/") {
			pids = append(pids, pid)
		}
	}
	var errs []error
	for _, pid := range pids {
		errs = append(errs, killWait(pid, root, StopTimeout))
	}
	return len(pids), errors.Join(errs...)
}
