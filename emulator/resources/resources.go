// Package resources estimates what a fabric will cost this machine before
// anything is built — memory, kernel objects, time — from per-object costs
// measured here, and refuses a size that does not fit with the estimate,
// what the machine has and the largest size that would. Pure: the caller
// says how much memory is available.
//
// Why: a 16,512-host `up` once ran for 7 minutes towards ~11 GB before it
// was stopped, its `down` released ~64k packet-socket BPF filters at once
// and wedged the kernel's events workqueue (every later BPF attach hung
// until the machine restarted), and `plan` of a 16.7M-host Dragonfly grew
// past 12 GB without a word.
package resources

import (
	"fmt"
	"math"
	"strings"

	"github.com/ethfab/ethfab/topology"
)

// Per-object costs, measured on the 2-core, 24 GiB test VM with
// DF(4,8,4) (1,056 hosts, 264 switches, 3,960 OVS ports, 2,508 veth
// pairs, 8 vswitchd instances): kernel slab +510 MiB, the lab's OVS
// daemons 431 MiB resident, MemAvailable down 849 MiB once up; and on the
// eBPF datapath with DF(6,12,6) (5,256 hosts, 12,702 veth pairs, 20,148
// ports): slab +2,460 MiB, MemAvailable down 2,497 MiB.
const (
	// KernelPerVethMiB: slab per veth pair with its share of namespaces
	// and the tbf queues on both ends.
	KernelPerVethMiB = 0.21
	// OVSPerPortMiB: ovs-vswitchd and ovsdb-server resident memory per
	// port (userspace datapath).
	OVSPerPortMiB = 0.11
	// AgentPerHostMiB: the ethfab process per host while its agents and
	// traffic engine run (1,056 agents take 173 MB).
	AgentPerHostMiB = 0.17
	// RingPerHostMiB: the traffic engine's receive ring per host, kernel
	// memory allocated when the engine opens (16 blocks of 32 KiB:
	// hostagent/traffic's sinkRing).
	RingPerHostMiB = 0.5
	// PairB: what the traffic engine keeps per (source, destination)
	// host pair, all of it written before a measurement starts: a sink's
	// state per source (hostagent/traffic's flow, 48 bytes) and a
	// source's next sequence number per destination (4 bytes); a test
	// there holds both. 53 MiB for DF(4,8,4), 4.7 GiB for 9,900 hosts.
	PairB = 52
	// PlanPerHostB and PlanPerPortB: `ethfab plan`'s memory per host and
	// per switch port (topology, addresses, the switches' tables being
	// compiled): 310 MB for the paper's 300,024-host Dragonfly, 355 MB
	// for its 303,750-host Flattened Butterfly, 45 MB for DF(8,16,8).
	PlanPerHostB = 300
	PlanPerPortB = 200
	PlanBaseMiB  = 30
)

// Datapath is what forwards a lab's frames, as far as its cost goes.
type Datapath string

const (
	// OVSUserspace is Open vSwitch's userspace datapath (netdev): its
	// daemons' memory per port, and a packet socket per port, each with
	// a classic BPF filter of its own that a dying ovs-vswitchd releases
	// all at once.
	OVSUserspace Datapath = "netdev"
	// OVSKernel is Open vSwitch's kernel module (system): the daemons'
	// memory, ports with no socket.
	OVSKernel Datapath = "system"
	// EBPF is ethfab's tc program: no daemons, one program shared by
	// every port (a lab's down frees one program, traced:
	// kernel/cmd/closebench's method on DF(4,8,4) and DF(6,12,6)).
	EBPF Datapath = "ebpf"
)

// MaxOVSPorts is the largest userspace Open vSwitch lab `up` builds. Each
// port is a packet socket with a classic BPF filter of its own (Open
// vSwitch's), freed through a kernel work item when the socket closes,
// and a dying ovs-vswitchd closes them all at once: DF(4,8,4)'s 3,960 (a
// `down` queued 3,960 such frees, traced) took the workers from 35 to
// 37, none blocked, while ~64k at once (dragonfly:p=8,a=16,h=8) blocked
// ~2,050 workers and every later BPF attach until a restart. Twice the
// largest size measured safe. The eBPF datapath and the kernel module
// have no such sockets.
const MaxOVSPorts = 8192

// Fraction of the available memory an estimate may use: the rest is
// headroom for the estimate's error and for what else runs.
const MemoryHeadroom = 0.8

