package fabric

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/resources"
	"github.com/ethfab/ethfab/internal/fanout"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/ovs/openflow"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/topology"
)

// UpOptions tune a bring-up.
type UpOptions struct {
	// Instances is the number of private ovs-vswitchd instances sharing the
	// bridges (0: one per 500 ports, at most 8). Each port
	// costs vswitchd work proportional to the ports it already has, so
	// splitting the fabric keeps that cost down and uses every core. On
	// the eBPF datapath it is the number of fabric namespaces (0: one per
	// ebpfPortsPerNamespace ports).
	Instances int
	// Report, if not nil, hears of every step as it starts and as it
	// finishes, so a display can show what a long bring-up is busy with.
	Report steps.Reporter
	// Compiled, if not nil, is the scenario's Compile result, made by a
	// caller that needed the tables before the lab (ethfab run's capacity
	// check): the tables are compiled once.
	Compiled *Compiled
	// Part, if not nil, builds only one machine's share of a fabric split
	// across machines (see Part); the lab is named after the part.
	Part *Part
}

// HostIface is the host's interface name inside its namespace.
const HostIface = "eth0"

// PortIface names a switch port's device in the fabric namespace.
func PortIface(sw, port int) string { return fmt.Sprintf("s%dp%d", sw, port) }

// HostIP is host h's address: 10.0.0.0/8, host IDs from 1.
func HostIP(h int) string {
	n := h + 1
	return fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)
}

// Compiled is what the controller made of a scenario: the lab's
// topology, addresses and tables, which Up attaches to the Lab it returns
// (Lab.Compiled) so that what runs on the lab uses them as they are.
type Compiled struct {
	Top    *topology.Topology
	Plan   *addressing.Plan // its Scheme and Compact are the lab's
	Ctl    *controller.Controller
	Mode   controller.Mode
	Assign addressing.Assign
	// SourceGuard: the access switches drop frames whose source is not
	// their host's.
	SourceGuard bool
	Tables      []*controller.Table
	// HostMAC is each host's MAC at creation (its original MAC unless
	// assign is static).
	HostMAC []addressing.MAC

	switchID map[string]int
}

// Compile builds the topology, addresses and every table of a scenario,
// for a lab about to be brought up: hosts that do not start with their
// pseudo-MAC get a fresh random original one.
func Compile(sc *scenario.Scenario) (*Compiled, error) {
	return compile(sc, nil)
}

// compile is Compile with the hosts' original MACs given (nil: random),
// so the tables of a running lab can be compiled again as installed
// (assign rewrite puts the originals in the access switches' rules).
func compile(sc *scenario.Scenario, originals []addressing.MAC) (*Compiled, error) {
	top, err := topology.Build(sc.Topology)
	if err != nil {
		return nil, err
	}
	ap, err := addressing.New(top, sc.Addressing.Scheme, sc.Addressing.Compact)
	if err != nil {
		return nil, err
	}
	if originals != nil && len(originals) != len(top.Hosts) {
		return nil, fmt.Errorf("%d original MACs for %d hosts", len(originals), len(top.Hosts))
	}
	// Host MACs per assign: static hosts start with their pseudo-MAC; dmp
	// and rewrite hosts with a random original one, which DMP replaces at
	// boot and rewrite translates in the access switch.
	initial := make([]addressing.MAC, len(top.Hosts))
	var rewrite []addressing.MAC
	for h := range top.Hosts {
		switch {
		case sc.Addressing.Assign == addressing.AssignStatic:
			initial[h] = ap.HostMAC(h)
		case originals != nil:
			initial[h] = originals[h]
		default:
			initial[h] = randomOriginalMAC()
		}
	}
	if sc.Addressing.Assign == addressing.AssignRewrite {
		rewrite = initial
	}
	o := controller.Options{Mode: sc.Routing.Mode, Compact: sc.Addressing.Compact, Originals: rewrite, SourceGuard: sc.Addressing.SourceGuard}
	if v := sc.Routing.VLAN; v != nil {
		o.VLANAssign, o.VLANTorus = v.Assign, v.Torus
		o.VLANLearn, o.VLANAging = v.MACs == "learn", v.Aging
		if o.VLANTagged, err = hostIDs(top, v.TaggedHosts); err != nil {
			return nil, fmt.Errorf("routing.vlan.tagged_hosts: %w", err)
		}
	}
	ctl, err := controller.New(ap, o)
	if err != nil {
		return nil, err
	}
	c := &Compiled{Top: top, Plan: ap, Ctl: ctl, Mode: ctl.Options().Mode, Assign: sc.Addressing.Assign, SourceGuard: sc.Addressing.SourceGuard,
		Tables: make([]*controller.Table, len(top.Switches)), HostMAC: initial, switchID: map[string]int{}}
	for i := range top.Switches {
		c.switchID[top.Switches[i].Name] = i
	}
	err = parallel(len(top.Switches), func(i int) error {
		t, err := ctl.Table(i)
		c.Tables[i] = t
		return err
	})
	return c, err
}

// parallel runs fn for 0..n-1, two per core: the work waits on the
// kernel or on OVS about half the time.
func parallel(n int, fn func(i int) error) error {
	return fanout.Each(n, 2*runtime.GOMAXPROCS(0), fn)
}

// linkShaping is a link class's egress shaping; without netem only the
// rate applies (CheckKernel has already refused or warned).
func linkShaping(ls scenario.LinkSpec, netem bool) kernel.Shaping {
	s := kernel.Shaping{RateBps: ls.Rate, Limit: uint32(ls.Limit)}
	if netem {
		s.Delay, s.Jitter, s.LossPct = ls.Delay.Value, ls.Jitter.Value, ls.Loss.Value
	}
	return s
}

func describe(s kernel.Shaping) string {
	d := "rate " + rate.Format(s.RateBps)
	if s.Limit > 0 {
		d += " limit " + scenario.FormatSize(uint64(s.Limit))
	}
	if s.Delay > 0 {
		d += " delay " + s.Delay.String()
	}
	if s.Jitter > 0 {
		d += " jitter " + s.Jitter.String()
	}
	if s.LossPct > 0 {
		d += fmt.Sprintf(" loss %.3g%%", s.LossPct)
	}
	return d
}

