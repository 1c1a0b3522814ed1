package run

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/results"
)

// mpibench is ethfab-mpibench: the one scripts/provision.sh installs, or
// built here with mpicc.
func mpibench(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("ethfab-mpibench"); err == nil {
		return p
	}
	if _, err := exec.LookPath("mpicc"); err != nil {
		t.Skip("needs ethfab-mpibench or mpicc (Open MPI; scripts/provision.sh installs both)")
	}
	bin := filepath.Join(t.TempDir(), "ethfab-mpibench")
	if out, err := exec.Command("mpicc", "-O2", "-o", bin, "../../bench/mpi/mpibench.c").CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	return bin
}

// An MPI program runs across a DF(2,4,2) lab, one rank in each of three
// groups: every measurement it makes comes back, each rank ran on the
// host asked for, and its traffic is in the switches' counters — at
// least the frames the ping-pong's largest messages need, and under
// Valiant routing nearly all of it non-minimal (the hosts are in
// different groups). The run directory keeps the program's output.
func TestMPIPhaseOnDragonfly(t *testing.T) {
	roottest.NeedOVS(t, "mpirun", "unshare", "chrt")
	bench := mpibench(t)
	hosts := []string{"g0s0h0", "g3s2h1", "g8s3h1"}
	m, dir := runYAML(t, "eft-mpi", `topology: {kind: dragonfly, p: 2, a: 4, h: 2}
routing: {mode: valiant}
links: {host: {rate: 10mbit}, local: {rate: 10mbit}, global: {rate: 10mbit}}
phases:
  - name: bench
    mpi:
      program: [`+bench+`, all, --sizes, "8,65536", --max-time, "1"]
      hosts: [`+strings.Join(hosts, ", ")+`]
      timeout: 3m
`, 0)
	if len(m.Phases) != 1 || m.Phases[0].MPI == nil {
		t.Fatalf("points %+v, want the mpi phase's", m.Phases)
	}
	pt, x := m.Phases[0], m.Phases[0].MPI
	if x.NP != 3 || !slices.Equal(x.Hosts, hosts) || !slices.Equal(x.Where, hosts) {
		t.Errorf("job: np %d, hosts %v, ranks ran on %v; want 3 and %v twice", x.NP, x.Hosts, x.Where, hosts)
	}
	got := map[string]bool{}
	for _, r := range x.Results {
		if r.Iters < 3 || r.MeanUS == nil || *r.MeanUS <= 0 || r.Ranks != 3 {
			t.Errorf("result %+v: want at least 3 iterations, a positive mean, 3 ranks", r)
		}
		got[r.Bench+"/"+strconv.FormatInt(r.Bytes, 10)] = true
	}
	for _, want := range []string{"pingpong/8", "pingpong/65536", "alltoall/8", "alltoall/65536"} {
		if !got[want] {
			t.Errorf("no %s result; got %v", want, got)
		}
	}
	// 3 round trips of 64 KB at least: 2 × 3 × 65536 / 1500 frames.
	if minFrames := uint64(2 * 3 * 65536 / 1500); pt.Sent < minFrames {
		t.Errorf("%d frames into the fabric, want at least %d (the 64 KB ping-pong's)", pt.Sent, minFrames)
	}
	if pt.RulePackets["valiant"] < pt.Sent/2 || pt.NonminimalShare < 0.9 {
		t.Errorf("valiant rules matched %d of %d frames, non-minimal share %.3f; want nearly all", pt.RulePackets["valiant"], pt.Sent, pt.NonminimalShare)
	}
	// Where the machine has cgroup v2 (this one and Debian 12 do), the
	// job's processes are measured: at least the ranks' polling.
	if x.CPUS == nil || *x.CPUS <= 0 || x.CPUBusy == nil || *x.CPUBusy <= 0 {
		t.Errorf("the job's CPU time %v (busy %v), want its cgroup's", x.CPUS, x.CPUBusy)
	}
	if b, err := os.ReadFile(filepath.Join(dir, x.Output)); err != nil || !strings.Contains(string(b), `"bench":"pingpong"`) {
		t.Errorf("%s: %v, want the program's output", x.Output, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "summary.md")); err != nil || !strings.Contains(string(b), "## MPI") {
		t.Errorf("summary.md has no MPI section (%v)", err)
	}
	t.Logf("%d frames into the fabric, non-minimal %.3f; fidelity ok %v %v", pt.Sent, pt.NonminimalShare, m.Fidelity.OK, m.Fidelity.Reasons)
}

// The CPU check leaves out the job's share less all the machine's packet
// work (softirq, which may have run charged to a rank), never below 0 or
// above the machine's busy share.
func TestCPUApart(t *testing.T) {
	n := float64(runtime.NumCPU())
	for _, c := range []struct {
		job, busy, softirqCores, want float64
	}{
		{0.6, 0.99, 0, 0.6},
		{0.6, 0.99, 0.1 * n, 0.5},
		{1.2, 0.9, 0, 0.9},
		{0.05, 0.9, 0.1 * n, 0},
	} {
		got := cpuApart(c.job, c.busy, &results.CPUSplit{Softirq: c.softirqCores})
		if got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("cpuApart(job %g, busy %g, softirq %g cores) = %g, want %g", c.job, c.busy, c.softirqCores, got, c.want)
		}
	}
}