// Estimate is what a fabric is expected to cost.
type Estimate struct {
	Spec          string   `json:"spec"`
	Datapath      Datapath `json:"datapath,omitempty"`
	Hosts         int      `json:"hosts"`
	Switches      int      `json:"switches"`
	Ports         int      `json:"ports"`
	VethPairs     int      `json:"veth_pairs"`
	Namespaces    int      `json:"namespaces"`
	PacketSockets int      `json:"packet_sockets"` // Open vSwitch's, with a classic BPF filter each: one per port on the userspace datapath
	// MemoryMiB is the lab and its hosts' agents; TrafficMiB what a run's
	// traffic engine adds when it opens.
	MemoryMiB  float64 `json:"memory_mib"`
	TrafficMiB float64 `json:"traffic_mib,omitempty"`
	UpSeconds  float64 `json:"up_seconds,omitempty"`
}

// ForLab estimates `ethfab up` of the fabric s on datapath dp, with its
// hosts' agents running, and what a traffic phase adds.
func ForLab(s topology.Spec, dp Datapath) Estimate {
	hosts, switches, ports := s.Size()
	// Every host link is a veth pair; every inter-switch link takes two
	// switch ports.
	e := ForPart(hosts, hosts, switches, ports, hosts+(ports-hosts)/2, 0, dp)
	e.Spec = s.String()
	return e
}

// ForPart estimates one machine's part of a fabric split across machines
// (package partition): its hosts (of labHosts in the lab), switches and ports, its veth pairs
// (host links and the links inside the part) and its tunnels (the cut
// links' ends here). A tunnel is one VXLAN device where a veth pair is
// two: counted as half a pair in memory and time, not measured yet.
func ForPart(hosts, labHosts, switches, ports, vethPairs, tunnels int, dp Datapath) Estimate {
	e := Estimate{Datapath: dp, Hosts: hosts, Switches: switches, Ports: ports, VethPairs: vethPairs, Namespaces: hosts + 1}
	devices := float64(vethPairs) + float64(tunnels)/2
	e.MemoryMiB = KernelPerVethMiB*devices + AgentPerHostMiB*float64(hosts)
	if dp != EBPF {
		e.MemoryMiB += OVSPerPortMiB * float64(ports)
	}
	if dp == OVSUserspace {
		e.PacketSockets = ports
	}
	e.TrafficMiB = trafficMiB(hosts, labHosts)
	e.UpSeconds = upSeconds(hosts, devices, ports, dp)
	return e
}

// upSeconds is bring-up time from the steps' measured costs (this VM,
// 2026-11-29): namespaces 0.7 ms each (16,762 in 11.9-15.2 s, since
// their sysctls go through a private /proc: kernel.mountProc); veth
// pairs 1.18 s for 2,508, 10.5 s for 12,702 and 71-75 s for 40,248, each
// costing more the more there are (the kernel's link-watch work holds
// RTNL against the creators: 35% of the step's CPU spinning on it), so
// 1.18 s x (pairs/2,508)^1.5; shaping 0.07 ms per link end; addressing
// 0.45 ms per host; rules ~4 per port at 0.015 ms (Open vSwitch's
// bundles, 65k/s; the eBPF datapath's maps about as fast); Open vSwitch's
// bridges and ports 0.7 ms per port. DF(8,16,8) on the eBPF datapath:
// 104 s estimated, 101.6-108.6 s measured.
func upSeconds(hosts int, links float64, ports int, dp Datapath) float64 {
	t := 0.0007*float64(hosts+1) + 1.18*math.Pow(links/2508, 1.5) +
		0.00007*2*links + 0.00045*float64(hosts) + 0.000015*4*float64(ports)
	if dp != EBPF {
		t += 0.0007 * float64(ports)
	}
	return t
}

// ForPlan estimates `ethfab plan` of the fabric s.
func ForPlan(s topology.Spec) Estimate {
	hosts, switches, ports := s.Size()
	e := Estimate{Spec: s.String(), Hosts: hosts, Switches: switches, Ports: ports}
	e.MemoryMiB = PlanBaseMiB + (PlanPerHostB*float64(hosts)+PlanPerPortB*float64(ports))/(1<<20)
	return e
}

