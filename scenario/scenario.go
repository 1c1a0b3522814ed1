// Package scenario reads ethfab scenario files (YAML, version 1): the
// fabric to build, how it is addressed, routed and shaped, and the phases
// to run on it. Every problem is reported with file:line:col and the
// field's path; REFERENCE.md describes every field.
package scenario

import (
	"fmt"
	"os"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/traffic"
	"github.com/ethfab/ethfab/vlan"
)

// Scenario is a validated scenario with every default applied.
type Scenario struct {
	Version     int
	Name        string // lab name; prefixes namespaces and interfaces
	Description string
	Topology    topology.Spec // normalized and validated
	Addressing  Addressing
	Routing     Routing
	// Links has exactly the classes the topology uses (see ClassesOf).
	Links map[LinkClass]LinkSpec
	// SwitchProfile is a seed 002 switch (switchprofile.Profile's name):
	// each traffic point is priced as one (power per phase), and link
	// events hold a link down for its Table 6 times unless they say
	// otherwise. "" for none.
	SwitchProfile string
	OVS           OVS
	Phases        []Phase
	// Cases are variants `ethfab run` runs one after another (Case).
	Cases []Case

	Source    string   // the file path (or name given to Parse)
	Raw       []byte   // the file as read, before overrides
	Overrides []string // the "PATH=VALUE" of every successful Set, in order

	tree *node // the document with overrides applied; Set edits a copy
}

// Addressing is the `addressing` section.
type Addressing struct {
	Scheme  addressing.Scheme // default addressing.PerGroup
	Compact bool              // rule compaction; default false
	Assign  addressing.Assign // default addressing.AssignStatic
	// SourceGuard: access switches drop frames from a host port whose
	// source MAC is not its host's; default true.
	SourceGuard bool
}

// Routing is the `routing` section. XOff and XOn are only allowed with
// controller.Conditional; zero means "not given" (the controller picks).
type Routing struct {
	Mode controller.Mode // default controller.Minimal
	XOff Threshold
	XOn  Threshold
	// Pause: which ports a congested queue pauses (conditional only;
	// empty means PauseUpstream).
	Pause PauseScope
	// QCN: routing.qcn, with mode qcn-switch only (then never nil).
	QCN *QCN
	// VLAN: routing.vlan, with mode vlan only (then never nil).
	VLAN *VLANRouting
}

// VLANRouting is routing.vlan: seed 002's switch-tagged VLAN routing.
type VLANRouting struct {
	Assign vlan.Method // fixed | renamed (default)
	// Torus: the paths on a torus with two links between neighbours,
	// dateline (default) or lines (vlan.Torus).
	Torus vlan.Torus
	// MACs: static, the filtering databases registered from the paths
	// (the paper's static registration, the default), or learn: every
	// switch learns as an 802.1Q bridge, its entries aging out after
	// Aging (0: never; default 300s), and with Learning "broadcasts" (the
	// default) the host agent sends seed 002's learning procedure's
	// broadcast in every VLAN from every host before each load, and
	// again every Aging/2; "none" sends none (the paper's learning
	// problem: unknown unicasts flood).
	MACs     string
	Aging    time.Duration
	Learning string
	// TaggedHosts are hosts whose switch ports are tagged members of
	// their VLANs (seed 002's T ports): they send and receive 802.1Q
	// frames, in their port's VLAN. Seed 002 Tables 4 and 5's U-T and T-U.
	TaggedHosts []string
}

// DefaultAging is a learning switch's aging time (802.1D's 300 s).
const DefaultAging = 300 * time.Second

