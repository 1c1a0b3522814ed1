package kernel

import (
	"os"
	"strings"
)

// rcuExpedited is the kernel's switch for expedited RCU grace periods.
const rcuExpedited = "/sys/kernel/rcu_expedited"

// ExpediteRCU turns on expedited RCU grace periods until restore is
// called, which puts back what was there. Closing a packet socket waits
// for a grace period (packet_release calls synchronize_net), and an
// ovs-vswitchd of the userspace datapath holds one per port: at the 16–24
// ms of a normal grace period on the test VM, a 252-port switch takes
// seconds to die after its last syscall, burning CPU the next lab needs
// (one expedited grace period: 0.3 ms). A kernel without the switch, or a
// read-only /sys, makes this a no-op.
func ExpediteRCU() (restore func()) {
	old, err := os.ReadFile(rcuExpedited)
	if err != nil || strings.TrimSpace(string(old)) != "0" {
		return func() {}
	}
	if err := os.WriteFile(rcuExpedited, []byte("1"), 0); err != nil {
		return func() {}
	}
	return func() { os.WriteFile(rcuExpedited, old, 0) }
}