// CheckLab refuses a lab that does not fit: memory above MemoryHeadroom
// of availMiB, or more Open vSwitch packet sockets than MaxOVSPorts
// (maxPorts overrides it when positive).
func CheckLab(e Estimate, availMiB float64, maxPorts int) error {
	if maxPorts <= 0 {
		maxPorts = MaxOVSPorts
	}
	var why []string
	if e.MemoryMiB > MemoryHeadroom*availMiB {
		why = append(why, fmt.Sprintf("it needs about %.1f GiB of memory and %.1f GiB is available (%.0f%% of it may be used)",
			e.MemoryMiB/1024, availMiB/1024, 100*MemoryHeadroom))
	}
	if e.PacketSockets > maxPorts {
		why = append(why, fmt.Sprintf("its %d switch ports are %d Open vSwitch packet sockets with a BPF filter each, more than the %d this machine tears down safely (ovs.datapath: ebpf has none; ETHFAB_MAX_PORTS overrides it on a machine you can restart)",
			e.Ports, e.PacketSockets, maxPorts))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%s is too large for this machine: %s; estimate: %s; %s",
		e.Spec, strings.Join(why, "; "), e.Text(), largestFit(e.Spec, func(s topology.Spec) bool {
			f := ForLab(s, e.Datapath)
			return f.MemoryMiB <= MemoryHeadroom*availMiB && f.PacketSockets <= maxPorts
		}))
}

// CheckPlan refuses a plan whose memory does not fit.
func CheckPlan(e Estimate, availMiB float64) error {
	if e.MemoryMiB <= MemoryHeadroom*availMiB {
		return nil
	}
	return fmt.Errorf("planning %s needs about %.1f GiB of memory (%d hosts, %d switch ports) and %.1f GiB is available; %s",
		e.Spec, e.MemoryMiB/1024, e.Hosts, e.Ports, availMiB/1024, largestFit(e.Spec, func(s topology.Spec) bool {
			return ForPlan(s).MemoryMiB <= MemoryHeadroom*availMiB
		}))
}

// trafficMiB is a traffic engine's memory for hosts hosts of a lab of
// labHosts: their receive rings, and their state for every source
// host of the lab.
func trafficMiB(hosts, labHosts int) float64 {
	n := float64(hosts)
	return RingPerHostMiB*n + PairB*n*float64(labHosts)/(1<<20)
}

// CheckTraffic refuses a traffic engine for hosts hosts whose receive
// rings and per-pair state do not fit in availMiB.
func CheckTraffic(hosts int, availMiB float64) error {
	need := trafficMiB(hosts, hosts)
	if need <= MemoryHeadroom*availMiB {
		return nil
	}
	return fmt.Errorf("a traffic engine for %d hosts does not fit this machine: its receive rings and per-pair state need %.1f GiB (%.1f MiB a host and %d bytes a host pair) and %.1f GiB is available (%.0f%% of it may be used)",
		hosts, need/1024, RingPerHostMiB, PairB, availMiB/1024, 100*MemoryHeadroom)
}

// Text is the estimate in one line.
func (e Estimate) Text() string {
	s := fmt.Sprintf("%d hosts, %d switches, %d ports, %d veth pairs, %d namespaces, %d packet sockets, %.2f GiB",
		e.Hosts, e.Switches, e.Ports, e.VethPairs, e.Namespaces, e.PacketSockets, e.MemoryMiB/1024)
	if e.Datapath != "" {
		s = string(e.Datapath) + " datapath: " + s
	}
	if e.TrafficMiB > 0 {
		s += fmt.Sprintf(" (+%.2f GiB while traffic runs)", e.TrafficMiB/1024)
	}
	if e.UpSeconds > 0 {
		s += fmt.Sprintf(", up in about %.0f s", math.Ceil(e.UpSeconds))
	}
	return s
}

// largestFit names the largest fabric of the same kind that fits: for a
// Dragonfly the largest balanced one (a = 2p = 2h, every group), for a
// Flattened Butterfly the same dimensions and hosts per switch with the
// first dimension shrunk, for a Clos the fewest pods cut.
func largestFit(spec string, fits func(topology.Spec) bool) string {
	s, err := topology.ParseSpec(spec)
	if err != nil {
		return ""
	}
	var cands []topology.Spec
	switch s.Kind {
	case topology.Dragonfly:
		for p := max(s.P, s.H, s.A/2); p >= 1; p-- {
			cands = append(cands, topology.Spec{Kind: topology.Dragonfly, P: p, A: 2 * p, H: p})
		}
	case topology.FlatFly:
		for k := s.Dims[0]; k >= 2; k-- {
			c := s
			c.Dims = append([]int{k}, s.Dims[1:]...)
			cands = append(cands, c)
		}
	case topology.Clos:
		s = s.Normalize()
		for pods := s.Pods; pods >= 1; pods-- {
			c := s
			c.Pods = pods
			cands = append(cands, c)
		}
	}
	for _, c := range cands {
		if c = c.Normalize(); c.Validate() == nil && fits(c) {
			h, _, _ := c.Size()
			return fmt.Sprintf("the largest %s that fits is %s (%d hosts)", s.Kind, c, h)
		}
	}
	return "no " + string(s.Kind) + " of this shape fits"
}