// QCN is routing.qcn: QCN-Switch's congestion points and per-port
// probabilities (seed 004; ../shared/specs/seeds-002-004-power.md §A.3,
// §A.4.4). DefaultQCN gives the values the spec sets.
type QCN struct {
	Variant     string  // base | source | comparison | complete
	Qeq         uint64  // a congestion point's equilibrium queue, bytes
	W           float64 // weight of the queue's growth in Fb
	SampleEvery int     // transit departures between samples
	Qold        string  // sample | cnm: when Qold is taken
	Lf          float64 // the decrease gain: R = 1 - Lf*Fbq
	Ai          float64 // the increase, percentage points
	PCl         int     // frames a port sends without a CNM before P rises by Ai
	PMin        float64 // P's floor, percent
	// CNMProbability: the share of samples with Fbq > 0 that send a CNM
	// (FOGSim v5 used 0.10; seed 004 does not mention one).
	CNMProbability float64
	// CNMPriority: CNMs ahead of the data queues, as in a strict-priority
	// band (eBPF datapath only: each skips the queue of every port it
	// leaves by). False: they share the links' FIFO with the data.
	CNMPriority bool
	Realise     string        // metadata: the bitmask from a random N every Refresh
	Refresh     time.Duration // how often each switch draws N; 0: auto, by datapath
	// Seed 003 (routing.mode shortest; Variant empty): RP turns on the
	// hosts' reaction points and every inter-switch port's congestion
	// point, which samples every SampleBytes bytes received into its queue.
	RP          bool
	SampleBytes uint64
	// RPIncrease is what clocks the reaction points' increases: the
	// bytes a flow sends (RPBytes, spec §B.2.5) or the time that passes
	// (RPTime; seed 003: "byte counting or timer").
	RPIncrease string
	// Snoop-based adaptive routing (mode snoop-ar): a remote congestion
	// entry's lifetime (250 ms in the paper, unscaled), and whether every
	// remote CNM restarts it (a variant; the paper's rule does not).
	Expiry        time.Duration
	RemoteRefresh bool
	// TimeScale dilates Expiry (spec §0.6): the paper's 10 Gb/s over the
	// emulated link rate keeps every byte-counted quantity (sampling, the
	// reaction points' recovery) in the paper's proportion to the timer.
	// 0 is auto (that ratio, from the inter-switch links' rate); 1 is
	// undilated, the expiry as written.
	TimeScale float64
}

// PaperLinkBps is seed 003's link rate (10 Gb/s), which time_scale: auto
// divides by the emulated one.
const PaperLinkBps = 10e9

// EffectiveExpiry is snoop-ar's remote expiry in wall-clock time: Expiry
// times the time scale (auto: PaperLinkBps over the rate of the links
// given, those between switches).
func (q *QCN) EffectiveExpiry(linkBps uint64) time.Duration {
	scale := q.TimeScale
	if scale == 0 && linkBps > 0 {
		scale = PaperLinkBps / float64(linkBps)
	}
	return time.Duration(float64(q.Expiry) * max(scale, 1))
}

// Notifies says the switches run QCN congestion points that notify the
// hosts' reaction points (seed 003: mode shortest with qcn.rp).
func (r Routing) Notifies() bool { return r.QCN.Seed003() && r.QCN.RP }

// Watched says a monitor reads the switches' queues while traffic runs:
// conditional routing, QCN-Switch, or seed 003's congestion points.
func (r Routing) Watched() bool {
	return r.Mode.Conditions() || r.Notifies() || r.Mode == controller.SnoopAR
}

// Seed003 says q is seed 003's notification-only QCN (mode shortest)
// rather than QCN-Switch's.
func (q *QCN) Seed003() bool { return q != nil && q.Variant == "" }

// QCN variants and the other enumerations of routing.qcn.
const (
	QCNBase       = "base"
	QCNSource     = "source"
	QCNComparison = "comparison"
	QCNComplete   = "complete"
	QoldSample    = "sample"
	QoldCNM       = "cnm"
	RealiseMeta   = "metadata"
	RPBytes       = "bytes"
	RPTime        = "time"
)

