package fabric

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/kernel"
	"github.com/ethfab/ethfab/emulator/scenario"
)

// TestMain lets the test binary play `ethfab up` in a child process, so a
// test can kill it with SIGKILL at a chosen step.
func TestMain(m *testing.M) {
	if name := os.Getenv("ETHFAB_TEST_UP"); name != "" {
		sc, err := scenario.Parse(name+".yaml", []byte(os.Getenv("ETHFAB_TEST_SCENARIO")))
		if err == nil {
			_, err = Up(context.Background(), sc, UpOptions{Progress: os.Stdout})
		}
		if err != nil {
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
	needRoot(t)
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
			if err := Down(lab); err != nil {
				t.Fatalf("down after a killed up: %v", err)
			}
			assertGone(t, lab, runDir)
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
