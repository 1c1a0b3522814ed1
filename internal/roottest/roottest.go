// Package roottest is what ethfab's tests that build real fabrics share:
// they need root and real tools, and skip, naming what is missing, where
// those are not there (a developer's laptop); CI runs them as root.
package roottest

import (
	"os"
	"os/exec"
	"testing"
)

// ovsPrograms are the Open vSwitch programs a test that runs switches needs.
var ovsPrograms = []string{"ovsdb-server", "ovsdb-tool", "ovs-vswitchd", "ovs-ofctl", "ovs-appctl", "ip"}

// Need skips t unless it runs as root and every program in bins is in PATH.
func Need(t testing.TB, bins ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, veths, Open vSwitch)")
	}
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("needs %s", b)
		}
	}
}

// NeedOVS is Need for a test that runs Open vSwitch (and `ip netns exec`)
// and the programs in more.
func NeedOVS(t testing.TB, more ...string) {
	t.Helper()
	Need(t, append(append([]string(nil), ovsPrograms...), more...)...)
}