// DefaultQCN is routing.qcn's defaults (spec §A.3: 16 KB Qeq with a
// 64 KB inter-switch queue, w = 2, a sample every 100 frames, Lf = 1/128,
// Ai = 1 point, PCl = 100 frames, N refreshed at the datapath's pace).
func DefaultQCN() QCN {
	return QCN{Variant: QCNBase, Qeq: 16 << 10, W: 2, SampleEvery: 100, Qold: QoldSample, Lf: 1.0 / 128,
		Ai: 1, PCl: 100, CNMProbability: 1, Realise: RealiseMeta}
}

// DefaultNotifyQCN is routing.qcn's defaults under mode shortest (seed
// 003, spec §B.2.3: the 802.1Qau standard's 33 KB Qeq, w = 2, a sample
// every 150 KB received; reaction points off until rp: true).
func DefaultNotifyQCN() QCN {
	return QCN{Qeq: 33 << 10, W: 2, SampleBytes: 150_000, RPIncrease: RPBytes, Qold: QoldSample, CNMProbability: 1, Expiry: 250 * time.Millisecond}
}

// PauseScope is what an emulated PAUSE reaches.
type PauseScope string

const (
	// PauseUpstream: a port above XOFF pauses itself and the links that
	// feed it, at their upstream end, as lossless Ethernet does.
	PauseUpstream PauseScope = "upstream"
	// PausePort: a port pauses on its own egress queue only.
	PausePort PauseScope = "port"
)

// LinkClass names a class of links that share shaping.
type LinkClass string

// Link classes: host-switch links; intra-group (Dragonfly), dimension
// (Flattened Butterfly) or edge-aggregation (Clos) links; Dragonfly global
// links or Clos aggregation-core links and above.
const (
	HostLinks   LinkClass = "host"
	LocalLinks  LinkClass = "local"
	GlobalLinks LinkClass = "global"
)

// ClassesOf lists the link classes a topology kind has.
func ClassesOf(k topology.Kind) []LinkClass {
	switch k {
	case topology.FlatFly, topology.Mesh, topology.Torus, topology.Ring, topology.MTree, topology.MyriClos, topology.Custom:
		return []LinkClass{HostLinks, LocalLinks}
	case topology.Dragonfly, topology.Clos, topology.FatTree, topology.XGFT:
		return []LinkClass{HostLinks, LocalLinks, GlobalLinks}
	}
	return nil
}

// DefaultRate is the rate of every class when `links` is omitted.
const DefaultRate = 100_000_000

// Impairment is a delay, jitter or loss with whether the run must fail
// when the kernel cannot apply it (no netem) or may go on without it.
// The zero value means "none".
type Impairment[T time.Duration | float64] struct {
	Value    T
	Required bool
}

// LinkSpec is the shaping of one link class.
type LinkSpec struct {
	Rate   uint64 // bits/s
	Delay  Impairment[time.Duration]
	Jitter Impairment[time.Duration]
	Loss   Impairment[float64] // percent, 0..100
	// Limit is the link's queue in bytes (the switch buffer a congestion
	// point watches, e.g. 64kb for QCN); 0: derived from the rate
	// (kernel.TBFParams: the bucket plus 25 ms).
	Limit uint64
}

// Datapath selects the OVS datapath.
type Datapath string

// Datapaths: Auto picks system when the openvswitch module is present,
// netdev (userspace) otherwise. EBPF is ethfab's own in-kernel datapath
// (package emulator/datapath): the same tables, no Open vSwitch process.
const (
	DatapathAuto   Datapath = "auto"
	DatapathNetdev Datapath = "netdev"
	DatapathSystem Datapath = "system"
	DatapathEBPF   Datapath = "ebpf"
)

