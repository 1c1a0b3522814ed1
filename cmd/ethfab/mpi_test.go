package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
)

// ethfab hostfile names the lab's hosts; ethfab mpirun starts a rank on
// each host asked for, in that host's namespace and under its name, with
// the host's fabric address, and passes the program's exit status on.
func TestHostfileAndMpirun(t *testing.T) {
	roottest.NeedOVS(t, "mpirun", "unshare", "chrt")
	const lab = "eft-mpirun"
	file := filepath.Join(t.TempDir(), "mpirun.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nname: "+lab+`
topology: {kind: dragonfly, p: 1, a: 2, h: 1}
links: {host: {rate: 100mbit}, local: {rate: 100mbit}, global: {rate: 100mbit}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fabric.Down(lab) })
	if _, err := runApp(t, "up", file); err != nil {
		t.Fatal(err)
	}
	l, err := fabric.Load(lab)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runApp(t, "hostfile", lab, "--slots", "2")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, h := range l.Hosts {
		want = append(want, h.Name+" slots=2")
	}
	if got := strings.Fields(strings.ReplaceAll(out, " slots", "_slots")); strings.Join(got, "\n") != strings.ReplaceAll(strings.Join(want, "\n"), " slots", "_slots") {
		t.Errorf("hostfile:\n%s\nwant every host, slots=2, in order:\n%s", out, strings.Join(want, "\n"))
	}

	hosts := []string{l.Hosts[0].Name, l.Hosts[len(l.Hosts)-1].Name, l.Hosts[2].Name}
	out, err = runApp(t, "mpirun", lab, "--hosts", strings.Join(hosts, ","), "--",
		"sh", "-c", `echo "$(hostname) $(ip -4 -o addr show dev eth0 | awk '{print $4}')"`)
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		got[line] = true
	}
	for _, name := range hosts {
		h := l.Host(name)
		if line := h.Name + " " + h.IP + "/8"; !got[line] {
			t.Errorf("no rank reported %q (its name and fabric address); output:\n%s", line, out)
		}
	}
	if len(got) != len(hosts) {
		t.Errorf("%d distinct lines, want one per host (%d):\n%s", len(got), len(hosts), out)
	}

	_, err = runApp(t, "mpirun", lab, "--hosts", hosts[0], "--", "sh", "-c", "exit 3")
	if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != 3 {
		t.Errorf("a rank's exit status 3: mpirun returned %v, want exit status 3", err)
	}
	// --timeout ends the whole job (exit status 124), and nothing of it
	// is left.
	_, err = runApp(t, "mpirun", lab, "--timeout", "2s", "--hosts", strings.Join(hosts[:2], ","), "--", "sleep", "300")
	if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != 124 {
		t.Errorf("mpirun --timeout 2s of sleep 300: %v, want exit status 124", err)
	}
	if left := jobProcesses(lab, "sleep"); len(left) > 0 {
		t.Errorf("ranks %v left after the timeout", left)
	}

	// An ethfab mpirun killed outright leaves its job running (mpirun,
	// daemons, ranks in the lab's namespaces); down ends it.
	cmd := exec.Command(os.Args[0], "mpirun", lab, "--hosts", strings.Join(hosts[:2], ","), "--", "sleep", "300")
	cmd.Env = append(os.Environ(), "ETHFAB_TEST_STATE_ROOT="+fabric.StateRoot)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var sleeps []int
	for deadline := time.Now().Add(30 * time.Second); len(sleeps) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the job's 2 ranks (sleep) did not start within 30 s (found %v)", sleeps)
		}
		sleeps = jobProcesses(lab, "sleep")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := fabric.Down(lab); err != nil {
		t.Fatal(err)
	}
	for _, pid := range sleeps {
		// Gone, or a zombie for init to reap: it runs no more.
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] != "Z" {
				t.Errorf("rank %d still runs after down (state %s)", pid, f[0])
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(kernel.Cgroup2Root(), fabric.JobCgroupPrefix(lab)+"*")); len(left) > 0 {
		t.Errorf("down left the job's cgroup %v", left)
	}
	if _, err := runApp(t, "up", file); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hosts", "nosuch"}, `has no host "nosuch"`},
		{[]string{"--hosts", hosts[0], "--np", "2"}, "2 ranks do not fit 1 hosts with 1 slots each"},
		{[]string{"--mca", "novalue"}, "want NAME=VALUE"},
	} {
		args := append(append([]string{"mpirun", lab}, c.args...), "--", "true")
		if _, err := runApp(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mpirun %v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
}

// jobProcesses are the PIDs of the processes named comm in the lab's MPI
// jobs' cgroups.
func jobProcesses(lab, comm string) []int {
	var out []int
	cgs, _ := filepath.Glob(filepath.Join(kernel.Cgroup2Root(), fabric.JobCgroupPrefix(lab)+"*"))
	for _, cg := range cgs {
		b, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if c, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(c)) == comm {
				out = append(out, pid)
			}
		}
	}
	return out
}
