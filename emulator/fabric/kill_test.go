package fabric

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/scenario"
)

// TestMain lets the test binary play `ethfab up` or `ethfab down` in a
// child process, so a test can kill it with SIGKILL at a chosen point.
func TestMain(m *testing.M) {
	if name := os.Getenv("ETHFAB_TEST_UP"); name != "" {
		sc, err := scenario.Parse(name+".yaml", []byte(os.Getenv("ETHFAB_TEST_SCENARIO")))
		if err == nil {
			_, err = Up(context.Background(), sc, UpOptions{Report: steps.Lines(os.Stdout)})
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if name := os.Getenv("ETHFAB_TEST_DOWN"); name != "" {
		fmt.Println("down")
		if err := Down(name); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// An `up` killed with SIGKILL at any step is cleaned by `down`: no
// namespace, daemon, socket or lab directory is left.
func TestKilledUpIsCleanedByDown(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	const lab = "eft-kill"
	yaml := "name: " + lab + "\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2}\nlinks: {host: {rate: 50mbit}}\n"
	// Kill right after each step reports (that is, during the next one),
	// and once before the first report.
	for _, after := range []string{"", "compiled", "namespaces", "veth pairs", "hosts addressed", "open vswitch", "bridges", "rules"} {
		t.Run("after "+after, func(t *testing.T) {
			t.Cleanup(func() { Down(lab) })
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "ETHFAB_TEST_UP="+lab, "ETHFAB_TEST_SCENARIO="+yaml)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			seen := after == ""
			for !seen && sc.Scan() {
				seen = strings.HasPrefix(sc.Text(), after)
			}
			if after == "" {
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			if !seen {
				t.Fatalf("up never reported %q", after)
			}
			var runDir string
			if l, err := Load(lab); err == nil {
				runDir = l.OVS.RunDir
			}
			// The kill must have left something behind for down to find,
			// or this test proves nothing.
			if ns, _ := kernel.ListNamespaces(lab + "-"); after != "" && after != "compiled" && len(ns) == 0 {
				t.Fatalf("killed after %q but no namespace exists", after)
			}
			// Killed before it wrote the lab's state, up made nothing, and
			// down says there is no such lab.
			if err := Down(lab); err != nil && !(errors.Is(err, ErrNoLab) && (after == "" || after == "compiled")) {
				t.Fatalf("down after a killed up: %v", err)
			}
			assertGone(t, lab, runDir)
			// Nor the namespace it probes the kernel in, if the kill came
			// while it probed.
			if left, _ := kernel.ListNamespaces(fmt.Sprintf("%s%d-", kernel.ProbePrefix, cmd.Process.Pid)); len(left) > 0 {
				t.Errorf("the killed up's probe namespace left: %v", left)
			}
			// Nor the private /proc it made its namespaces' sysctls through.
			if left, _ := filepath.Glob(fmt.Sprintf("/run/ethfab-proc-%d-*", cmd.Process.Pid)); len(left) > 0 {
				t.Errorf("the killed up's private /proc left: %v", left)
			}
		})
	}
}

// assertGone checks that nothing of a lab survives: namespaces, daemons,
// sockets, the state directory.
func assertGone(t *testing.T, lab, runDir string) {
	t.Helper()
	if left, _ := kernel.ListNamespaces(lab + "-"); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if _, err := os.Stat(LabDir(lab)); !os.IsNotExist(err) {
		t.Errorf("lab directory left: %v", err)
	}
	if runDir == "" {
		return
	}
	if socks, _ := filepath.Glob(filepath.Join(runDir, "*", "*.sock")); len(socks) > 0 {
		t.Errorf("sockets left: %v", socks)
	}
	ps, _ := exec.Command("ps", "-eo", "stat,args").Output()
	for _, line := range strings.Split(string(ps), "\n") {
		if strings.Contains(line, runDir) && !strings.HasPrefix(line, "Z") {
			t.Errorf("daemon left: %s", line)
		}
	}
}

// A `down` killed at any point leaves a lab that `status` does not call
// up, and host settings that the next `down` restores; that down removes
// everything.
func TestKilledDownIsFinishedByDown(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	const lab = "eft-kdown"
	wmem, _ := readSetting(wmemSetting.path)
	rcu, _ := readSetting(rcuSetting.path)
	for _, after := range []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) {
			t.Cleanup(func() { Down(lab) })
			sc := scenarioFor(t, lab, "{kind: dragonfly, p: 2, a: 4, h: 2}")
			l, err := Up(context.Background(), sc, UpOptions{})
			if err != nil {
				t.Fatal(err)
			}
			runDir := l.OVS.RunDir
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "ETHFAB_TEST_DOWN="+lab)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// From the moment the child calls Down.
			bufio.NewScanner(out).Scan()
			time.Sleep(after)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			// Up means untouched: killed before it began, the down left
			// every daemon running (and Load checked the namespaces).
			if l, err := Load(lab); err == nil && l.State == "up" {
				pids, _ := filepath.Glob(filepath.Join(runDir, "*", "*.pid"))
				for _, p := range pids {
					b, _ := os.ReadFile(p)
					if _, err := os.Stat("/proc/" + strings.TrimSpace(string(b))); err != nil || len(pids) == 0 {
						t.Errorf("killed after %v, the lab reads as up but %s is gone", after, p)
					}
				}
				if len(pids) == 0 {
					t.Errorf("killed after %v, the lab reads as up without pidfiles", after)
				}
			}
			if err := Down(lab); err != nil && !errors.Is(err, ErrNoLab) {
				t.Fatalf("down after a killed down: %v", err)
			}
			assertGone(t, lab, runDir)
			if w, _ := readSetting(wmemSetting.path); w != wmem {
				if labs, _ := List(); len(labs) == 0 {
					t.Errorf("wmem_default %s, was %s", w, wmem)
				}
			}
			if r, _ := readSetting(rcuSetting.path); r != rcu {
				t.Errorf("rcu_expedited %s, was %s", r, rcu)
			}
		})
	}
}