// CheckKernel says, before anything is built, whether the kernel can do
// what the scenario asks: a required impairment it cannot apply is an
// error, a best-effort one a warning.
func CheckKernel(sc *scenario.Scenario, caps kernel.Capabilities) (warnings []string, err error) {
	if !caps.Netns || !caps.Veth {
		return nil, fmt.Errorf("this kernel offers no named network namespaces or veth pairs (run `ethfab doctor`)")
	}
	if !caps.TBF {
		return nil, fmt.Errorf("this kernel has no tbf qdisc: links cannot be rate-shaped (run `ethfab doctor`)")
	}
	for _, class := range scenario.ClassesOf(sc.Topology.Kind) {
		ls := sc.Links[class]
		for _, imp := range []struct {
			name string
			set  bool
			req  bool
		}{{"delay", ls.Delay.Value > 0, ls.Delay.Required}, {"jitter", ls.Jitter.Value > 0, ls.Jitter.Required}, {"loss", ls.Loss.Value > 0, ls.Loss.Required}} {
			if !imp.set || caps.Netem {
				continue
			}
			if imp.req {
				return nil, fmt.Errorf("%s: links.%s.%s is required but this kernel has no netem qdisc (mark it `required: false` to run without it, or use the Vagrant VM)", sc.Source, class, imp.name)
			}
			warnings = append(warnings, fmt.Sprintf("links.%s.%s is best-effort and this kernel has no netem: not applied", class, imp.name))
		}
	}
	if sc.OVS.Datapath == scenario.DatapathEBPF && !caps.Clsact {
		return nil, fmt.Errorf("%s: ovs.datapath ebpf needs the clsact qdisc, which this kernel lacks (use auto)", sc.Source)
	}
	if sc.OVS.Datapath == scenario.DatapathSystem && !caps.OVSModule {
		return nil, fmt.Errorf("%s: ovs.datapath system needs the openvswitch kernel module, which this kernel lacks (use auto or netdev)", sc.Source)
	}
	return warnings, nil
}

// FlowCached says whether the lab's switches cache forwarding decisions
// in datapath flows (scenario ovs.flow_cache). auto turns the cache off
// for conditional routing on the userspace datapath: there a cached
// decision outlives a FlowMod by the wait for the next revalidation round
// (rounds start at most 5 ms apart, and hundreds of flips a second keep
// them busy), while an uncached frame costs one lookup in the forwarding
// thread itself. The kernel datapath would send every uncached frame up
// to a handler thread over netlink, so auto keeps its cache. ethfab's eBPF
// datapath keeps its cache where every host pair's flows fit it
// (datapath.FlowCacheFits) and a frame from another switch may search a
// hashed subtable (Image.TransitHashed): where every such search is a
// slot, the pipeline costs less than a cache lookup. A flip changes the
// cache's key, so conditional routing does not turn it off.
func FlowCached(sc *scenario.Scenario, dp string, top *topology.Topology, tables []*controller.Table) bool {
	switch sc.OVS.FlowCache {
	case scenario.FlowCacheOn:
		return true
	case scenario.FlowCacheOff:
		return false
	}
	if dp == datapath.Name {
		return datapath.FlowCacheFits(len(top.Hosts)) && transitHashed(top, tables)
	}
	return !sc.Routing.Mode.Conditions() || dp != ovs.DatapathNetdev
}

// transitHashed builds the eBPF datapath's image of tables with stand-in
// ifindexes (only its subtables matter) and asks Image.TransitHashed; a
// fabric FlowCacheFits (at most 128 hosts) builds in milliseconds.
func transitHashed(top *topology.Topology, tables []*controller.Table) bool {
	index := map[[2]int]int{}
	for i := range top.Switches {
		for _, p := range top.Switches[i].Ports {
			index[[2]int{i, p.Num}] = firstPortIndex + len(index)
		}
	}
	mine := func(sw int) bool { return tables[sw] != nil }
	img, err := datapath.Build(tables, switchPorts(top, index, mine, func(int) string { return "" }))
	return err == nil && img.TransitHashed() // a table the datapath refuses fails at load, with its error
}

// PortMode resolves scenario ovs.ports for datapath: socket or pmd, and
// for pmd the ovs-vswitchd that has it (ovs.FindPMDSwitch).
func PortMode(sc *scenario.Scenario, datapath string) (scenario.Ports, string, error) {
	if sc.OVS.Ports == scenario.PortsSocket {
		return scenario.PortsSocket, "", nil
	}
	if datapath != ovs.DatapathNetdev {
		if sc.OVS.Ports == scenario.PortsPMD {
			return "", "", fmt.Errorf("%s: ovs.ports pmd needs the userspace datapath (ovs.datapath netdev): the kernel datapath reads its ports itself", sc.Source)
		}
		return scenario.PortsSocket, "", nil
	}
	sw := ovs.FindPMDSwitch()
	if sw == "" {
		if sc.OVS.Ports == scenario.PortsPMD {
			return "", "", fmt.Errorf("%s: ovs.ports pmd needs ethfab's ovs-vswitchd at %s (build it with scripts/ovs/build.sh) or $ETHFAB_OVS_VSWITCHD", sc.Source, ovs.PMDSwitchPath)
		}
		return scenario.PortsSocket, "", nil
	}
	return scenario.PortsPMD, sw, nil
}

// pmdPortsPerInstance bounds the ports of one instance of ethfab's
// ovs-vswitchd: DF(4,8,4)'s 3,960 sockets released at once took the
// kernel's workers from 35 to 37, none blocked.
const pmdPortsPerInstance = 4000

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Up brings a scenario's lab up, as a list of named, timed steps (see
// upSteps). On failure it removes whatever it made.
func Up(ctx context.Context, sc *scenario.Scenario, o UpOptions) (lab *Lab, err error) {
	start := time.Now()
	u, err := prepare(sc, o)
	if err != nil {
		return nil, err
	}
	rep := steps.Or(o.Report)
	restore := ExpediteRCU()
	defer func() {
		if rerr := restore(); rerr != nil {
			steps.Printf(rep, "warning: %v", rerr)
		}
	}()
	defer func() {
		// Once the state is on disk `down` knows every name this bring-up
		// may have used; before, nothing exists.
		if err != nil && u.lab != nil {
			steps.Printf(rep, "bring-up failed, rolling back: %v", err)
			u.awaitFlowFiles()
			if derr := Down(sc.Name); derr != nil {
				err = fmt.Errorf("%w (and rollback: %v)", err, derr)
			}
			lab = nil
		}
	}()
	t, err := steps.Run(ctx, rep, u.steps())
	if err != nil {
		return nil, err
	}
	lab = u.lab
	lab.State = "up"
	t["total"] = time.Since(start).Seconds()
	lab.Timing = t
	if err := lab.save(); err != nil {
		return nil, err
	}
	steps.Printf(rep, "lab %s up in %.2fs", sc.Name, t["total"])
	return lab, nil
}