// OVS is the `ovs` section.
type OVS struct {
	Datapath Datapath // default DatapathAuto
	// Instances: private ovs-vswitchd processes sharing the bridges (0:
	// one per 500 ports). Every flow-table change makes an instance
	// revalidate all its datapath flows, so conditional routing, which
	// changes tables hundreds of times a second, reacts faster on more.
	// On the eBPF datapath: the namespaces the switches are spread over
	// (0: one per 256 ports), which keeps the kernel's device lookups short.
	Instances int
	// Allocator is the malloc ovs-vswitchd runs with: "auto" (default:
	// the first installed of ovs.Allocators, else the system's),
	// "system", or an allocator's name, which must then be installed.
	Allocator string
	// FlowCache is whether the switches cache forwarding decisions
	// (ovs-vswitchd's datapath flows, or the eBPF datapath's flow cache):
	// FlowCacheAuto (default), FlowCacheOn or FlowCacheOff.
	FlowCache FlowCache
	// Ports is how the userspace datapath reads its ports: PortsAuto
	// (default), PortsSocket or PortsPMD.
	Ports Ports
	// Realtime is whether the run's own threads (the traffic engine, the
	// condition monitor, the sampler) run under SCHED_FIFO while traffic
	// runs: RealtimeAuto (default), RealtimeOn or RealtimeOff.
	Realtime Realtime
}

// Realtime selects the run's scheduling while traffic runs.
type Realtime string

// Realtime settings: on puts every thread of ethfab's process under
// SCHED_FIFO for each traffic point (kernel.Realtime), so the emulated
// hosts send when their frames are due, not after whatever ordinary task
// holds the CPU (the fabric's forwarding runs in softirq context, mostly
// at interrupt exit and in the senders' writes; what the kernel defers to
// ksoftirqd waits for these threads). auto is
// on for the eBPF datapath, where no other process forwards frames, when
// the kernel throttles real-time tasks (kernel.RealtimeThrottled), and off
// otherwise: on an Open vSwitch datapath the hosts would run ahead of
// ovs-vswitchd, which forwards their frames.
const (
	RealtimeAuto Realtime = "auto"
	RealtimeOn   Realtime = "on"
	RealtimeOff  Realtime = "off"
)

// Ports selects how ovs-vswitchd's userspace datapath reads frames.
type Ports string

// Port settings: socket is stock OVS (a packet socket per port, all read
// by the main thread whenever one has a frame, along with every bridge's
// upkeep); pmd is ethfab's patched ovs-vswitchd (PMD threads on both cores
// wait on the ports' sockets with epoll and read only those with frames:
// less CPU and latency per frame, and large fabrics no longer starve, the
// peak rate of a small one unchanged; README "Capacity"); auto is pmd when that
// ovs-vswitchd is installed (scripts/ovs/build.sh) and the datapath is
// the userspace one, socket otherwise.
const (
	PortsAuto   Ports = "auto"
	PortsSocket Ports = "socket"
	PortsPMD    Ports = "pmd"
)

// FlowCache selects whether the switches cache forwarding decisions.
// A cached decision outlives a FlowMod until the next revalidation round
// (rounds start at most every 5 ms), which conditional rules, changed
// hundreds of times a second, cannot afford; without the cache every
// frame is looked up in the OpenFlow tables, as switch silicon does.
type FlowCache string

// Flow cache settings: auto is off for conditional routing on the
// userspace datapath (where an uncached frame costs one in-process
// lookup), off on the eBPF datapath past 128 hosts (where the host pairs'
// flows no longer fit its cache: datapath.FlowCacheFits) and where every
// lookup a transit frame makes is a direct slot (datapath.Image.
// TransitHashed), and on otherwise.
const (
	FlowCacheAuto FlowCache = "auto"
	FlowCacheOn   FlowCache = "on"
	FlowCacheOff  FlowCache = "off"
)

// AllocatorNames are the ovs.allocator values (ovs.AllocatorNames, kept
// here so the parser needs no OVS client; a fabric test checks they
// agree).
var AllocatorNames = []string{"auto", "system", "tcmalloc", "mimalloc", "jemalloc"}

// MaxInstances bounds ovs.instances.
const MaxInstances = 64

// PhaseKind says what a phase does.
type PhaseKind string

// Phase kinds; a phase is exactly one of these.
const (
	PhaseDMP      PhaseKind = "dmp"
	PhaseAnnounce PhaseKind = "announce"
	PhaseWait     PhaseKind = "wait"
	PhaseTraffic  PhaseKind = "traffic"
	PhaseMPI      PhaseKind = "mpi"
)

