package kernel

import (
	"os/exec"
	"regexp"
	"testing"

	"github.com/ethfab/ethfab/internal/roottest"
)

// A veth reports 10 Gbit/s through ethtool, read inside its namespace, and
// counts what it sends.
func TestLinkSpeedAndTxBytes(t *testing.T) {
	roottest.Need(t)
	a, b := testPrefix+"spa", testPrefix+"spb"
	makeNamespaces(t, a, b)
	if err := CreateVeths([]Veth{{A: VethEnd{NS: a, Name: "x"}, B: VethEnd{NS: b, Name: "y"}}}, 1); err != nil {
		t.Fatal(err)
	}
	bps, err := LinkSpeedBps(a, "x")
	if err != nil || bps != 10_000_000_000 {
		t.Fatalf("veth speed %d, %v; want 10 Gbit/s", bps, err)
	}
	if _, err := LinkSpeedBps(a, "nope"); err == nil {
		t.Error("the speed of no interface")
	}
	if _, err := LinkTxBytes(b, "y"); err != nil {
		t.Fatal(err)
	}
}

// ethtoolK reads `ethtool -k IF` in namespace ns: feature name → on.
func ethtoolK(t *testing.T, ns, ifname string) map[string]bool {
	t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Skip("no ethtool command (scripts/provision.sh installs it)")
	}
	out := inNS(t, ns, "ethtool", "-k", ifname)
	got := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*([a-z0-9_-]+): (on|off)`).FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[2] == "on"
	}
	return got
}

// atDepth calls fn with depth frames of its own below it, so that the
// calls fn makes start at every position relative to the goroutine's stack
// bound. The library this replaced lost its feature names when a call grew
// the stack between taking a buffer's address and the ioctl.
//
//go:noinline
func atDepth(depth int, fn func()) {
	var pad [16]byte
	if depth > 0 {
		atDepth(depth-1, fn)
		pad[depth%16]++
		return
	}
	fn()
}

// TestEthtoolFeatures reads a veth's features as `ethtool -k` does, from
// every stack depth, and turns its segmentation offloads and tx checksum
// off as `ethtool -K` would.
func TestEthtoolFeatures(t *testing.T) {
	roottest.Need(t)
	a, _ := pairOfNamespaces(t, "eth")
	want := ethtoolK(t, a, "eth0")
	if len(want) < 20 {
		t.Fatalf("ethtool -k listed %d features", len(want))
	}
	for depth := 0; depth < 600; depth++ {
		// withEthtool's function runs on a new goroutine (InNamespace's),
		// on a small stack: the depth is taken there.
		var f *features
		err := withEthtool(a, func(s ethtoolSock) error {
			var err error
			atDepth(depth, func() { f, err = s.features("eth0") })
			return err
		})
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		// ethtool -k also prints legacy groups (tcp-segmentation-offload):
		// every kernel name it prints must agree, and it prints most.
		same := 0
		for i, name := range f.names {
			if on, ok := want[name]; ok {
				if on != f.active[i] {
					t.Fatalf("depth %d: %s on %v; ethtool -k says on %v", depth, name, f.active[i], on)
				}
				same++
			}
		}
		if same < 40 {
			t.Fatalf("depth %d: %d of %d names read are in ethtool -k's list of %d", depth, same, len(f.names), len(want))
		}
	}

	if err := DisableSegmentation(a, "eth0"); err != nil {
		t.Fatal(err)
	}
	if err := DisableTxChecksum(a, "eth0"); err != nil {
		t.Fatal(err)
	}
	after := ethtoolK(t, a, "eth0")
	for _, name := range []string{"generic-segmentation-offload", "tcp-segmentation-offload", "tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp6-segmentation", txChecksumFeature} {
		if on, ok := after[name]; !ok || on {
			t.Errorf("after turning it off, ethtool -k says %s: listed %v, on %v", name, ok, on)
		}
	}
	if err := DisableSegmentation(a, "eth0"); err != nil {
		t.Errorf("a second DisableSegmentation: %v", err)
	}

	err := withEthtool(a, func(s ethtoolSock) error {
		f, err := s.features("eth0")
		if err != nil {
			return err
		}
		// A veth's tx-checksum-ipv4 is fixed off: turning it on must fail
		// by name, not pass silently.
		if err := s.setFeatures("eth0", f, map[string]bool{"tx-checksum-ipv4": true}); err == nil {
			t.Error("turning a fixed feature on passed")
		}
		if err := s.setFeatures("eth0", f, map[string]bool{"no-such-feature": false}); err == nil {
			t.Error("an unknown feature passed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := withEthtool(a, func(s ethtoolSock) error { _, err := s.features("no-such-if0"); return err }); err == nil {
		t.Error("features of a missing interface passed")
	}
	if err := withEthtool(a, func(s ethtoolSock) error { _, err := s.features("a-name-far-too-long"); return err }); err == nil {
		t.Error("an interface name over 15 bytes passed")
	}
}
