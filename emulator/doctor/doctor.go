// Package doctor finds out whether this machine can run ethfab and how:
// which OVS datapath to use, what link shaping is possible, and what to
// install when something required is missing. `ethfab doctor` prints it.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
)

// Check is one thing looked at.
type Check struct {
	Name     string `json:"name"`
	Required bool   `json:"required"`
	OK       bool   `json:"ok"`
	Detail   string `json:"detail,omitempty"`  // version, or why not
	Package  string `json:"package,omitempty"` // Debian package that provides it
}

// Datapaths.
const (
	DatapathSystem = "system" // openvswitch kernel module
	DatapathNetdev = "netdev" // OVS userspace datapath
)

// Shaping levels.
const (
	ShapingFull     = "rate+delay+jitter+loss" // tbf and netem
	ShapingRateOnly = "rate-only"              // tbf, no netem
	ShapingNone     = "none"
)

// Report is the result of Run.
type Report struct {
	Checks       []Check             `json:"checks"`
	Capabilities kernel.Capabilities `json:"capabilities"`
	Datapath     string              `json:"datapath"`
	Shaping      string              `json:"shaping"`
	Fatal        []string            `json:"fatal,omitempty"`   // why ethfab cannot run at all
	Install      string              `json:"install,omitempty"` // apt-get line for missing binaries
	Notes        []string            `json:"notes,omitempty"`
	// Capacity is what bench/capacity.py measured here; nil when it never
	// ran.
	Capacity *Capacities `json:"capacity,omitempty"`
	// CapacityError says why the recorded capacity could not be read.
	CapacityError string `json:"capacity_error,omitempty"`
}

// OK reports whether ethfab can run here.
func (r Report) OK() bool { return len(r.Fatal) == 0 }

type binary struct {
	name, pkg   string
	required    bool
	versionArgs []string // nil: only presence is checked
	why         string
}

var binaries = []binary{
	{"ovsdb-server", "openvswitch-switch", true, []string{"--version"}, "private OVSDB per lab"},
	{"ovs-vswitchd", "openvswitch-switch", true, []string{"--version"}, "the switches"},
	{"ovs-vsctl", "openvswitch-switch", true, []string{"--version"}, "OVS control"},
	{"ovs-ofctl", "openvswitch-switch", true, []string{"--version"}, "bulk OpenFlow rule install"},
	{"ovsdb-tool", "openvswitch-switch", true, []string{"--version"}, "creating the lab's OVS database"},
	{"ip", "iproute2", false, []string{"-V"}, "`ip netns exec` into hosts"},
	{"tc", "iproute2", false, []string{"-V"}, "inspecting shaping"},
	{"ethtool", "ethtool", false, []string{"--version"}, "inspecting offloads (ethfab sets them itself)"},
	{"iperf3", "iperf3", false, []string{"--version"}, "throughput measurements"},
	{"tcpdump", "tcpdump", false, []string{"--version"}, "packet captures"},
}

// Run performs every check. It needs root to probe the kernel; without it
// the report says so (and is fatal). Bounded by ctx for the version calls.
func Run(ctx context.Context) Report {
	var checks []Check
	checks = append(checks, Check{Name: "root", Required: true, OK: os.Geteuid() == 0,
		Detail: fmt.Sprintf("euid %d", os.Geteuid())})
	for _, b := range binaries {
		checks = append(checks, checkBinary(ctx, b))
	}
	checks = append(checks, checkAllocator(ovs.LibDirs()), checkPMDSwitch(), checkEBPF(), checkClock())
	caps := kernel.Probe()
	r := Decide(checks, caps)
	var err error
	if r.Capacity, err = LoadCapacity(); err != nil {
		r.CapacityError = err.Error()
	}
	return r
}

