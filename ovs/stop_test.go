package ovs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A daemon that survives its stop keeps its pidfile, so that the next
// `down` can still find it, and the stop fails.
func TestStopKeepsPidfileOfSurvivor(t *testing.T) {
	dir := t.TempDir()
	// A stand-in daemon: its command line names the run directory, as a
	// real one's does.
	cmd := exec.Command("sh", "-c", "sleep 60", filepath.Join(dir, "ovs-vswitchd"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Until it has exec'ed, the child's command line is this test's.
	for deadline := time.Now().Add(5 * time.Second); !processAlive(cmd.Process.Pid, dir); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stand-in daemon never showed its run directory")
		}
	}
	pidfile := filepath.Join(dir, switchPid)
	if err := os.WriteFile(pidfile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(st, die time.Duration) { StopTimeout, DieTimeout, signalProcess = st, die, syscall.Kill }(StopTimeout, DieTimeout)
	StopTimeout, DieTimeout = 20*time.Millisecond, 20*time.Millisecond
	signalProcess = func(int, syscall.Signal) error { return nil } // it ignores every signal
	err := StopRunDir(dir)
	if err == nil || !strings.Contains(err.Error(), "survives") {
		t.Fatalf("StopRunDir = %v, want an error saying the daemon survives", err)
	}
	if _, err := os.Stat(pidfile); err != nil {
		t.Fatalf("the survivor's pidfile was removed: %v", err)
	}
	// Once it can be stopped, the next stop does it and cleans up.
	signalProcess = syscall.Kill
	go cmd.Wait() // reap it, or it lingers as a zombie of this test
	if err := StopRunDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("pidfile left after a successful stop: %v", err)
	}
}
