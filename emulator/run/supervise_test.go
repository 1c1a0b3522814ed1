package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/scenario"
)

// A daemon of the lab killed while traffic flows fails the run at once,
// naming it, and the run directory says so. Before, ovs-ofctl dump-flows
// of the sampler waited for ever once the lab's ovsdb-server was gone.
func TestDeadDaemonFailsRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("ovs-vswitchd"); err != nil {
		t.Skip("needs Open vSwitch")
	}
	for _, daemon := range []string{"ovsdb-server", "ovs-vswitchd"} {
		t.Run(daemon, func(t *testing.T) {
			name := "hrun-dead"
			sc, err := scenario.Parse(name+".yaml", []byte(`version: 1
name: `+name+`
topology: {kind: dragonfly, p: 1, a: 2, h: 1}
links: {host: {rate: 5mbit}, local: {rate: 5mbit}, global: {rate: 5mbit}}
phases:
  - name: un
    traffic: {pattern: uniform, loads: [0.1, 0.1, 0.1], duration: 4s, seed: 1}
`))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fabric.Down(name) })
			dir := t.TempDir()
			pidfile := filepath.Join(fabric.LabDir(name), "ovs", "0", daemon+".pid")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			killed := make(chan int, 1)
			go func() {
				// Kill once the lab is up and the first point runs:
				// wait for its first metrics.json.
				for ctx.Err() == nil {
					if _, err := os.Stat(filepath.Join(dir, "metrics.json")); err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				b, _ := os.ReadFile(pidfile)
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				killed <- pid
			}()
			start := time.Now()
			_, err = Run(ctx, sc, Options{Out: dir, Warmup: 100 * time.Millisecond, Drain: 100 * time.Millisecond})
			pid := <-killed
			if pid <= 0 {
				t.Fatalf("no %s pid in %s", daemon, pidfile)
			}
			if err == nil {
				t.Fatalf("run went on after %s (pid %d) was killed", daemon, pid)
			}
			if !strings.Contains(err.Error(), daemon) {
				t.Errorf("error does not name %s: %v", daemon, err)
			}
			// Three points of 4 s: a run that did not stop would take 13 s.
			if d := time.Since(start); d > time.Minute {
				t.Errorf("run took %v to fail", d)
			}
			b, rerr := os.ReadFile(filepath.Join(dir, FailedFile))
			if rerr != nil || !strings.Contains(string(b), daemon) {
				t.Errorf("%s: %q, %v: want the reason naming %s", FailedFile, b, rerr, daemon)
			}
			// What was measured before stays, marked incomplete: not "the
			// machine did not keep up", not "no expectations".
			sum, serr := os.ReadFile(filepath.Join(dir, "summary.md"))
			if serr != nil || !strings.Contains(string(sum), "**INCOMPLETE**") || !strings.Contains(string(sum), daemon) {
				t.Errorf("summary.md of the failed run: %v\n%.600s", serr, sum)
			}
			t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}