// Phase is one step of a run. Exactly the field of its Kind is set
// (Announce, Wait, Traffic or MPI; a DMP phase has no options).
type Phase struct {
	Name     string
	Kind     PhaseKind
	Announce *Announce
	Wait     time.Duration
	Traffic  *Traffic
	MPI      *MPI
	Expect   []Expectation // traffic phases only
	// LinkEvents turn links off and on while each load of a traffic phase
	// runs (seed 002's on/off link regulation), in time order.
	LinkEvents []LinkEvent
	// Probes, if set, go between pairs of hosts beside each load's
	// traffic (seed 002's ping every 100 ms).
	Probes *Probes
}

// MPI is an mpi phase: Program (an MPI program and its arguments) run
// with Open MPI's mpirun as NP ranks, Slots on each of Hosts, over the
// fabric (TCP over the hosts' interfaces), while the fabric sampler
// measures the switches.
type MPI struct {
	Program []string
	Hosts   []string // empty: every host of the lab
	Slots   int
	NP      int // 0: every slot
	Timeout time.Duration
}

// MPI defaults and bounds.
const (
	DefaultMPITimeout = 10 * time.Minute
	MaxMPISlots       = 64
)

// Probes are a traffic phase's probes: a Size-byte frame every Interval
// from each source to its destination, through the fabric's routes.
type Probes struct {
	Interval time.Duration
	Size     int
	// Pairs are (source, destination) host names. Empty: Sample random
	// pairs (seeded by the phase's traffic seed), or every ordered pair
	// when Sample is 0.
	Pairs  [][2]string
	Sample int
}

// Probe defaults and bounds: a ping's 64 bytes every 100 ms (seed 002);
// at most MaxProbeRate probes a second in all, each a write(2) of its
// own (some 5 µs of this machine's time).
const (
	DefaultProbeInterval = 100 * time.Millisecond
	DefaultProbeSize     = 64
	MinProbeInterval     = 10 * time.Millisecond
	MaxProbeRate         = 10_000
)

// LinkEvent is one entry of a traffic phase's link_events: at At after a
// load's traffic starts, turn the links between switches A and B Off (or
// on), in the safe order or not, or set their Rate; holding a link turned
// on or changing speed down for Hold first (a switch profile's Table 6
// time, or given).
//
// With Paths the link stays on and only the VLAN paths move: off them
// (Off, op avoid) or back onto them (op use), seed 002's path
// modification (Table 7).
type LinkEvent struct {
	At    time.Duration
	A, B  string
	Off   bool
	Rate  uint64 // bits/s: op rate
	Paths bool   // op avoid (Off) or use
	Safe  bool
	Hold  time.Duration
}

// Op is the event's op as written: off, on, rate, avoid or use.
func (e LinkEvent) Op() string {
	switch {
	case e.Rate > 0:
		return "rate"
	case e.Paths && e.Off:
		return "avoid"
	case e.Paths:
		return "use"
	case e.Off:
		return "off"
	}
	return "on"
}

// Order is the event's order as written: safe or unsafe.
func (e LinkEvent) Order() string {
	if e.Safe {
		return "safe"
	}
	return "unsafe"
}

// Announce is an Open-MX-style announcement phase (omxoed): every host
// broadcasts Count announcements Interval apart, then one every Repeat;
// the phase lasts until every peer table is full (and, with Connect, every
// connection is made) or For has passed.
type Announce struct {
	Count       int                      // announcements in a burst, default 8
	Interval    time.Duration            // within a burst, default 1s
	Repeat      time.Duration            // after the burst, default 180s
	PeerMACFrom addressing.PeerMACSource // default addressing.FromPayload
	Connect     bool                     // default false
	// BeforeDMP boots the hosts with DMP in this phase, the announcer
	// started before DMP completes (seed 000 §IV: the first announcements
	// carry the MAC DMP is about to replace).
	BeforeDMP       bool
	OnAddressChange addressing.AddressChange // default addressing.ChangeNewRound
	// For bounds the phase; default 30s.
	For time.Duration
	// Until says whether the phase ends as soon as every table is full
	// and every connection made (true, the default) or always lasts For.
	Until bool
}