// upper is one bring-up: the choices made before anything is built, and
// what each step made for the steps after it.
type upper struct {
	sc   *scenario.Scenario
	o    UpOptions
	caps kernel.Capabilities
	// Choices, before anything is built.
	datapath, allocator, preload string
	cached                       bool
	ports                        scenario.Ports
	pmdSwitch                    string
	warnings                     []string
	// Made by the steps, in order.
	comp  *Compiled
	lab   *Lab // set once its state is on disk
	cfgs  []ovs.Config
	parts [][]ovs.Bridge // each instance's bridges
	owner []int          // switch -> instance
	// portIndex: on the eBPF datapath, each switch port's ifindex (by
	// switch and port), unique across the lab's fabric namespaces.
	portIndex map[[2]int]int
	// counted: on the eBPF datapath under conditional routing, the
	// inter-switch ports whose queue the program counts and holds to its
	// tbf limit (datapath.PortRef), with the port at the link's far end.
	counted  map[[2]int]countedQueue
	hostMAC  []string
	pairs    []kernel.Veth
	tunnels  []kernel.Tunnel // a part's cut-link ends here
	underlay string          // and the underlay interface they go out of
	// partUnderlay: the part's underlay, for its state (recorded once the
	// state exists).
	partUnderlay *UnderlayState
	shapeJobs    []shapeJob
	pool         *ovs.Pool
	flowFiles    chan error // the flow files' writer (record), until awaited
	flowCounts   []int      // each switch's installed rules, recorded with the ports
}

type shapeJob struct {
	ns, iface string
	shape     kernel.Shaping
}

// prepare checks, before anything is built or compiled, that the machine
// can bring the scenario up, and makes the choices that depend on it.
func prepare(sc *scenario.Scenario, o UpOptions) (*upper, error) {
	// A Scenario can be built or edited in code, past the parser's check.
	if err := scenario.CheckLabName(sc.Name); err != nil {
		return nil, fmt.Errorf("%s: name: %w", sc.Source, err)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("ethfab up needs root (namespaces, veths, Open vSwitch)")
	}
	u := &upper{sc: sc, o: o, caps: kernel.Probe(), comp: o.Compiled}
	var err error
	if u.warnings, err = CheckKernel(sc, u.caps); err != nil {
		return nil, err
	}
	u.datapath = DatapathOf(sc, u.caps.OVSModule)
	if u.datapath != datapath.Name {
		if u.allocator, u.preload, err = ovs.FindAllocator(sc.OVS.Allocator, ovs.LibDirs()); err != nil {
			return nil, fmt.Errorf("%s: ovs.allocator: %w", sc.Source, err)
		}
	}
	if u.ports, u.pmdSwitch, err = PortMode(sc, u.datapath); err != nil {
		return nil, err
	}
	if o.Part != nil {
		// Checked against the part's own counts once it is compiled
		// (fitsPart).
		return u, nil
	}
	if err := FitsMachine(sc); err != nil {
		return nil, err
	}
	return u, nil
}

// DatapathOf is the datapath a scenario's lab runs on a kernel with or
// without the openvswitch module: ebpf, system (OVS's kernel datapath;
// auto's choice where the module is) or netdev (OVS's userspace one).
func DatapathOf(sc *scenario.Scenario, ovsModule bool) string {
	switch {
	case sc.OVS.Datapath == scenario.DatapathEBPF:
		return datapath.Name
	case sc.OVS.Datapath == scenario.DatapathSystem || (sc.OVS.Datapath == scenario.DatapathAuto && ovsModule):
		return ovs.DatapathSystem
	}
	return ovs.DatapathNetdev
}

// ebpf says the lab runs ethfab's eBPF datapath: no Open vSwitch.
func (u *upper) ebpf() bool { return u.datapath == datapath.Name }

// steps is the bring-up, in order. Each step's result line starts with
// the word a log reader (and TestKilledUpIsCleanedByDown) looks for.
func (u *upper) steps() []steps.Step {
	list := []steps.Step{
		{Name: "compile", What: func() string { return "compiling the controller's tables" }, Do: u.compile},
		{Name: "state", What: func() string { return "recording the lab's names" }, Do: u.record},
		{Name: "namespaces", What: func() string { return fmt.Sprintf("creating %d namespaces", len(u.lab.Namespaces)) }, Do: u.namespaces},
	}
	links := []steps.Step{
		{Name: "veths", What: func() string { return fmt.Sprintf("creating %d veth pairs", len(u.pairs)) }, Do: u.veths},
		{Name: "hosts", What: func() string { return fmt.Sprintf("addressing %d hosts", u.localHosts()) }, Do: u.hosts},
		{Name: "shaping", What: func() string { return fmt.Sprintf("shaping %d link ends", len(u.shapeJobs)) }, Do: u.shape},
	}
	if u.ebpf() {
		return append(append(list, links...), steps.Step{Name: "datapath", What: func() string {
			ports, switches := u.localCounts()
			return fmt.Sprintf("loading %d tables into the eBPF datapath on %d ports", switches, ports)
		}, Do: u.loadDatapath})
	}
	// Open vSwitch's daemons, their bridges and the bridges' rules need no
	// link, and the hosts' addresses and the links' shaping need no
	// switch: the two run at the same time (steps.Step.Together), where
	// one after the other left a core idle; DF(4,8,4) came up in
	// 2.94-3.10 s against 3.11-3.28 s, builds alternating. Not beside the
	// veths: a daemon in a namespace is woken by each link made there,
	// and the veth step took 2.0 s instead of 0.7. The ports need both.
	// The machine's limits are raised before either (raiseSysctls).
	switches := []steps.Step{
		{Name: "ovs", What: func() string { return fmt.Sprintf("starting %d private open vswitch instance(s)", len(u.cfgs)) }, Do: u.startOVS},
		{Name: "bridges", What: func() string { _, n := u.localCounts(); return fmt.Sprintf("creating %d bridges", n) }, Do: u.createBridges},
		{Name: "flows", What: func() string { _, n := u.localCounts(); return fmt.Sprintf("installing and reading back %d tables", n) }, Do: u.installFlows},
	}
	return append(list, links[0],
		steps.Step{Name: "links and switches", Together: [][]steps.Step{links[1:], switches}},
		steps.Step{Name: "ports", What: func() string { n, _ := u.localCounts(); return fmt.Sprintf("attaching %d ports", n) }, Do: u.attachPorts})
}

