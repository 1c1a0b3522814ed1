// Package mpi runs MPI programs on a lab's hosts, over the fabric.
//
// Open MPI's mpirun runs in the first host's namespace, as on a cluster's
// first node, and starts its daemon (orted) on every other host through a
// launch agent in place of ssh: a script that enters the host's network
// namespace, gives the daemon a UTS namespace named after the host and a
// mount namespace whose /etc/hosts lists the lab's hosts, and runs the
// daemon's command line with sh as ssh would. Ranks then talk TCP over the
// hosts' fabric interfaces (btl tcp, oob tcp on eth0), so every byte
// between ranks on different hosts crosses the emulated switches.
//
// The ranks run at idle priority (SCHED_IDLE). Open MPI polls for
// progress; it never blocks, so each waiting rank spins on a core. At
// idle priority the spinning takes only the CPU the emulator leaves. The
// job's processes (mpirun, the agents, daemons and ranks) share a cgroup
// of their own, whose CPU time the fidelity verdict takes apart from the
// emulator's, and whose end tells when the last of them has exited.
package mpi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/kernel"
)

// Options say what to run where.
type Options struct {
	// Program is the MPI program and its arguments.
	Program []string
	// Hosts are the host names to run on, in rank order; empty: every
	// host of the lab.
	Hosts []string
	// Slots is the number of ranks each host takes (default 1).
	Slots int
	// NP is the number of ranks (default: every slot).
	NP int
	// MCA are extra Open MPI parameters (name → value).
	MCA map[string]string
}

// Job is an MPI program ready to run on a lab: its hostfile, the hosts
// file its processes resolve names with, and the launch agent, in a
// directory of its own under the lab's state directory (so down removes
// what a killed run leaves).
type Job struct {
	Dir   string
	Hosts []string
	NP    int
	lab   *fabric.Lab
	o     Options
	// cgroup is the job's cgroup (v2) directory, and cgroupFD that
	// directory open; "" and nil where the machine mounts no cgroup2
	// hierarchy (the job's CPU time is then not measured).
	cgroup   string
	cgroupFD *os.File
}

// nameRe is what a host or namespace name may be for the agent script to
// quote it safely: the lab's names are all of this form.
var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// pathRe is what the lab's state directory may be for the agent script to
// name files under it unquoted.
var pathRe = regexp.MustCompile(`^/[A-Za-z0-9_./-]*$`)

// Hostfile is Open MPI's hostfile for hosts of lab (every host when
// hosts is empty), each with slots slots, in order.
func Hostfile(lab *fabric.Lab, hosts []string, slots int) (string, error) {
	hs, err := resolve(lab, hosts)
	if err != nil {
		return "", err
	}
	return hostfile(hs, slots), nil
}

func hostfile(hs []fabric.Host, slots int) string {
	if slots < 1 {
		slots = 1
	}
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "%s slots=%d\n", h.Name, slots)
	}
	return b.String()
}

func resolve(lab *fabric.Lab, names []string) ([]fabric.Host, error) {
	if len(names) == 0 {
		return lab.Hosts, nil
	}
	out := make([]fabric.Host, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		h := lab.Host(n)
		if h == nil {
			return nil, fmt.Errorf("lab %s has no host %q", lab.Lab, n)
		}
		if seen[n] {
			return nil, fmt.Errorf("host %s is listed twice", n)
		}
		seen[n] = true
		out = append(out, *h)
	}
	return out, nil
}