// Announce defaults.
const (
	DefaultAnnounceCount    = 8
	DefaultAnnounceInterval = time.Second
	DefaultAnnounceRepeat   = 180 * time.Second
	DefaultAnnounceFor      = 30 * time.Second
)

// Traffic is a traffic phase: one run per load.
type Traffic struct {
	Pattern   traffic.Kind
	AdvOffset int    // N of adv+N (>= 1); 0 for other patterns
	App       string // npb-like only: CG, BT, FT, IS, LU, MG or SP; "" = generic
	Loads     []float64
	Frame     int           // bytes, 64..9000, default 1000
	Duration  time.Duration // per load, default 4s
	// Warmup is sent before each load's measured Duration and not
	// measured (0: the run's, 500ms): time for queues to reach their
	// steady state, such as a link offered a little more than it
	// carries filling its queue before it drops.
	Warmup time.Duration
	Seed   int64 // default 1
	// Flows are pattern flows' flows.
	Flows []traffic.Flow
}

// PatternSpec is the pattern the traffic model builds (traffic.New).
func (t *Traffic) PatternSpec() traffic.Spec {
	return traffic.Spec{Kind: t.Pattern, Offset: t.AdvOffset, App: t.App, Flows: t.Flows}
}

// PatternString renders the pattern as written in files ("adv+2").
func (t *Traffic) PatternString() string {
	if t.Pattern == traffic.Adversarial {
		return fmt.Sprintf("adv+%d", t.AdvOffset)
	}
	return string(t.Pattern)
}

// Defaults of the traffic phase.
const (
	DefaultFrame    = 1000
	DefaultDuration = 4 * time.Second
	DefaultSeed     = 1
)

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse validates a scenario; name is used in error positions and as
// Source. The error, if any, is Errors.
func Parse(name string, data []byte) (*Scenario, error) {
	tree, err := parseTree(name, data)
	if err != nil {
		return nil, err
	}
	s, err := decode(name, tree)
	if err != nil {
		return nil, err
	}
	s.Raw = append([]byte(nil), data...)
	return s, nil
}

// Set applies a --set override: PATH is a field path as in error messages
// ("routing.mode", "topology.g", "phases[1].traffic.loads") and VALUE is
// read as YAML ("valiant", "9", "[0.1,0.2]", "{value: 1ms, required:
// false}"). Missing mappings on the way are created; list indices must
// exist. The whole scenario is validated again; on error s is unchanged.
//
// Set rebuilds the scenario from its document: a field assigned directly on
// the struct before the call (sc.Name = ...) is lost. Assign such fields
// after the last Set, or Set them too.
func (s *Scenario) Set(path, value string) error {
	override := path + "=" + value
	steps, err := parsePath(path)
	if err != nil {
		return fmt.Errorf("--set %s: %w", clip(override), err)
	}
	val, err := parseTree("--set", []byte(value))
	if err != nil {
		return fmt.Errorf("--set %s: value: %w", clip(override), err)
	}
	val.setOverride(override)
	tree := s.tree.clone()
	if tree == nil {
		tree = &node{kind: mapNode, pos: pos{line: 1, col: 1}}
	}
	if err := setPath(tree, path, steps, val, override); err != nil {
		return fmt.Errorf("--set %s: %w", clip(override), err)
	}
	ns, err := decode(s.Source, tree)
	if err != nil {
		return err
	}
	ns.Raw = s.Raw
	ns.Overrides = append(append([]string(nil), s.Overrides...), override)
	*s = *ns
	return nil
}

// Phase returns the phase with the given name, or nil.
func (s *Scenario) Phase(name string) *Phase {
	for i := range s.Phases {
		if s.Phases[i].Name == name {
			return &s.Phases[i]
		}
	}
	return nil
}