// compile builds the controller's tables, unless the caller did, and
// splits the switches among the OVS instances.
func (u *upper) compile(context.Context) (string, error) {
	if u.comp == nil {
		var originals []addressing.MAC
		if p := u.o.Part; p != nil {
			var err error
			if originals, err = p.originals(); err != nil {
				return "", err
			}
		}
		c, err := compile(u.sc, originals)
		if err != nil {
			return "", fmt.Errorf("%s: %w", u.sc.Source, err)
		}
		u.comp = c
	}
	top := u.comp.Top
	if p := u.o.Part; p != nil {
		if err := p.check(top); err != nil {
			return "", err
		}
		if err := u.fitsPart(); err != nil {
			return "", err
		}
		// Only this machine's switches get tables: the others' would be
		// loaded nowhere (and the flow files are this machine's).
		for i := range u.comp.Tables {
			if !u.mine(i) {
				u.comp.Tables[i] = nil
			}
		}
	}
	u.cached = FlowCached(u.sc, u.datapath, top, u.comp.Tables)
	u.partition()
	where := ""
	if p := u.o.Part; p != nil {
		ports, switches := u.localCounts()
		where = fmt.Sprintf(" (this machine, %s: %d switches, %d ports)", p.Machine, switches, ports)
	}
	if u.ebpf() {
		return fmt.Sprintf("compiled %s: %d switches, %d hosts, %d links%s, eBPF datapath, flow cache %s",
			top.Spec, len(top.Switches), len(top.Hosts), top.NumLinks(), where, onOff(u.cached)), nil
	}
	return fmt.Sprintf("compiled %s: %d switches, %d hosts, %d links%s, %s datapath, flow cache %s, ovs-vswitchd malloc %s",
		top.Spec, len(top.Switches), len(top.Hosts), top.NumLinks(), where, u.datapath, onOff(u.cached), u.allocator), nil
}

// ebpfPortsPerNamespace bounds the switch ports of one fabric namespace on
// the eBPF datapath. bpf_redirect finds each frame's output device by its
// ifindex in a hash of the namespace's devices with 256 buckets, walking
// one bucket's list: a cache miss per device passed. With DF(4,8,4)'s
// 3,960 ports in one namespace that walk was 17% of the machine in a
// uniform run (perf), and 4,000 idle devices added to a namespace raised
// kernel/cmd/hopbench's cost per hop from 1.5 to 2.3-2.6 µs. One block of
// ifindexes (portsPerBlock) per namespace puts every port in a bucket of
// its own.
const ebpfPortsPerNamespace = portsPerBlock

// partition chooses the number of OVS instances (on the eBPF datapath:
// fabric namespaces) and which bridges (switches) each owns.
func (u *upper) partition() {
	sc, top := u.sc, u.comp.Top
	ports, switches := u.localCounts()
	nInst := u.o.Instances
	if nInst <= 0 {
		nInst = sc.OVS.Instances
	}
	if nInst <= 0 && u.ports == scenario.PortsPMD {
		// One instance's PMD threads read every port from both cores, and
		// ports attach in one pass whatever their number; but an instance
		// that stops releases all its packet sockets at once, however
		// teardown paces instances (ovs.PaceSockets): at most
		// pmdPortsPerInstance each, which DF(4,8,4) measured as harmless.
		nInst = max(1, (ports+pmdPortsPerInstance-1)/pmdPortsPerInstance)
	}
	if nInst <= 0 {
		nInst = min(8, max(1, (ports+499)/500))
	}
	if u.ebpf() {
		nInst = u.o.Instances
		if nInst <= 0 {
			nInst = sc.OVS.Instances
		}
		if nInst <= 0 {
			nInst = (ports + ebpfPortsPerNamespace - 1) / ebpfPortsPerNamespace
		}
	}
	nInst = max(1, min(nInst, switches))
	base := ovs.Config{Lab: sc.Name, RunDir: filepath.Join(LabDir(sc.Name), "ovs"), NetNS: sc.Name + "-fab", Datapath: u.datapath,
		Nice: ovs.DefaultNice, Preload: u.preload, Uncached: !u.cached}
	u.cfgs = ovs.PoolConfigs(base, nInst)
	if u.ports == scenario.PortsPMD {
		for k := range u.cfgs {
			u.cfgs[k].Switch, u.cfgs[k].PortType = u.pmdSwitch, ovs.PortPMD
			u.cfgs[k].OtherConfig = ovs.PMDOtherConfig(u.cfgs[k].OtherConfig, runtime.NumCPU())
		}
	}
	var bridges []ovs.Bridge
	for i := range top.Switches {
		if !u.mine(i) {
			continue
		}
		s := &top.Switches[i]
		br := ovs.Bridge{Name: s.Name, ExternalIDs: map[string]string{"ethfab-switch": s.Name}}
		for _, p := range s.Ports {
			br.Ports = append(br.Ports, ovs.Port{Name: PortIface(i, p.Num), OFPort: p.Num})
		}
		bridges = append(bridges, br)
	}
	// Each switch's ports live in the netns of the instance that will own
	// its bridge, so the split must be the pool's own.
	u.parts = ovs.Partition(bridges, nInst)
	u.owner = make([]int, len(top.Switches))
	for i := range u.owner {
		u.owner[i] = -1 // another machine's
	}
	for k, part := range u.parts {
		for _, br := range part {
			u.owner[u.comp.switchID[br.Name]] = k
		}
	}
}

// fabNS is the namespace of switch sw's ports.
func (u *upper) fabNS(sw int) string { return u.cfgs[u.owner[sw]].NetNS }

