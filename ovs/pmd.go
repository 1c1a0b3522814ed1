package ovs

import (
	"maps"
	"os"
	"strconv"
)

// PMDSwitchPath is where scripts/ovs/build.sh installs ethfab's
// ovs-vswitchd, the Debian package's version with the PortPMD port type
// added (scripts/ovs/linux-pmd.patch). It sits outside PATH so that the
// system's Open vSwitch, if any, keeps its own.
const PMDSwitchPath = "/usr/local/lib/ethfab/ovs-vswitchd"

// FindPMDSwitch returns the ovs-vswitchd that supports PortPMD:
// $ETHFAB_OVS_VSWITCHD if set, else PMDSwitchPath if installed, else "".
// Start checks the daemon's published interface types, so a binary that
// is found but lacks the type fails there, by name.
func FindPMDSwitch() string {
	if p := os.Getenv("ETHFAB_OVS_VSWITCHD"); p != "" {
		return p
	}
	if st, err := os.Stat(PMDSwitchPath); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return PMDSwitchPath
	}
	return ""
}

// PMDMaxSleep is how long, in µs, a PMD thread of ethfab's ovs-vswitchd
// waits for frames in epoll before it looks at its other duties (reload
// requests, statistics); a frame ends the wait at once, so it adds no
// latency. 10 ms is the most OVS accepts (other_config:pmd-maxsleep).
const PMDMaxSleep = 10000

// PMDOtherConfig is other_config for an instance whose ports are
// PortPMD: base plus a PMD thread on each of the first cores cores
// (pmd-cpu-mask; without it OVS starts one per NUMA node), blocked in
// epoll while their ports are idle, so that they take a core only while
// there are frames and share the cores with the hosts' traffic engine.
func PMDOtherConfig(base map[string]string, cores int) map[string]string {
	m := maps.Clone(base)
	if m == nil {
		m = maps.Clone(DefaultOtherConfig)
	}
	if cores > 0 {
		m["pmd-cpu-mask"] = "0x" + strconv.FormatUint(1<<cores-1, 16)
	}
	m["pmd-maxsleep"] = strconv.Itoa(PMDMaxSleep)
	return m
}