// checkAllocator reports the malloc ovs-vswitchd gets by default
// (ovs.allocator: auto); see ovs/allocator.go for why it matters.
func checkAllocator(dirs []string) Check {
	name, lib, err := ovs.FindAllocator(ovs.AllocatorAuto, dirs)
	if err == nil && lib != "" {
		return Check{Name: "vswitchd malloc", OK: true, Detail: fmt.Sprintf("%s (%s) for ovs-vswitchd", name, lib)}
	}
	return Check{Name: "vswitchd malloc", Package: ovs.Allocators[0].Package,
		Detail: "none installed: ovs-vswitchd keeps the C library's malloc, slower for the userspace datapath"}
}

// checkPMDSwitch reports whether ethfab's ovs-vswitchd, whose ports
// (ovs.PortPMD) are read by PMD threads rather than by the main thread on
// every frame, is installed.
func checkPMDSwitch() Check {
	if p := ovs.FindPMDSwitch(); p != "" {
		return Check{Name: "vswitchd pmd ports", OK: true, Detail: p + " (userspace-datapath labs read their ports with PMD threads)"}
	}
	return Check{Name: "vswitchd pmd ports", Detail: "not installed: userspace-datapath labs use stock OVS, whose main thread reads every port on every frame: more CPU and latency, and fabrics of thousands of ports starve (scripts/ovs/build.sh)"}
}

// checkEBPF reports whether the kernel runs ethfab's eBPF datapath
// (ovs.datapath: ebpf): its program loaded and verified here.
func checkEBPF() Check {
	if os.Geteuid() != 0 {
		return Check{Name: "ebpf datapath", Detail: "not checked: loading a program needs root"}
	}
	if err := datapath.Probe(); err != nil {
		return Check{Name: "ebpf datapath", Detail: "unavailable (" + err.Error() + "): labs use Open vSwitch"}
	}
	return Check{Name: "ebpf datapath", OK: true, Detail: "ovs.datapath: ebpf runs here (no Open vSwitch: the tables in BPF maps, one tc program per switch port)"}
}

// checkClock reports whether the system clock is synchronized closely
// enough (kernel.MaxClockErrorUs) for runs across machines to take the
// one-way latency of frames between machines.
func checkClock() Check {
	c, err := kernel.ReadClockSync()
	if err != nil {
		return Check{Name: "clock", Detail: "unknown (" + err.Error() + "): runs across machines take latency within a machine only"}
	}
	by := "no clock daemon running"
	if len(c.Daemons) > 0 {
		by = strings.Join(c.Daemons, ", ")
	}
	if c.Agrees() {
		return Check{Name: "clock", OK: true, Detail: fmt.Sprintf("synchronized (%s), estimated error %d µs: runs across machines take one-way latency between machines too", by, c.EstErrorUs)}
	}
	if c.Synced {
		return Check{Name: "clock", Detail: fmt.Sprintf("synchronized (%s) but estimated error %d µs, more than %d: runs across machines take latency within a machine only (PTP, linuxptp's ptp4l and phc2sys, gets under 1 µs)", by, c.EstErrorUs, kernel.MaxClockErrorUs)}
	}
	return Check{Name: "clock", Detail: fmt.Sprintf("not synchronized (%s): runs across machines take latency within a machine only (emulated machines share this one's clock)", by)}
}

func checkBinary(ctx context.Context, b binary) Check {
	c := Check{Name: b.name, Required: b.required, Package: b.pkg}
	path, err := exec.LookPath(b.name)
	if err != nil {
		c.Detail = "not found (" + b.why + ")"
		return c
	}
	c.OK = true
	c.Detail = path
	if b.versionArgs == nil {
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, b.versionArgs...).CombinedOutput()
	if line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n"); err == nil && line != "" {
		c.Detail = strings.TrimSpace(line)
	}
	return c
}