// record creates the lab's directory and writes every name the lab will
// use to lab.json before anything exists, so `down` can always find what
// this bring-up may have made; and it plans the links.
func (u *upper) record(context.Context) (string, error) {
	sc, comp, top := u.sc, u.comp, u.comp.Top
	dir := LabDir(sc.Name)
	lab := &Lab{Format: LabFormat, Lab: sc.Name, Dir: dir, State: "building", Scenario: sc.Source, Topology: top.Spec,
		Addressing: comp.Plan.Scheme, Compact: comp.Plan.Compact, Assign: comp.Assign, Routing: comp.Mode, SourceGuard: comp.SourceGuard,
		VLANAssign: comp.Ctl.Options().VLANAssign, VLANTorus: comp.Ctl.Options().VLANTorus, VLANLearn: comp.Ctl.Options().VLANLearn, VLANAging: comp.Ctl.Options().VLANAging,
		VLANTagged: hostNames(top, comp.Ctl.Options().VLANTagged),
		compiled:   comp, Warnings: u.warnings,
		OVS: OVSState{RunDir: filepath.Join(dir, "ovs"), Datapath: u.datapath, Ports: string(u.ports), Allocator: u.allocator, FlowCache: onOff(u.cached)}}
	if u.ebpf() {
		lab.OVS = OVSState{Datapath: u.datapath, FlowCache: onOff(u.cached)}
	}
	for _, c := range u.cfgs {
		lab.Namespaces = append(lab.Namespaces, c.NetNS)
		if !u.ebpf() {
			lab.OVS.Instances = append(lab.OVS.Instances, OVSRef{RunDir: c.RunDir, NetNS: c.NetNS, DB: "unix:" + filepath.Join(c.RunDir, "db.sock")})
		}
	}
	for _, h := range top.Hosts {
		if u.mine(h.Switch) {
			lab.Namespaces = append(lab.Namespaces, sc.Name+"-"+h.Name)
		}
	}
	if p := u.o.Part; p != nil {
		lab.Part = &PartState{Lab: p.Lab, Machine: p.Machine, Index: p.Index, Underlay: u.partUnderlay}
	}
	if len(lab.OVS.Instances) > 0 {
		lab.OVS.DB = lab.OVS.Instances[0].DB
	}
	if err := lab.Create(); err != nil {
		return "", err
	}
	u.lab = lab
	if err := sc.WriteFile(filepath.Join(dir, "scenario.yaml")); err != nil {
		return "", err
	}
	if err := u.planLinks(); err != nil {
		return "", err
	}
	if ul := lab.Part.underlay(); ul != nil && ul.SpeedBps > 0 && ul.CutRateBps > ul.SpeedBps {
		lab.Warnings = append(lab.Warnings, fmt.Sprintf("the cut links leaving machine %s can carry %s together, more than its underlay interface %s's %s: when they are all busy, frames queue in the machines' own network (the run's underlay check says when)",
			lab.Part.Machine, rate.Format(ul.CutRateBps), ul.Dev, rate.Format(ul.SpeedBps)))
	}
	if !u.ebpf() {
		// The flow files are for people, not the switches: written while
		// the kernel makes namespaces and veths on one netlink sender,
		// not while the switches take the rules (written then, DF(4,8,4)'s
		// 264 files took a third of the rules step's CPU on this VM, whose
		// /run is ext4), and waited for by the rules step.
		u.flowFiles = make(chan error, 1)
		go func() { u.flowFiles <- writeFlowFiles(dir, top, comp.Tables) }()
	}
	return "", nil
}

// awaitFlowFiles waits for the flow files' writer, if one was started:
// before the rules step reports, and before a rollback removes the lab's
// directory under it.
func (u *upper) awaitFlowFiles() error {
	if u.flowFiles == nil {
		return nil
	}
	err := <-u.flowFiles
	u.flowFiles = nil
	return err
}

// countedQueue is a counted port's far end and queue limit in bytes.
type countedQueue struct {
	peer  [2]int
	limit uint64
}

// An eBPF lab's switch ports take ifindexes in blocks of ifindexBlock
// from firstPortIndex on, a block per fabric namespace (two or more where
// one holds more than portsPerBlock ports). The kernel hashes a
// namespace's devices by ifindex modulo 256 (NETDEV_HASHENTRIES), so the
// ports of one block never share a bucket, nor do they share one with lo
// and the devices the kernel adds to a namespace (fallback tunnels),
// which take the lowest ifindexes: a block's first blockSkip are left
// out. Numbered in link order across the namespaces, DF(4,8,4)'s 241
// devices per namespace walked 1.85 of them per lookup, and that walk
// (dev_get_by_index_rcu) was 6.3% of the machine's time at uniform load
// 0.4 (perf).
const (
	firstPortIndex = 1024
	ifindexBlock   = 256
	blockSkip      = 16
	portsPerBlock  = ifindexBlock - blockSkip
)

