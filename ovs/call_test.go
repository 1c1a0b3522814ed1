package ovs

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A daemon that accepts but never answers (wedged, or its database gone)
// makes a call fail within CallTimeout, saying so, instead of hanging.
func TestCallTimeout(t *testing.T) {
	if _, err := exec.LookPath("ovs-appctl"); err != nil {
		t.Skip("needs ovs-appctl")
	}
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, switchCtl))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	old := CallTimeout
	CallTimeout = 300 * time.Millisecond
	defer func() { CallTimeout = old }()
	start := time.Now()
	_, err = Appctl(context.Background(), dir, "version")
	if err == nil || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("got %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestDead(t *testing.T) {
	dir := t.TempDir()
	if d := Dead(dir); len(d) != 2 {
		t.Errorf("no pidfiles: %v, want both daemons named", d)
	}
}
