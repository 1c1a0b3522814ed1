package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/cluster"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
)

// acrossScenario writes a DF(2,4,2) scenario named lab (36 switches, 72
// hosts; split by groups, 20 of its 36 global links cut across 2
// machines) on datapath, with one light traffic phase for `run --lab`.
func acrossScenario(t *testing.T, lab, datapath string) string {
	return writeDF242(t, lab, `links: {host: {rate: 100mbit}, local: {rate: 100mbit}, global: {rate: 50mbit}}
ovs: {datapath: `+datapath+`}
phases:
  - name: light
    traffic: {pattern: uniform, loads: [0.005], duration: 1s, seed: 5}
`)
}

// writeDF242 writes a scenario file named lab on DF(2,4,2): rest is what
// follows the topology.
func writeDF242(t *testing.T, lab, rest string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), lab+".yaml")
	if err := os.WriteFile(file, []byte("version: 1\nname: "+lab+"\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// workersAsEthfab makes this test binary, which the exec launcher runs as
// each emulated machine's worker, act as ethfab on this state root.
func workersAsEthfab(t *testing.T) {
	t.Setenv("ETHFAB_TEST_STATE_ROOT", fabric.StateRoot)
}

// A lab across two emulated machines: every host and switch on one of
// them, every pair reachable across the cut, each machine's flow files
// those of the one-machine build, each cut link a VXLAN device on the
// bridge with the port's one-machine OpenFlow number and its tbf, which
// counted the probes it carried; down leaves nothing on either.
func TestLabAcrossMachines(t *testing.T) {
	roottest.NeedOVS(t)
	for _, dp := range []string{"netdev", "ebpf"} {
		t.Run(dp, func(t *testing.T) {
			lab := "eft-x" + dp[:1]
			workersAsEthfab(t)
			file := acrossScenario(t, lab, dp)
			t.Cleanup(func() { cluster.Down(t.Context(), lab, nil) })
			if _, err := runApp(t, "up", file, "--machines", "local:2"); err != nil {
				t.Fatal(err)
			}
			out, err := runApp(t, "status", lab, "--json")
			if err != nil {
				t.Fatal(err)
			}
			var l fabric.Lab
			if err := json.Unmarshal([]byte(out), &l); err != nil {
				t.Fatal(err)
			}
			if len(l.Machines) != 2 || len(l.Hosts) != 72 || len(l.Switches) != 36 {
				t.Fatalf("%d machines, %d hosts, %d switches; want 2, 72, 36", len(l.Machines), len(l.Hosts), len(l.Switches))
			}
			on := map[string]int{}
			for _, h := range l.Hosts {
				on[h.Machine]++
			}
			for _, s := range l.Switches {
				on[s.Machine]++
			}
			if on["local0"] == 0 || on["local1"] == 0 || on["local0"]+on["local1"] != 72+36 {
				t.Fatalf("hosts and switches by machine: %v", on)
			}

			pingAll(t, lab, 72)

			sc, err := scenario.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			one, err := fabric.Compile(sc)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			tunnels := 0
			for _, m := range l.Machines {
				part, err := fabric.Load(m.Part)
				if err != nil {
					t.Fatal(err)
				}
				if dp == "netdev" {
					checkFlowFiles(t, part, one, seen)
				}
				for _, k := range part.Links {
					if k.Tunnel == nil {
						continue
					}
					tunnels++
					checkTunnel(t, part, k, dp)
				}
			}
			if dp == "netdev" && len(seen) != 36 {
				t.Errorf("flow files of %d switches across the machines, want 36", len(seen))
			}
			if tunnels != 2*20 {
				t.Errorf("%d tunnel ends, want 40 (20 cut links)", tunnels)
			}
			if _, err := runApp(t, "down", lab); err != nil {
				t.Fatal(err)
			}
			assertLabGone(t, lab)
		})
	}
}

// pingAll pings every pair of lab's n hosts, across its machines, and
// wants every one reached.
func pingAll(t *testing.T, lab string, n int) {
	t.Helper()
	out, err := runApp(t, "ping", lab, "--all", "--json")
	if err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	var r fabric.PingReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Pairs != n*(n-1) || r.Reached != r.Pairs {
		t.Fatalf("%d of %d pairs reached, want all %d: %v", r.Reached, r.Pairs, n*(n-1), r.Unreachable)
	}
}

// checkFlowFiles compares a part's flow files with the one-machine
// build's tables, switch by switch, and counts the switches seen.
func checkFlowFiles(t *testing.T, part *fabric.Lab, one *fabric.Compiled, seen map[string]int) {
	t.Helper()
	for i, s := range one.Top.Switches {
		b, err := os.ReadFile(filepath.Join(fabric.LabDir(part.Lab), "flows", s.Name+".flows"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if seen[s.Name]++; seen[s.Name] > 1 {
			t.Errorf("switch %s has flow files on two machines", s.Name)
		}
		if string(b) != one.Tables[i].OpenFlow() {
			t.Errorf("%s: %s.flows differs from the one-machine build's", part.Lab, s.Name)
		}
	}
}

// checkTunnel checks one cut link's end: a VXLAN device with its tbf,
// which carried frames, and on the userspace datapath the port's
// one-machine OpenFlow number.
func checkTunnel(t *testing.T, part *fabric.Lab, k fabric.Link, dp string) {
	t.Helper()
	st, err := kernel.Stats(k.A.NetNS, k.A.Iface)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "tbf" || st.Packets == 0 || k.Shape == nil || k.Shape.RateBps != 50_000_000 {
		t.Errorf("%s %s: qdisc %s carried %d frames (rate %v), want tbf at 50 Mbit/s that carried the probes", part.Lab, k.A.Iface, st.Kind, st.Packets, k.Shape)
	}
	typ, err := exec.Command("ip", "-n", k.A.NetNS, "-d", "-o", "link", "show", k.A.Iface).Output()
	if err != nil || !strings.Contains(string(typ), " vxlan id "+strconv.Itoa(int(k.Tunnel.VNI))+" ") {
		t.Errorf("%s %s: not VXLAN %d: %s %v", part.Lab, k.A.Iface, k.Tunnel.VNI, typ, err)
	}
	if dp != "netdev" {
		return
	}
	var db string
	for _, s := range part.Switches {
		if s.Name == k.A.Node {
			db = part.OVS.Instances[s.Instance].DB
		}
	}
	of, err := exec.Command("ovs-vsctl", "--db="+db, "get", "Interface", k.A.Iface, "ofport").Output()
	if err != nil || strings.TrimSpace(string(of)) != strconv.Itoa(k.A.Port) {
		t.Errorf("%s %s: OpenFlow port %q (%v), want %d", part.Lab, k.A.Iface, of, err, k.A.Port)
	}
}

// assertLabGone checks that nothing of a lab across machines is left:
// namespaces (its parts' and its underlay's), state directories, daemons.
func assertLabGone(t *testing.T, lab string) {
	t.Helper()
	if left, _ := kernel.ListNamespaces(lab + "-"); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if dirs, _ := filepath.Glob(fabric.LabDir(lab) + "*"); len(dirs) != 0 {
		t.Errorf("state left: %v", dirs)
	}
	ps, _ := exec.Command("ps", "-eo", "stat,args").Output()
	for _, line := range strings.Split(string(ps), "\n") {
		if strings.Contains(line, fabric.LabDir(lab)+"-m") && !strings.HasPrefix(line, "Z") {
			t.Errorf("daemon left: %s", line)
		}
	}
}

// A bring-up across machines that fails rolls every part back: an
// underlay whose MTU cannot carry the links' frames is refused by name
// before any part is built, and a worker killed in the middle of its part
// fails the bring-up, which removes both parts and the underlay.
func TestAcrossMachinesRollsBack(t *testing.T) {
	roottest.NeedOVS(t)
	const lab = "eft-xr"
	workersAsEthfab(t)
	file := acrossScenario(t, lab, "netdev")
	t.Cleanup(func() { cluster.Down(t.Context(), lab, nil) })

	_, err := runApp(t, "up", file, "--machines", "local:2", "--underlay-mtu", "1500")
	if err == nil || !strings.Contains(err.Error(), "underlay interface ul: the underlay's MTU 1500 is below 1550") {
		t.Fatalf("up over a 1500-byte underlay: %v", err)
	}
	assertLabGone(t, lab)

	// A lab of another's making under a part's name stops the bring-up,
	// whose rollback leaves it alone.
	other := fabric.PartLabName(lab, 0)
	t.Cleanup(func() { fabric.Down(other) })
	if _, err := runApp(t, "up", file, "--set", "name="+other); err != nil {
		t.Fatal(err)
	}
	if _, err := runApp(t, "up", file, "--machines", "local:2"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("up across machines onto an existing %s: %v", other, err)
	}
	if l, err := fabric.Load(other); err != nil || l.State != "up" {
		t.Fatalf("the rollback touched lab %s: %v", other, err)
	}
	if _, err := runApp(t, "down", other); err != nil {
		t.Fatal(err)
	}
	assertLabGone(t, lab)

	// The coordinator in a child, so its worker can be killed while it
	// builds: right after it reports its namespaces.
	cmd := exec.Command(os.Args[0], "up", file, "--machines", "local:2")
	cmd.Env = os.Environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	killed := 0
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if killed == 0 && strings.Contains(sc.Text(), "local1: namespaces:") {
			killed = killWorker(t, cmd.Process.Pid, "local1")
		}
	}
	err = cmd.Wait()
	if killed == 0 {
		t.Fatalf("no worker of local1 to kill; the coordinator said:\n%s", strings.Join(lines, "\n"))
	}
	all := strings.Join(lines, "\n")
	if err == nil || !strings.Contains(all, "machine local1: worker: signal: killed") || !strings.Contains(all, "rolling back") {
		t.Fatalf("up with a killed worker: %v; it said:\n%s", err, all)
	}
	assertLabGone(t, lab)

	// The coordinator killed while its workers build: they see their
	// input close and roll their parts back; `down` removes the rest
	// from the state the coordinator wrote first.
	cmd = exec.Command(os.Args[0], "up", file, "--machines", "local:2")
	cmd.Env = os.Environ()
	if stderr, err = cmd.StderrPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc = bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "local0: namespaces:") {
			break
		}
	}
	workers := childrenOf(cmd.Process.Pid, "worker\x00up\x00")
	cmd.Process.Kill()
	cmd.Wait()
	if len(workers) != 2 {
		t.Fatalf("%d workers under the coordinator, want 2", len(workers))
	}
	// Each worker, now without its coordinator, ends once its part is
	// rolled back.
	for _, w := range workers {
		for range 600 {
			if syscall.Kill(w, 0) != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if out, err := runApp(t, "down", lab); err != nil {
		t.Fatalf("down after a killed coordinator: %v\n%s", err, out)
	}
	assertLabGone(t, lab)
}

// childrenOf lists the PIDs of pid's children whose command line holds
// args.
func childrenOf(pid int, args string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		child, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child)); strings.Contains(string(cl), args) {
			out = append(out, child)
		}
	}
	return out
}