// planLinks lists the veth pairs (a part's: and tunnels) and the shaping
// of their ends.
func (u *upper) planLinks() error {
	sc, top := u.sc, u.comp.Top
	u.hostMAC = make([]string, len(top.Hosts))
	for h, m := range u.comp.HostMAC {
		u.hostMAC[h] = m.String()
	}
	shapes := map[topology.LinkClass]kernel.Shaping{}
	for _, class := range scenario.ClassesOf(top.Spec.Kind) {
		shapes[classOf(class)] = linkShaping(sc.Links[class], u.caps.Netem)
	}
	// On the eBPF datapath the program's port and tap arrays are indexed
	// by ifindex, so every switch port is created with one of its own,
	// unique across the fabric namespaces, from its namespace's block. A
	// host's end takes its switch port's number: its namespace holds only
	// lo and whatever the kernel adds to every namespace (fallback tunnels).
	u.portIndex = map[[2]int]int{}
	u.counted = map[[2]int]countedQueue{}
	inNS := make([]int, len(u.cfgs))  // ports numbered in each namespace
	block := make([]int, len(u.cfgs)) // its current block
	blocks := 0                       // handed out
	index := func(sw, port int) int {
		if !u.ebpf() {
			return 0
		}
		k := u.owner[sw]
		if inNS[k]%portsPerBlock == 0 {
			block[k] = blocks
			blocks++
		}
		n := firstPortIndex + block[k]*ifindexBlock + blockSkip + inNS[k]%portsPerBlock
		inNS[k]++
		u.portIndex[[2]int{sw, port}] = n
		return n
	}
	// Open vSwitch's ports are born promiscuous, as it would make them
	// (kernel.VethEnd.Promisc; a part's tunnel ends are left to it). Its
	// port step for DF(4,8,4) went from 1.41-1.74 s to 0.90-0.98 s: the
	// flag's change cost the daemons an ioctl, a link notification and
	// the RTM_GETLINKs it set off (18 a port before, 10 after, by
	// strace). The eBPF datapath needs no promiscuous port.
	promisc := !u.ebpf()
	for li, l := range top.Links {
		if l.Host >= 0 && !u.mine(l.A.Switch) || l.Host < 0 && !u.mine(l.A.Switch) && !u.mine(l.B.Switch) {
			continue // another machine's
		}
		if l.Host < 0 && !u.mine(l.A.Switch) {
			l.A, l.B = l.B, l.A // this machine's end first
		}
		a := &top.Switches[l.A.Switch]
		end := LinkEnd{Node: a.Name, NetNS: u.fabNS(a.ID), Iface: PortIface(a.ID, l.A.Port), Port: l.A.Port, Machine: u.machineOf(a.ID)}
		var other LinkEnd
		var pair kernel.Veth
		var tunnel *TunnelState
		if l.Host < 0 && !u.mine(l.B.Switch) {
			p := u.o.Part
			b := &top.Switches[l.B.Switch]
			other = LinkEnd{Node: b.Name, Iface: PortIface(b.ID, l.B.Port), Port: l.B.Port, Machine: u.machineOf(b.ID)}
			t := kernel.Tunnel{NS: end.NetNS, Name: end.Iface, Index: index(a.ID, l.A.Port), VNI: p.VNIBase + uint32(li),
				Underlay: p.Underlay.NS, Local: net.ParseIP(p.Addrs[p.Index]), Remote: net.ParseIP(p.Addrs[p.Of[b.ID]]), Port: p.Port}
			u.tunnels = append(u.tunnels, t)
			tunnel = &TunnelState{VNI: t.VNI, Local: p.Addrs[p.Index], Remote: p.Addrs[p.Of[b.ID]]}
		} else if l.Host >= 0 {
			h := top.Hosts[l.Host]
			other = LinkEnd{Node: h.Name, NetNS: sc.Name + "-" + h.Name, Iface: HostIface, Machine: end.Machine}
			ix := index(a.ID, l.A.Port)
			pair = kernel.Veth{A: kernel.VethEnd{NS: other.NetNS, Name: HostIface, MAC: u.hostMAC[l.Host], Index: ix},
				B: kernel.VethEnd{NS: end.NetNS, Name: end.Iface, Index: ix, Promisc: promisc}}
		} else {
			b := &top.Switches[l.B.Switch]
			other = LinkEnd{Node: b.Name, NetNS: u.fabNS(b.ID), Iface: PortIface(b.ID, l.B.Port), Port: l.B.Port, Machine: end.Machine}
			pair = kernel.Veth{A: kernel.VethEnd{NS: end.NetNS, Name: end.Iface, Index: index(a.ID, l.A.Port), Promisc: promisc},
				B: kernel.VethEnd{NS: other.NetNS, Name: other.Iface, Index: index(b.ID, l.B.Port), Promisc: promisc}}
		}
		sh := shapes[l.Class]
		// A plain tbf queue only: with netem in front, frames delayed or
		// lost there would count as queued. Not a cut link's: the program
		// counts a queue's departures at the link's far end, on the other
		// machine there, so the condition monitor reads a tunnel's queue
		// from its qdisc.
		counted := u.ebpf() && u.sc.Routing.Watched() && l.Host < 0 && sh.RateBps > 0 && !sh.NeedsNetem() && tunnel == nil
		built := sh
		_, built.Limit = sh.TBF()
		if sh.RateBps == 0 {
			built.Limit = 0
		}
		u.lab.Links = append(u.lab.Links, Link{A: end, B: other, Class: l.Class.String(), Shaping: describe(sh), Shape: &built, Tunnel: tunnel})
		u.shapeJobs = append(u.shapeJobs, shapeJob{end.NetNS, end.Iface, sh})
		if tunnel != nil {
			if ul := u.lab.Part.Underlay; ul != nil {
				ul.CutRateBps += sh.RateBps
			}
			continue
		}
		u.pairs = append(u.pairs, pair)
		u.shapeJobs = append(u.shapeJobs, shapeJob{other.NetNS, other.Iface, sh})
		if counted {
			a, b := [2]int{l.A.Switch, l.A.Port}, [2]int{l.B.Switch, l.B.Port}
			u.counted[a], u.counted[b] = countedQueue{b, uint64(built.Limit)}, countedQueue{a, uint64(built.Limit)}
		}
	}
	return nil
}

func (u *upper) namespaces(context.Context) (string, error) {
	if _, err := kernel.CreateMarkedNamespaces(u.lab.Namespaces, LabMarker(u.sc.Name)); err != nil {
		return "", err
	}
	return fmt.Sprintf("namespaces: %d", len(u.lab.Namespaces)), nil
}

func (u *upper) veths(context.Context) (string, error) {
	if err := kernel.CreateVeths(u.pairs, 0); err != nil {
		return "", err
	}
	tunnels, err := u.makeTunnels()
	if err != nil {
		return "", err
	}
	if err := u.raiseSysctls(); err != nil {
		return "", err
	}
	return fmt.Sprintf("veth pairs: %d%s", len(u.pairs), tunnels), nil
}

// raiseSysctls raises the machine's limits the fabric's links need while
// labs are up. Before Open vSwitch starts (the step after, beside the
// shaping): a socket takes wmem_default when it is made, and vswitchd's
// one send socket must get the raised one.
func (u *upper) raiseSysctls() error {
	raises := []func() (string, error){raiseBacklog}
	if u.datapath == ovs.DatapathNetdev {
		raises = append(raises, raiseSendBuffer)
	}
	for _, raise := range raises {
		w, err := raise()
		if err != nil {
			return err
		}
		if w != "" {
			u.lab.Warnings = append(u.lab.Warnings, w)
		}
	}
	return nil
}

