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

// A port whose device does not exist fails the wait at once, named with
// vswitchd's reason, while the bridge's good port attaches.
func TestMissingPortFailsByName(t *testing.T) {
	roottest.NeedOVS(t)
	ctx := context.Background()
	ns := fmt.Sprintf("efo-mp%d", os.Getpid()%100000)
	newNetNS(t, ns)
	if out, err := exec.Command("ip", "-n", ns, "link", "add", "good0", "type", "veth", "peer", "name", "good1").CombinedOutput(); err != nil {
		t.Fatalf("veth: %v: %s", err, out)
	}
	inst, err := Start(ctx, Config{Lab: "efo-mp", RunDir: t.TempDir(), NetNS: ns, Datapath: DatapathNetdev})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	b := Bridge{Name: "b0", Ports: []Port{{Name: "good0", OFPort: 1}, {Name: "nosuch0", OFPort: 2}}}
	if err := inst.CreateEmptyBridges(ctx, []Bridge{b}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = inst.AddPorts(ctx, []Bridge{b})
	if err == nil || !strings.Contains(err.Error(), "1 interface(s) failed to attach: nosuch0: ") || strings.Contains(err.Error(), "good0") {
		t.Fatalf("got %v, want nosuch0 named, alone", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to fail", d)
	}
	infos, err := inst.Bridges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || len(infos[0].Ports) != 2 || infos[0].Ports[0].Name != "good0" || infos[0].Ports[0].OFPort != 1 || infos[0].Ports[1].Error == "" {
		t.Errorf("bridges %+v: want good0 on ofport 1 and nosuch0 with its error", infos)
	}
}