// Decide turns checks and kernel capabilities into the verdict. It is pure
// so the decisions can be tested on any machine.
func Decide(checks []Check, caps kernel.Capabilities) Report {
	r := Report{Capabilities: caps, Notes: caps.Notes}
	kchecks := []Check{
		{Name: "netns", Required: true, OK: caps.Netns, Detail: "one namespace per host and one for the fabric"},
		{Name: "veth", Required: true, OK: caps.Veth, Detail: "links"},
		{Name: "tbf qdisc", OK: caps.TBF, Detail: "link rate"},
		{Name: "htb qdisc", OK: caps.HTB, Detail: "link rate (classful)"},
		{Name: "netem qdisc", OK: caps.Netem, Detail: "link delay, jitter, loss"},
		{Name: "clsact qdisc", OK: caps.Clsact, Detail: "tc filters"},
		{Name: "ethtool offloads", OK: caps.Ethtool, Detail: "tx checksum off on veths (TCP over the userspace datapath)"},
		{Name: "openvswitch module", OK: caps.OVSModule, Detail: "kernel datapath"},
		{Name: "real-time scheduling", OK: caps.Realtime, Detail: "SCHED_FIFO for the run's threads while traffic runs, throttled by the kernel (ovs.realtime)"},
	}
	r.Checks = append(slices.Clone(checks), kchecks...)

	r.Datapath = DatapathNetdev
	if caps.OVSModule {
		r.Datapath = DatapathSystem
	}
	switch {
	case caps.TBF && caps.Netem:
		r.Shaping = ShapingFull
	case caps.TBF || caps.HTB:
		r.Shaping = ShapingRateOnly
	default:
		r.Shaping = ShapingNone
	}
	if r.Datapath == DatapathNetdev && !caps.Ethtool {
		r.Notes = append(r.Notes, "tx checksum offload cannot be turned off: TCP between hosts over the userspace datapath will fail")
	}

	root := true
	for _, c := range checks {
		if c.Name == "root" {
			root = c.OK
		}
	}
	var pkgs []string
	for i, c := range r.Checks {
		if !root && (c.Name == "netns" || c.Name == "veth" || c.Name == "real-time scheduling") {
			// Not tried without root; the root reason covers it.
			r.Checks[i].Detail = "not tried (not root)"
			continue
		}
		if c.OK {
			continue
		}
		if c.Package != "" && !slices.Contains(pkgs, c.Package) {
			pkgs = append(pkgs, c.Package)
		}
		if !c.Required {
			continue
		}
		switch c.Name {
		case "root":
			r.Fatal = append(r.Fatal, "not root: ethfab creates namespaces, links and qdiscs (run with sudo)")
		case "netns":
			r.Fatal = append(r.Fatal, "cannot create network namespaces")
		case "veth":
			r.Fatal = append(r.Fatal, "cannot create veth pairs")
		default:
			r.Fatal = append(r.Fatal, fmt.Sprintf("%s not found (package %s)", c.Name, c.Package))
		}
	}
	if len(pkgs) > 0 {
		r.Install = "apt-get install -y " + strings.Join(pkgs, " ")
	}
	return r
}

// JSON renders the report as indented JSON.
func (r Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// Text renders the report for a terminal.
func (r Report) Text() string {
	var b strings.Builder
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "MISS"
			if !c.Required {
				mark = "no  "
			}
		}
		kind := "optional"
		if c.Required {
			kind = "required"
		}
		fmt.Fprintf(&b, "%s  %-20s %-8s  %s\n", mark, c.Name, kind, c.Detail)
	}
	fmt.Fprintf(&b, "\nkernel    %s\n", r.Capabilities.Kernel)
	fmt.Fprintf(&b, "datapath  %s", r.Datapath)
	if r.Datapath == DatapathNetdev {
		b.WriteString(" (userspace: no openvswitch kernel module)")
	}
	fmt.Fprintf(&b, "\nshaping   %s", r.Shaping)
	if r.Shaping == ShapingRateOnly {
		b.WriteString(" (no netem: scenarios asking for delay, jitter or loss get rate only, or fail if they require it)")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%s\n", capacityNote(r.Capacity, r.CapacityError))
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note      %s\n", n)
	}
	if len(r.Fatal) > 0 {
		b.WriteString("\nethfab cannot run here:\n")
		for _, f := range r.Fatal {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}
	if r.Install != "" {
		fmt.Fprintf(&b, "\ninstall:  %s\n", r.Install)
	}
	if r.OK() {
		b.WriteString("\nready.\n")
	}
	return b.String()
}