func (u *upper) hosts(context.Context) (string, error) {
	hosts := u.comp.Top.Hosts
	err := parallel(len(hosts), func(h int) error {
		if !u.mine(hosts[h].Switch) {
			return nil
		}
		ns := u.sc.Name + "-" + hosts[h].Name
		if err := kernel.SetAddr(ns, HostIface, HostIP(h)+"/8"); err != nil {
			return err
		}
		if u.datapath == ovs.DatapathNetdev {
			// The userspace datapath neither computes nor offloads
			// checksums: TCP over it needs the sender to fill them in
			// (and without checksum offload the kernel drops TSO, so
			// TCP leaves the host in wire-sized frames).
			return kernel.DisableTxChecksum(ns, HostIface)
		}
		// A host puts wire-sized frames on its link, as a NIC does: with
		// segmentation offload on, TCP crossed the eBPF datapath's
		// switches as 64 KB packets, which no switch sees, and the
		// program's queue counts took them in at one length and out at
		// another (an MPI all-to-all left 4,184 bytes counted in a queue
		// tbf had emptied).
		return kernel.DisableSegmentation(ns, HostIface)
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("hosts addressed: %d", u.localHosts()), nil
}

func (u *upper) shape(context.Context) (string, error) {
	err := parallel(len(u.shapeJobs), func(i int) error {
		j := u.shapeJobs[i]
		return kernel.Shape(j.ns, j.iface, j.shape)
	})
	if err != nil {
		return "", err
	}
	done := fmt.Sprintf("link ends shaped: %d", len(u.shapeJobs))
	opts := u.comp.Ctl.Options()
	// Tagged host ports after the shaping: their tbf must charge the tag.
	if len(opts.VLANTagged) > 0 {
		if err := tagHostPorts(u.lab, u.comp.Top, u.comp.Ctl.VLANAssignment(), opts.VLANTagged, true); err != nil {
			return "", err
		}
		done += fmt.Sprintf("; %d hosts on tagged ports", len(opts.VLANTagged))
	}
	// The tagged hosts' frames. (Not on every host link of a learning
	// lab, for its learning broadcasts: there the clsact qdisc it needs
	// made the kernel count 8 receive drops per all-pairs ping on a host
	// link, filter or not, where none were; measure.Sampler.TaggedFromHosts
	// accounts for the broadcasts instead.)
	if u.datapath == ovs.DatapathNetdev && len(opts.VLANTagged) > 0 {
		if err := takeTaggedFrames(u.lab, hostNames(u.comp.Top, opts.VLANTagged)); err != nil {
			return "", err
		}
	}
	return done, nil
}

func (u *upper) startOVS(ctx context.Context) (string, error) {
	pool, err := ovs.StartPool(ctx, u.cfgs)
	if err != nil {
		return "", err
	}
	u.pool = pool
	if v, verr := pool.Instances[0].Version(); verr == nil {
		u.lab.OVS.Version = v
	}
	return fmt.Sprintf("open vswitch: %d private instance(s)", len(u.cfgs)), nil
}

func (u *upper) createBridges(ctx context.Context) (string, error) {
	err := parallel(len(u.parts), func(k int) error {
		return u.pool.Instances[k].CreateEmptyBridges(ctx, u.parts[k])
	})
	if err != nil {
		return "", err
	}
	_, n := u.localCounts()
	return fmt.Sprintf("bridges: %d", n), nil
}

// attachPorts gives the bridges their ports once their rules are in (see
// ovs.CreateEmptyBridges): a port forwards from the moment it attaches.
// Then it records the hosts and switches, with each switch's rules.
func (u *upper) attachPorts(ctx context.Context) (string, error) {
	err := parallel(len(u.parts), func(k int) error {
		return u.pool.Instances[k].AddPorts(ctx, u.parts[k])
	})
	if err != nil {
		return "", err
	}
	top := u.comp.Top
	u.recordNodes(u.flowCounts, func(i int) (string, string) {
		return top.Switches[i].Name, u.pool.Instances[u.owner[i]].MgmtSocket(top.Switches[i].Name)
	})
	n, _ := u.localCounts()
	return fmt.Sprintf("ports: %d attached", n), nil
}

// installFlows writes each switch's table to a file (the lab's record of
// what it runs), installs every table as one bundle over its bridge's
// OpenFlow connection, and reads each back against the compiled rules
// (the counts for attachPorts to record).
func (u *upper) installFlows(ctx context.Context) (string, error) {
	top, comp := u.comp.Top, u.comp
	var jobs []openflow.Job
	var which []int // each job's switch
	for i := range top.Switches {
		if !u.mine(i) {
			continue
		}
		jobs = append(jobs, openflow.Job{Bridge: top.Switches[i].Name, Mgmt: u.pool.Instances[u.owner[i]].MgmtSocket(top.Switches[i].Name),
			Rules: comp.Tables[i].Rules, Skip: learnedTable(comp.Ctl.Options()), Fresh: true})
		which = append(which, i)
	}
	installed, err := openflow.InstallAll(ctx, jobs, installParallel)
	if werr := u.awaitFlowFiles(); err == nil && werr != nil {
		err = fmt.Errorf("flow files: %w", werr)
	}
	if err != nil {
		return "", err
	}
	u.flowCounts = make([]int, len(top.Switches))
	total := 0
	for k, i := range which {
		u.flowCounts[i] = installed[k]
		total += installed[k]
	}
	return fmt.Sprintf("rules: %d installed and read back", total), nil
}

// installParallel bounds the bridges whose tables go in at once, each over
// its own connection (a wave of openflow.InstallAll). An instance's main
// loop serves all its waiting connections in one pass, so one wave for
// every bridge of a lab up to 1,024 makes the fewest passes: DF(4,8,4)'s
// 264 tables went in and were read back in 0.11-0.16 s in one wave, 0.2 s
// when 64 went at a time each on its own.
const installParallel = 1024

// learnedTable says which table a switch fills itself (the learning VLAN
// bridge's filtering database, from the hosts' first frames as soon as
// its rules are in): the read-back leaves it alone. Nil: none.
func learnedTable(o controller.Options) func(table uint8) bool {
	if !o.VLANLearn {
		return nil
	}
	return func(t uint8) bool { return t == controller.LearnTable }
}

// writeFlowFiles writes each switch's table in ovs-ofctl syntax to
// flows/SWITCH.flows in the lab's directory (nil tables: unchanged).
func writeFlowFiles(labDir string, top *topology.Topology, tables []*controller.Table) error {
	dir := filepath.Join(labDir, "flows")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return fanout.Each(len(tables), 8, func(i int) error {
		if tables[i] == nil {
			return nil
		}
		return os.WriteFile(filepath.Join(dir, top.Switches[i].Name+".flows"), []byte(tables[i].OpenFlow()), 0o644)
	})
}

// recordNodes records the lab's hosts and switches, with each switch's
// installed rule count, and returns their total; bridge names a switch's
// bridge and management socket (none on the eBPF datapath).
func (u *upper) recordNodes(counts []int, bridge func(i int) (name, mgmt string)) int {
	top, comp := u.comp.Top, u.comp
	total := 0
	for h := range top.Hosts {
		host := top.Hosts[h]
		if !u.mine(host.Switch) {
			continue
		}
		u.lab.Hosts = append(u.lab.Hosts, Host{Name: host.Name, NetNS: u.sc.Name + "-" + host.Name, Iface: HostIface, MAC: u.hostMAC[h],
			IP: HostIP(h), Switch: top.Switches[host.Switch].Name, Port: host.Port, PseudoMAC: comp.Plan.HostMAC(h).String(),
			Machine: u.machineOf(host.Switch)})
	}
	for i := range top.Switches {
		if !u.mine(i) {
			continue
		}
		s := &top.Switches[i]
		br, mgmt := bridge(i)
		u.lab.Switches = append(u.lab.Switches, Switch{Name: s.Name, Bridge: br, Ports: len(s.Ports), Flows: counts[i],
			Mgmt: mgmt, Instance: u.owner[i], NetNS: u.fabNS(i), Machine: u.machineOf(i)})
		total += counts[i]
	}
	return total
}

// loadDatapath translates every switch's table into the eBPF datapath's
// maps, loads its program and attaches it to every switch port. There is
// no switch to read the rules back from: Build refuses any rule the
// program cannot hold, so each switch records its compiled count (a rule
// shadowed by an equal match of higher priority is left out of the maps,
// as OVS would never select it).
func (u *upper) loadDatapath(context.Context) (string, error) {
	top, comp := u.comp.Top, u.comp
	got, err := readPortIndexes(top, u.mine, u.fabNS)
	if err != nil {
		return "", err
	}
	refs := switchPorts(top, u.portIndex, u.mine, u.fabNS)
	idx := map[string][]int{} // by fabric namespace
	for i := range refs {
		r := &refs[i]
		key := [2]int{r.Switch, r.Port}
		if got[key] != int(r.Ifindex) {
			return "", fmt.Errorf("netns %s: %s has ifindex %d, not the %d it was created with", u.fabNS(r.Switch), PortIface(r.Switch, r.Port), got[key], r.Ifindex)
		}
		if q, ok := u.counted[key]; ok {
			r.Peer, r.QueueLimit = uint32(u.portIndex[q.peer]), q.limit
		}
		idx[u.fabNS(r.Switch)] = append(idx[u.fabNS(r.Switch)], int(r.Ifindex))
	}
	img, err := datapath.Build(comp.Tables, refs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", u.sc.Source, err)
	}
	// A VLAN-routed lab's paths change at run time (Lab.Reroute).
	l, err := datapath.Load(img, datapath.LoadOptions{FlowCache: u.cached, Reroutable: comp.Mode == controller.VLAN,
		CNMPriority: u.sc.Routing.QCN != nil && u.sc.Routing.QCN.CNMPriority})
	if err != nil {
		return "", err
	}
	// The filters hold the program, and it its maps, once attached; this
	// process's references go either way.
	defer l.Close()
	var how string
	for _, c := range u.cfgs {
		if how, err = l.Attach(c.NetNS, idx[c.NetNS]); err != nil {
			return "", err
		}
	}
	ids := l.IDs()
	u.lab.BPF = &ids
	counts := make([]int, len(top.Switches))
	for i, t := range comp.Tables {
		if t != nil {
			counts[i] = len(t.Rules)
		}
	}
	total := u.recordNodes(counts, func(int) (string, string) { return "", "" })
	return fmt.Sprintf("eBPF datapath: %d rules in %d subtables on %d ports in %d namespaces (program %d, %s), maps filled in %v",
		total, img.Subtables(), len(refs), len(u.cfgs), ids.Program, how, l.Fill.Round(time.Microsecond)), nil
}

// readPortIndexes reads the ifindex of every switch port's device, one
// link dump per fabric namespace (nsOf: a switch's).
func readPortIndexes(top *topology.Topology, mine func(sw int) bool, nsOf func(sw int) string) (map[[2]int]int, error) {
	names := map[string][]string{}
	keys := map[string][][2]int{}
	for i := range top.Switches {
		if !mine(i) {
			continue
		}
		ns := nsOf(i)
		for _, p := range top.Switches[i].Ports {
			names[ns] = append(names[ns], PortIface(i, p.Num))
			keys[ns] = append(keys[ns], [2]int{i, p.Num})
		}
	}
	out := map[[2]int]int{}
	for ns, n := range names {
		got, err := kernel.LinkIndexes(ns, n)
		if err != nil {
			return nil, err
		}
		for k, key := range keys[ns] {
			out[key] = got[k]
		}
	}
	return out, nil
}

// switchPorts lists every switch port for the eBPF datapath, with the
// ifindex index gives it and its link's far end (nsOf: a switch's
// fabric namespace).
func switchPorts(top *topology.Topology, index map[[2]int]int, mine func(sw int) bool, nsOf func(sw int) string) []datapath.PortRef {
	var refs []datapath.PortRef
	for i := range top.Switches {
		if !mine(i) {
			continue
		}
		for _, p := range top.Switches[i].Ports {
			r := datapath.PortRef{Switch: i, Port: p.Num, Host: p.Class == topology.ClassHost, Ifindex: uint32(index[[2]int{i, p.Num}])}
			if r.Host || !mine(p.Peer.Switch) {
				// A host's, or a cut link's: the far end is no port of
				// this program's.
				r.FarElsewhere = true
			} else {
				r.Far = uint32(index[[2]int{p.Peer.Switch, p.Peer.Port}])
				r.FarElsewhere = nsOf(p.Peer.Switch) != nsOf(i)
			}
			refs = append(refs, r)
		}
	}
	return refs
}

func classOf(c scenario.LinkClass) topology.LinkClass {
	switch c {
	case scenario.HostLinks:
		return topology.ClassHost
	case scenario.LocalLinks:
		return topology.ClassLocal
	}
	return topology.ClassGlobal
}

// randomOriginalMAC is a locally administered unicast address outside the
// pseudo-MAC space (first octet 0x0e: pseudo-MACs of fabrics that fit 40
// bits start with 0x02), standing in for a host's factory MAC.
// randomOriginalMAC is a locally administered unicast MAC outside every
// pseudo-MAC prefix (first octet 0x0e), so no routing rule matches it.
func randomOriginalMAC() addressing.MAC {
	b := make([]byte, 8)
	rand.Read(b[2:])
	b[2] = 0x0e
	return addressing.MAC(binary.BigEndian.Uint64(b))
}

// MaxPortsEnv overrides resources.MaxOVSPorts, for a machine whose
// teardown of more ports is known to be safe (or that can be restarted).
const MaxPortsEnv = "ETHFAB_MAX_PORTS"

// FitsMachine refuses, before anything is built, a fabric this machine
// cannot hold or cannot safely tear down on the datapath it would run
// (see package resources).
func FitsMachine(sc *scenario.Scenario) error {
	dp := DatapathOf(sc, kernel.HasOVSModule())
	avail, err := kernel.MemAvailableMiB()
	if err != nil {
		return err
	}
	maxPorts := 0
	if v := os.Getenv(MaxPortsEnv); v != "" {
		if maxPorts, err = strconv.Atoi(v); err != nil || maxPorts <= 0 {
			return fmt.Errorf("%s=%q: want a positive number of ports", MaxPortsEnv, v)
		}
	}
	if err := resources.CheckLab(resources.ForLab(sc.Topology, resources.Datapath(dp)), avail, maxPorts); err != nil {
		return fmt.Errorf("%s: topology: %w", sc.Source, err)
	}
	return nil
}
