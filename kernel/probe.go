package kernel

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Capabilities is what the running kernel offers ethfab, found by trying.
type Capabilities struct {
	Netns     bool `json:"netns"`      // named network namespaces (unshare + bind mount)
	Veth      bool `json:"veth"`       // veth pairs
	TBF       bool `json:"tbf"`        // rate shaping
	HTB       bool `json:"htb"`        // rate shaping, classful
	Netem     bool `json:"netem"`      // delay, jitter, loss
	Clsact    bool `json:"clsact"`     // tc filters on ingress/egress
	Ethtool   bool `json:"ethtool"`    // tx checksum offload can be turned off on a veth
	OVSModule bool `json:"ovs_module"` // openvswitch kernel datapath (datapath_type=system)
	// Realtime: this process may run under SCHED_FIFO, and the kernel
	// throttles real-time tasks (ovs.realtime: auto needs both).
	Realtime bool     `json:"realtime"`
	Kernel   string   `json:"kernel"` // uname -r
	Notes    []string `json:"notes,omitempty"`
}

var probeSeq atomic.Uint32

// ProbePrefix begins every probe namespace's name; the prober's PID and a
// sequence number follow.
const ProbePrefix = "ethfab-probe-"

// SweepProbes deletes the probe namespaces (Probe) of processes that are
// gone: an `up` or `doctor` killed while it probed leaves one, which no
// lab's `down` finds by the lab's name (a CI run's killed-up test left
// ethfab-probe-18543-1 behind). Every down runs it. It returns how many
// it deleted.
func SweepProbes() (int, error) {
	names, err := ListNamespaces(ProbePrefix)
	var dead []string
	for _, n := range names {
		if ownerGone(n, ProbePrefix) {
			dead = append(dead, n)
		}
	}
	return len(dead), errors.Join(err, DeleteNamespaces(dead))
}

// Probe tries each capability for real: it creates a throwaway namespace
// holding a veth pair, installs each qdisc kind on it, flips a checksum
// offload, and looks up the openvswitch generic netlink family (which
// makes the kernel load the module if it can). It removes what it made.
// Needs root; without it every kernel capability reads false, with a note.
func Probe() Capabilities {
	var c Capabilities
	note := func(format string, a ...any) { c.Notes = append(c.Notes, fmt.Sprintf(format, a...)) }
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		c.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	c.OVSModule = probeOVS(note)

	if os.Geteuid() != 0 {
		note("not root: namespaces, veth, qdiscs and real-time scheduling were not tried")
		return c
	}
	if err := RealtimePermitted(); err != nil {
		note("real-time scheduling: %v", err)
	} else if c.Realtime = RealtimeThrottled(); !c.Realtime {
		note("real-time scheduling: kernel.sched_rt_runtime_us is -1 (no throttle), so ovs.realtime: auto stays off")
	}
	name := fmt.Sprintf("%s%d-%d", ProbePrefix, os.Getpid(), probeSeq.Add(1))
	created, err := CreateNamespaces([]string{name})
	defer func() {
		if err := DeleteNamespaces(created); err != nil {
			note("cleanup: %v", err)
		}
	}()
	if err != nil {
		note("named netns: %v", err)
		return c
	}
	c.Netns = true
	err = InNamespace(name, func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}, PeerName: "probe1"}
		if err := h.LinkAdd(v); err != nil {
			note("veth: %v", err)
			return nil
		}
		c.Veth = true
		link, err := h.LinkByName("probe0")
		if err != nil {
			return err
		}
		if err := h.LinkSetUp(link); err != nil {
			return err
		}
		idx := link.Attrs().Index
		root := netlink.QdiscAttrs{LinkIndex: idx, Parent: netlink.HANDLE_ROOT, Handle: rootHandle}
		try := func(kind string, q netlink.Qdisc) bool {
			if err := h.QdiscAdd(q); err != nil {
				note("%s qdisc: %v", kind, err)
				return false
			}
			if err := h.QdiscDel(q); err != nil {
				note("%s qdisc delete: %v", kind, err)
			}
			return true
		}
		c.TBF = try("tbf", tbf(idx, netlink.HANDLE_ROOT, rootHandle, Shaping{RateBps: 50e6}))
		c.HTB = try("htb", netlink.NewHtb(root))
		c.Netem = try("netem", netem(idx, Shaping{Delay: 1e6}))
		c.Clsact = try("clsact", &netlink.Clsact{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Parent: netlink.HANDLE_CLSACT, Handle: netlink.HANDLE_CLSACT & 0xffff0000}})

		if err := DisableTxChecksum("", "probe0"); err != nil {
			note("ethtool: %v", err)
			return nil
		}
		c.Ethtool = true
		return nil
	})
	if err != nil {
		note("probe in netns: %v", err)
	}
	return c
}

// HasOVSModule reports whether the openvswitch kernel datapath is usable
// (Probe's OVSModule, without the rest of the probe).
func HasOVSModule() bool { return probeOVS(func(string, ...any) {}) }

// probeOVS reports whether the openvswitch kernel datapath is usable.
func probeOVS(note func(string, ...any)) bool {
	if _, err := os.Stat("/sys/module/openvswitch"); err == nil {
		return true
	}
	// Looking the family up makes the kernel try to load the module.
	if _, err := netlink.GenlFamilyGet("ovs_datapath"); err == nil {
		return true
	} else if !errors.Is(err, unix.ENOENT) {
		note("ovs_datapath genetlink family: %v", err)
	}
	note("no openvswitch kernel module: OVS must use the userspace datapath (datapath_type=netdev)")
	return false
}