// Prepare writes a job's files. Close removes them.
func Prepare(lab *fabric.Lab, o Options) (*Job, error) {
	if len(o.Program) == 0 {
		return nil, errors.New("no MPI program given")
	}
	if o.Slots < 1 {
		o.Slots = 1
	}
	hs, err := resolve(lab, o.Hosts)
	if err != nil {
		return nil, err
	}
	np := o.NP
	if np == 0 {
		np = len(hs) * o.Slots
	}
	if np < 1 || np > len(hs)*o.Slots {
		return nil, fmt.Errorf("%d ranks do not fit %d hosts with %d slots each", np, len(hs), o.Slots)
	}
	for _, h := range lab.Hosts {
		if !nameRe.MatchString(h.Name) || !nameRe.MatchString(h.NetNS) {
			return nil, fmt.Errorf("host %q (netns %q): not a name the launch agent can pass on", h.Name, h.NetNS)
		}
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		return nil, errors.New("mpirun not found: install Open MPI (scripts/provision.sh installs openmpi-bin)")
	}
	root := fabric.LabDir(lab.Lab)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	if !pathRe.MatchString(root) {
		return nil, fmt.Errorf("state directory %q: the launch agent script names files under it, and can only pass letters, digits and _ . / -", root)
	}
	dir, err := os.MkdirTemp(root, "mpi-")
	if err != nil {
		return nil, err
	}
	j := &Job{Dir: dir, NP: np, lab: lab, o: o}
	if root := kernel.Cgroup2Root(); root != "" {
		cg := filepath.Join(root, fabric.JobCgroupPrefix(lab.Lab)+filepath.Base(dir))
		if err := os.Mkdir(cg, 0o755); err != nil {
			j.Close()
			return nil, fmt.Errorf("the MPI job's cgroup: %w", err)
		}
		j.cgroup = cg
		// Where the cpu controller reaches the job's cgroup, the group
		// competes with its siblings by weight and SCHED_IDLE would rank
		// the ranks only among themselves: cpu.idle makes the whole
		// group idle-priority (Linux 5.15). Here no controller reaches
		// it and the file is absent.
		if _, err := os.Stat(filepath.Join(cg, "cpu.idle")); err == nil {
			if err := os.WriteFile(filepath.Join(cg, "cpu.idle"), []byte("1"), 0o644); err != nil {
				j.Close()
				return nil, fmt.Errorf("the MPI job's cgroup: cpu.idle: %w", err)
			}
		}
		if j.cgroupFD, err = os.Open(cg); err != nil {
			j.Close()
			return nil, err
		}
	}
	for _, h := range hs {
		j.Hosts = append(j.Hosts, h.Name)
	}
	var etc, cases strings.Builder
	etc.WriteString("127.0.0.1 localhost\n")
	for _, h := range lab.Hosts {
		// Every host of the lab, not only the job's: a program may name
		// any of them, and a name that misses /etc/hosts goes to DNS,
		// which a host namespace cannot reach (Open MPI waited 50 s for
		// it on three hosts before this file).
		if h.IP != "" {
			fmt.Fprintf(&etc, "%s %s\n", h.IP, h.Name)
		}
		fmt.Fprintf(&cases, "  %s) ns=%s ;;\n", h.Name, h.NetNS)
	}
	files := map[string]string{"hostfile": hostfile(hs, o.Slots), "hosts": etc.String(), "agent": agentScript(lab.Lab, cases.String(), dir)}
	for name, text := range files {
		mode := os.FileMode(0o644)
		if name == "agent" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), mode); err != nil {
			j.Close()
			return nil, err
		}
	}
	return j, nil
}

// agentScript is the launch agent Open MPI calls as it would call ssh:
// `agent HOST COMMAND...`, the command one string for a shell. It is
// mpirun's child, so it and what it starts are in the job's cgroup.
func agentScript(lab, cases, dir string) string {
	return `#!/bin/sh
# ethfab's Open MPI launch agent for lab ` + lab + ` (in place of ssh): runs
# the command Open MPI gives in HOST's network namespace, with the host's
# name (UTS namespace), the lab's hosts in /etc/hosts (mount namespace),
# at idle priority (SCHED_IDLE).
host=$1
shift
case "$host" in
` + cases + `  *) echo "ethfab launch agent: lab ` + lab + ` has no host $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts --mount sh -c 'mount --bind "$0" /etc/hosts && hostname "$1" && exec chrt --idle 0 sh -c "$2"' ` + dir + `/hosts "$host" "$*"
`
}