// killWorker kills, with SIGKILL, the child of pid that is machine m's
// `ethfab worker up`, and returns its PID (0: none).
func killWorker(t *testing.T, pid int, m string) int {
	t.Helper()
	children := childrenOf(pid, "worker\x00up\x00--machine\x00"+m+"\x00")
	if len(children) == 0 {
		return 0
	}
	if err := syscall.Kill(children[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return children[0]
}

// The same lab with its workers started over ssh, as on real machines:
// a private sshd on this machine's loopback (its own keys and port),
// reached by two names of this machine through an ssh configuration of
// the test's, the machines joined by an emulated underlay. Up, ping
// across the cut, exec on the far machine and down all go through ssh.
func TestLabAcrossMachinesOverSSH(t *testing.T) {
	roottest.NeedOVS(t, "sshd", "ssh", "ssh-keygen")
	const lab = "eft-xs"
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	for _, k := range []string{"host_key", "id"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	port := freePort(t)
	os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s/host_key
AuthorizedKeysFile %s/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
StrictModes no
UsePAM no
PidFile none
`, port, dir, dir)), 0o600)
	os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		t.Fatal(err)
	}
	d := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var dlog strings.Builder
	d.Stderr = &dlog
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Process.Kill(); d.Wait() })
	cfg := filepath.Join(dir, "ssh_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`Host localhost 127.0.0.1
  HostName 127.0.0.1
  Port %d
  User root
  IdentityFile %s/id
  IdentitiesOnly yes
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  LogLevel ERROR
`, port, dir)), 0o600)
	// sshd listens once it answers.
	waitFor(t, func() bool {
		return exec.Command("ssh", "-F", cfg, "-o", "BatchMode=yes", "localhost", "true").Run() == nil
	}, &dlog)

	// The workers, through ssh, are this test binary acting as ethfab on
	// this state root (ssh passes no environment: env sets it).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file := acrossScenario(t, lab, "netdev")
	t.Cleanup(func() { cluster.Down(t.Context(), lab, nil) })
	if out, err := runApp(t, "up", file, "--machines", "localhost,127.0.0.1", "--emulated-underlay", "--ssh-config", cfg,
		"--ethfab", "env ETHFAB_TEST_STATE_ROOT="+fabric.StateRoot+" "+self); err != nil {
		t.Fatalf("up over ssh: %v\n%s\nsshd: %s", err, out, dlog.String())
	}
	l, err := fabric.Load(lab)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range l.Machines {
		if m.Launcher != cluster.SSH || m.SSHConfig != cfg {
			t.Errorf("machine %s recorded launcher %s, ssh config %q", m.Name, m.Launcher, m.SSHConfig)
		}
	}
	pingAll(t, lab, 72)
	// A point measured by traffic workers started over ssh.
	runDir := filepath.Join(t.TempDir(), "run")
	if out, err := runApp(t, "run", file, "--lab", lab, "--out", runDir, "--quiet"); err != nil {
		t.Fatalf("run --lab over ssh: %v\n%s", err, out)
	}
	var m results.Metrics
	if b, err := os.ReadFile(filepath.Join(runDir, "metrics.json")); err != nil || json.Unmarshal(b, &m) != nil || len(m.Phases) != 1 {
		t.Fatalf("the run's metrics: %v", err)
	}
	if p := m.Phases[0]; p.Sent == 0 || p.Received != p.Sent || m.Run.Machine["machines"] != "2" {
		t.Errorf("a point over ssh-started workers: sent %d, received %d, machines %q", p.Sent, p.Received, m.Run.Machine["machines"])
	}
	far := l.Hosts[len(l.Hosts)-1]
	cmd, err := cluster.ExecIn(t.Context(), l, &far, []string{"ip", "-o", "-4", "addr", "show", "dev", "eth0"})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := cmd.Output(); err != nil || !strings.Contains(string(b), " "+far.IP+"/8 ") {
		t.Errorf("exec on %s (machine %s): %q, %v; want its address %s", far.Name, far.Machine, b, err, far.IP)
	}
	if _, err := runApp(t, "down", lab); err != nil {
		t.Fatal(err)
	}
	assertLabGone(t, lab)
}

// freePort is a TCP port on loopback that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor polls ok until it holds, for at most 10 s.
func waitFor(t *testing.T, ok func() bool, log fmt.Stringer) {
	t.Helper()
	for range 200 {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("gave up waiting; log: %s", log)
}

// A scenario run across two emulated machines offers exactly the frames
// the one-machine run offers (the same seed draws the same arrivals on
// whichever machine a host runs), delivers them all at a load the fabric
// carries, and says how it took the latency.
func TestRunAcrossMachines(t *testing.T) {
	roottest.Need(t)
	workersAsEthfab(t)
	const lab = "eft-xrun"
	file := writeDF242(t, lab, `links: {host: {rate: 100mbit}, local: {rate: 100mbit}, global: {rate: 100mbit}}
ovs: {datapath: ebpf}
phases:
  - name: un
    traffic: {pattern: uniform, loads: [0.02], duration: 1s, seed: 3}
  - name: adv
    traffic: {pattern: adv+1, loads: [0.02], duration: 1s, seed: 3}
`)
	t.Cleanup(func() { cluster.Down(t.Context(), lab, nil) })
	metrics := func(args ...string) *results.Metrics {
		t.Helper()
		m, _ := runMetrics(t, file, args...)
		return m
	}
	one := metrics()
	across := metrics("--machines", "local:2")
	if len(across.Phases) != 2 || len(one.Phases) != 2 {
		t.Fatalf("%d points across machines, %d on one; want 2", len(across.Phases), len(one.Phases))
	}
	for i, p := range across.Phases {
		t.Logf("%s: offered %d sent %d received %d, p50 %.0f µs", p.Name, p.Offered, p.Sent, p.Received, p.LatencyUS.P50)
		if p.Offered == 0 || p.Offered != one.Phases[i].Offered {
			t.Errorf("%s: offered %d frames across machines, %d on one machine, with the same seed", p.Name, p.Offered, one.Phases[i].Offered)
		}
		if p.Sent != p.Offered-p.Unsent-p.Refused || p.Received != p.Sent {
			t.Errorf("%s: offered %d, sent %d, received %d: want every frame at 2%% load", p.Name, p.Offered, p.Sent, p.Received)
		}
		if p.LatencyUS.P50 <= 0 {
			t.Errorf("%s: no latency taken, though the emulated machines share a clock", p.Name)
		}
	}
	if m := across.Run.Machine; m["machines"] != "2" || !strings.Contains(m["latency"], "one clock") {
		t.Errorf("the run's record: machines %q, latency %q", m["machines"], m["latency"])
	}
	// Timed by the machines' wall clocks (the offsets of the same clock
	// here), every frame's latency is taken; within a machine only, the
	// frames between machines are counted and not timed.
	timed := func(p results.Point) uint64 {
		var n uint64
		for _, b := range p.LatencyHistogram.Buckets {
			n += b[1]
		}
		return n
	}
	for _, c := range []string{"wall", "local"} {
		m := metrics("--machines", "local:2", "--clocks", c)
		if !strings.Contains(m.Run.Machine["latency"], map[string]string{"wall": "wall clocks", "local": "within one machine"}[c]) {
			t.Errorf("--clocks %s recorded as %q", c, m.Run.Machine["latency"])
		}
		for _, p := range m.Phases {
			switch {
			case c == "wall" && (p.Unclocked != 0 || timed(p) != p.Received):
				t.Errorf("--clocks wall, %s: %d of %d frames timed, %d unclocked", p.Name, timed(p), p.Received, p.Unclocked)
			case c == "local" && (p.Unclocked == 0 || timed(p)+p.Unclocked != p.Received):
				t.Errorf("--clocks local, %s: %d timed and %d unclocked of %d received", p.Name, timed(p), p.Unclocked, p.Received)
			}
		}
	}
	if across.Run.Hosts != 72 {
		t.Errorf("the run's record: %d hosts, want 72", across.Run.Hosts)
	}
	t.Logf("fidelity across machines: %+v", across.Fidelity)
	assertLabGone(t, lab)
}

// runMetrics runs `ethfab run file` with args and returns its
// metrics.json and run directory.
func runMetrics(t *testing.T, file string, args ...string) (*results.Metrics, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if out, err := runApp(t, append([]string{"run", file, "--out", dir, "--quiet"}, args...)...); err != nil {
		t.Fatalf("run %v: %v\n%s", args, err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m results.Metrics
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return &m, dir
}

// The same lab with its workers started by Slurm's srun: a private
// cluster of two nodes on this machine (munged, slurmctld and a slurmd per
// node, on ports of their own), each node a machine of the lab on an
// emulated underlay. Up, ping across the cut, a measured point, exec on
// the far node and down all go through srun.
func TestLabAcrossMachinesUnderSlurm(t *testing.T) {
	roottest.NeedOVS(t, "munged", "slurmctld", "slurmd", "srun", "sinfo")
	const lab = "eft-xsl"
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	for _, d := range []string{"state", "spool/node0", "spool/node1"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	key := make([]byte, 1024)
	if f, err := os.Open("/dev/urandom"); err == nil {
		f.Read(key)
		f.Close()
	}
	os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o400)
	ctld, d0, d1 := freePort(t), freePort(t), freePort(t)
	conf := filepath.Join(dir, "slurm.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf(`ClusterName=ethfabtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=%d
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=%[2]s/munge.sock
CredType=cred/munge
StateSaveLocation=%[2]s/state
SlurmdSpoolDir=%[2]s/spool/%%n
SlurmctldPidFile=%[2]s/slurmctld.pid
SlurmdPidFile=%[2]s/slurmd-%%n.pid
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=node0 NodeHostname=localhost NodeAddr=127.0.0.1 Port=%[3]d CPUs=1 State=UNKNOWN
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=%[4]d CPUs=1 State=UNKNOWN
PartitionName=test Nodes=node0,node1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
`, ctld, dir, d0, d1)), 0o644)
	t.Setenv("SLURM_CONF", conf)
	var logs syncBuf
	daemon := func(args ...string) {
		t.Helper()
		path, err := exec.LookPath(args[0])
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path, args[1:]...)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	daemon("munged", "-F", "--force", "--key-file="+filepath.Join(dir, "munge.key"), "--socket="+filepath.Join(dir, "munge.sock"),
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--log-file="+filepath.Join(dir, "munged.log"), "--seed-file="+filepath.Join(dir, "munge.seed"))
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, "munge.sock")); return err == nil }, &logs)
	daemon("slurmctld", "-D", "-f", conf)
	daemon("slurmd", "-D", "-f", conf, "-N", "node0")
	daemon("slurmd", "-D", "-f", conf, "-N", "node1")
	// Both nodes registered and idle.
	waitFor(t, func() bool {
		out, err := exec.Command("sinfo", "-h", "-o", "%t %D").Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle 2"
	}, &logs)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	workersAsEthfab(t) // srun passes the environment to its tasks
	file := acrossScenario(t, lab, "netdev")
	t.Cleanup(func() { cluster.Down(t.Context(), lab, nil) })
	if out, err := runApp(t, "up", file, "--machines", "node0,node1", "--launcher", "srun", "--emulated-underlay", "--ethfab", self); err != nil {
		t.Fatalf("up under Slurm: %v\n%s\nslurm: %s", err, out, logs.String())
	}
	pingAll(t, lab, 72)
	runDir := filepath.Join(t.TempDir(), "run")
	if out, err := runApp(t, "run", file, "--lab", lab, "--out", runDir, "--quiet"); err != nil {
		t.Fatalf("run --lab under Slurm: %v\n%s", err, out)
	}
	l, err := fabric.Load(lab)
	if err != nil {
		t.Fatal(err)
	}
	far := l.Hosts[len(l.Hosts)-1]
	cmd, err := cluster.ExecIn(t.Context(), l, &far, []string{"sh", "-c", "echo $SLURMD_NODENAME; ip -o -4 addr show dev eth0"})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := cmd.Output(); err != nil || !strings.HasPrefix(string(b), far.Machine+"\n") || !strings.Contains(string(b), " "+far.IP+"/8 ") {
		t.Errorf("exec on %s (node %s) under srun: %q, %v", far.Name, far.Machine, b, err)
	}
	if _, err := runApp(t, "down", lab); err != nil {
		t.Fatal(err)
	}
	assertLabGone(t, lab)
}

// syncBuf is a log several daemons write at once.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// DMP and announcements across machines: every host's agent runs on its
// host's machine, all started together; every host adopts its pseudo-MAC
// from its own switch, learns every other host, across the cut, and
// connects to each; traffic then goes to the addresses DMP gave.
func TestAgentsAcrossMachines(t *testing.T) {
	roottest.NeedOVS(t)
	workersAsEthfab(t)
	const lab = "eft-xag"
	file := writeDF242(t, lab, `addressing: {scheme: per-group, assign: dmp}
links: {host: {rate: 100mbit}, local: {rate: 100mbit}, global: {rate: 100mbit}}
ovs: {datapath: ebpf}
phases:
  - name: boot
    dmp: true
  - name: announce
    announce: {count: 2, interval: 300ms, connect: true, for: 15s}
  - name: light
    traffic: {pattern: uniform, loads: [0.01], duration: 1s, seed: 2}
`)
	t.Cleanup(func() { cluster.Down(t.Context(), lab, nil) })
	dir := filepath.Join(t.TempDir(), "run")
	if out, err := runApp(t, "run", file, "--machines", "local:2", "--out", dir, "--quiet"); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	var m results.Metrics
	if b, err := os.ReadFile(filepath.Join(dir, "metrics.json")); err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("the run's metrics: %v", err)
	}
	if len(m.Agents) != 2 || len(m.Phases) != 1 {
		t.Fatalf("%d agent phases and %d points, want 2 and 1", len(m.Agents), len(m.Phases))
	}
	if b := m.Agents[0]; b.DMPFailed != 0 || b.AdoptedPseudoMAC != 72 {
		t.Errorf("boot across machines: %d failed, %d of 72 adopted their pseudo-MAC", b.DMPFailed, b.AdoptedPseudoMAC)
	}
	if a := m.Agents[1]; a.FullTables != 72 || a.PeersMin != 71 || a.ConnectAttempted != 72*71 || a.ConnectSucceeded != a.ConnectAttempted {
		t.Errorf("announcements across machines: %d full tables, peers %d..%d, connects %d of %d", a.FullTables, a.PeersMin, a.PeersMax, a.ConnectSucceeded, a.ConnectAttempted)
	}
	if p := m.Phases[0]; p.Sent == 0 || p.Received != p.Sent {
		t.Errorf("traffic after DMP: sent %d, received %d", p.Sent, p.Received)
	}
	assertLabGone(t, lab)
}

// Conditional routing across two emulated machines: each machine's
// worker runs its part's condition logic, and a port whose queue crosses
// XOFF pauses the links feeding it from the other machine through the
// pause relay over the underlay, on both datapaths. Every relayed change
// is timed (the emulated machines share a clock) and judged by the
// verdict; QCN-Switch, whose logic is not split yet, is refused by name.
func TestConditionalAcrossMachines(t *testing.T) {
	roottest.Need(t)
	workersAsEthfab(t)
	for _, c := range []struct{ datapath, rate string }{{"ebpf", "5mbit"}, {"netdev", "1mbit"}} {
		t.Run(c.datapath, func(t *testing.T) {
			lab := "eft-xc-" + c.datapath[:2]
			file := writeDF242(t, lab, `addressing: {assign: static}
routing: {mode: conditional}
links: {host: {rate: `+c.rate+`}, local: {rate: `+c.rate+`}, global: {rate: `+c.rate+`}}
ovs: {datapath: `+c.datapath+`}
phases:
  - name: adv
    traffic: {pattern: adv+1, loads: [0.5, 0.5], duration: 1500ms, seed: 3}
`)
			t.Cleanup(func() { cluster.Down(t.Context(), lab, nil) })
			m, dir := runMetrics(t, file, "--machines", "local:2")
			if len(m.Phases) != 2 || m.Conditions == nil || m.Conditions.PauseRelay == nil {
				t.Fatalf("no condition logic or pause relay recorded: %+v", m.Phases)
			}
			// Two points: the second's relay starts afresh (datagrams of
			// the first, read late, are ignored), and the run's totals
			// cover both.
			var changes uint64
			for _, p := range m.Phases {
				if p.Conditions == nil || p.Conditions.PauseRelay == nil {
					t.Fatalf("point %s at %g: no pause relay recorded", p.Name, p.Load)
				}
				changes += p.Conditions.PauseRelay.Changes
				checkRelayed(t, c.datapath, p.Conditions)
				// The hosts kept sending from one point to the next:
				// opening and closing the monitor's tap sockets between
				// points once stalled them for seconds (sent 0 to 23 of
				// 5,229 frames at 0.5, or most refused by their queues).
				if 2*p.Sent < p.Offered {
					t.Errorf("point %s at %g: the hosts sent %d of %d frames (%d unsent, %d refused)", p.Name, p.Load, p.Sent, p.Offered, p.Unsent, p.Refused)
				}
			}
			if got := m.Conditions.PauseRelay.Changes; got != changes {
				t.Errorf("the run's relay totals count %d changes, its points %d", got, changes)
			}
			judged := false
			for _, k := range m.Fidelity.Checks {
				judged = judged || k.Check == "pause_relay"
			}
			if !judged {
				t.Errorf("the verdict has no pause_relay check: %+v", m.Fidelity.Checks)
			}
			if _, err := os.Stat(filepath.Join(dir, results.ConditionsCSV("adv"))); err != nil {
				t.Errorf("the flips' CSV: %v", err)
			}
			t.Logf("fidelity: %v %v", m.Fidelity.OK, m.Fidelity.Reasons)
			assertLabGone(t, lab)
		})
	}
	file := writeDF242(t, "eft-xq", `routing: {mode: qcn-switch, qcn: {variant: base}}
ovs: {datapath: ebpf}
phases:
  - name: adv
    traffic: {pattern: adv+1, loads: [0.5], duration: 1s}
`)
	out, err := runApp(t, "run", file, "--quiet", "--machines", "local:2", "--out", filepath.Join(t.TempDir(), "run"))
	if err == nil || !strings.Contains(out+err.Error(), "does not run across machines yet") {
		t.Errorf("qcn-switch across machines: %v\n%s", err, out)
	}
	assertLabGone(t, "eft-xq")
}

// checkRelayed checks one point's condition logic across machines: links
// paused upstream and reactions timed, pauses that crossed the machines,
// nothing refused, every change timed on the emulated machines' one
// clock. (An expiry is this machine falling behind, which the verdict
// judges, not the relay's fault.)
func checkRelayed(t *testing.T, datapath string, cond *results.Conditions) {
	t.Helper()
	r := cond.PauseRelay
	t.Logf("%s: %d pauses (%d upstream), reaction p50 %.2f ms (%d); relay %+v", datapath, cond.PauseEvents, cond.UpstreamPauses,
		cond.ReactionMS.P50, cond.ReactionMS.N, *r)
	switch {
	case cond.UpstreamPauses == 0 || cond.ReactionMS.N == 0:
		t.Errorf("adv+1 at 0.5 paused %d links upstream and timed %d reactions: want both", cond.UpstreamPauses, cond.ReactionMS.N)
	case r.Changes == 0 || r.Applied == 0:
		t.Errorf("no pause crossed the machines (%d changes sent, %d applied): the global links between the two halves feed congested ports", r.Changes, r.Applied)
	case r.Strays != 0 || r.Unknown != 0 || r.SendErrors != 0:
		t.Errorf("the relay refused %d datagrams, met %d unknown ports and %d send errors", r.Strays, r.Unknown, r.SendErrors)
	case !r.Clocked || r.OneWayMS.N == 0 || r.AckedMS.N == 0:
		t.Errorf("the emulated machines share a clock, yet the relay timed %d changes one way and %d by their acks (clocked %v)", r.OneWayMS.N, r.AckedMS.N, r.Clocked)
	}
}
