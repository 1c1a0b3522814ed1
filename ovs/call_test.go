package ovs

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/roottest"
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

// A wedged ovsdb-server (stopped with SIGSTOP) fails an OVSDB transaction
// within CallTimeout instead of hanging `up`.
func TestTransactTimeout(t *testing.T) {
	roottest.NeedOVS(t)
	ctx := context.Background()
	ns := fmt.Sprintf("efo-tx%d", os.Getpid()%100000)
	newNetNS(t, ns)
	inst, err := Start(ctx, Config{Lab: "efo-tx", RunDir: t.TempDir(), NetNS: ns, Datapath: DatapathNetdev})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	pid := readPid(inst.cfg.path(dbPid))
	syscall.Kill(pid, syscall.SIGSTOP)
	defer syscall.Kill(pid, syscall.SIGCONT)
	old := CallTimeout
	CallTimeout = time.Second
	defer func() { CallTimeout = old }()
	start := time.Now()
	err = inst.CreateBridges(ctx, []Bridge{{Name: "b0", Ports: nil}})
	if err == nil {
		t.Fatal("transaction with a stopped ovsdb-server succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to fail: %v", d, err)
	}
	t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
}