// Args is mpirun's command line for the job.
func (j *Job) Args() []string {
	args := []string{"mpirun", "--hostfile", filepath.Join(j.Dir, "hostfile"), "-np", strconv.Itoa(j.NP),
		// Each daemon takes its host for a whole machine and would pin
		// its first rank to core 0: every host's, on the one machine
		// (8-byte ping-pong took 4 ms of time slices instead of 11 µs).
		"--bind-to", "none"}
	mca := map[string]string{
		"plm_rsh_agent": filepath.Join(j.Dir, "agent"),
		// Daemons started by mpirun itself, never by other daemons: every
		// launch goes through the one agent, from the first host.
		"plm_rsh_no_tree_spawn": "1",
		// Control and data over the fabric interface only.
		"oob_tcp_if_include": fabric.HostIface,
		"btl_tcp_if_include": fabric.HostIface,
		"btl":                "self,vader,tcp",
		// The daemons stay the agents' children instead of daemonizing
		// (orted --daemonize): mpirun sees them end, and each ends with
		// the job.
		"orte_leave_session_attached": "1",
		// Ranks with nothing to do yield the CPU: each daemon takes its
		// host for a machine of its own and would let its ranks spin, but
		// all the hosts' ranks share this machine's cores. A 16-rank
		// 8-byte all-to-all took 197 ms a call spinning, 14 ms yielding.
		"mpi_yield_when_idle": "1",
	}
	for k, v := range j.o.MCA {
		mca[k] = v
	}
	keys := make([]string, 0, len(mca))
	for k := range mca {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--mca", k, mca[k])
	}
	return append(args, j.o.Program...)
}

// Command is mpirun in the first host's namespaces, at idle priority like
// the ranks. A cancelled ctx stops it with SIGTERM (mpirun then stops its
// daemons and ranks), SIGKILL 10 s later.
func (j *Job) Command(ctx context.Context) *exec.Cmd {
	first := j.lab.Host(j.Hosts[0])
	argv := append([]string{"netns", "exec", first.NetNS, "unshare", "--uts", "--mount", "sh", "-c",
		`mount --bind "$0" /etc/hosts && hostname "$1" && shift && exec chrt --idle 0 "$@"`,
		filepath.Join(j.Dir, "hosts"), first.Name}, j.Args()...)
	cmd := exec.CommandContext(ctx, "ip", argv...)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		// No help-message aggregation delay, no warnings about the
		// namespaces' lack of a high-speed network.
		"OMPI_MCA_btl_base_warn_component_unused=0")
	if j.cgroupFD != nil {
		// Started in the job's cgroup (clone3), and so is everything it
		// starts: inside `ip netns exec` /sys is the namespace's, without
		// the cgroup hierarchy to join it by.
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(j.cgroupFD.Fd())}
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// CPU is the CPU time the job's processes (mpirun, the agents, daemons
// and ranks) have taken so far, those that exited included; -1 where
// there is no cgroup to measure it by.
func (j *Job) CPU() (float64, error) {
	if j.cgroup == "" {
		return -1, nil
	}
	cpu, err := kernel.CgroupCPU(j.cgroup)
	if err != nil {
		return -1, err
	}
	return cpu.Seconds(), nil
}

// Wait waits, at most limit, until every process of a job whose mpirun
// has exited is gone: the agents and daemons outlive it by a moment.
// Without a cgroup it does not wait (Close cannot end them either).
func (j *Job) Wait(limit time.Duration) error {
	if j.cgroup == "" {
		return nil
	}
	for deadline := time.Now().Add(limit); kernel.CgroupPopulated(j.cgroup); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of the MPI job still running %s after mpirun exited (Close ends them)", limit)
		}
	}
	return nil
}

// Close ends what is left of the job (cgroup.kill) and removes its
// cgroup and files.
func (j *Job) Close() error {
	var err error
	if j.cgroupFD != nil {
		j.cgroupFD.Close()
	}
	if j.cgroup != "" {
		err = kernel.RemoveCgroup(j.cgroup, 5*time.Second)
	}
	return errors.Join(err, os.RemoveAll(j.Dir))
}
