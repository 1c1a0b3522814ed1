package fabric

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/resources"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/topology"
)

// UpOptions tune a bring-up.
type UpOptions struct {
	// Instances is the number of private ovs-vswitchd instances sharing the
	// bridges (0: one per 500 ports, at most 8). Each port
	// costs vswitchd work proportional to the ports it already has, so
	// splitting the fabric keeps that cost down and uses every core.
	Instances int
	// Progress, if not nil, hears of every step once it is done.
	Progress io.Writer
	// Step, if not nil, hears of every step as it starts (i of n), so a
	// display can show what a long bring-up is busy with.
	Step func(i, n int, what string)
	// Compiled, if not nil, is the scenario's Compile result, made by a
	// caller that needed the tables before the lab (ethfab run's capacity
	// check): the tables are compiled once.
	Compiled *Compiled
}

// upSteps is the number of steps Up reports through UpOptions.Step.
const upSteps = 7

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
	ctl, err := controller.New(ap, controller.Options{Mode: sc.Routing.Mode, Compact: sc.Addressing.Compact, Originals: rewrite, SourceGuard: sc.Addressing.SourceGuard})
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

// parallel runs fn for 0..n-1 on every core and joins the errors.
func parallel(n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0)*2, max(n, 1))
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if len(errs) < 10 {
						errs = append(errs, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// linkShaping is a link class's egress shaping; without netem only the
// rate applies (CheckKernel has already refused or warned).
func linkShaping(ls scenario.LinkSpec, netem bool) kernel.Shaping {
	s := kernel.Shaping{RateBps: ls.Rate}
	if netem {
		s.Delay, s.Jitter, s.LossPct = ls.Delay.Value, ls.Jitter.Value, ls.Loss.Value
	}
	return s
}

func describe(s kernel.Shaping) string {
	d := "rate " + rate.Format(s.RateBps)
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
// to a handler thread over netlink, so auto keeps its cache.
func FlowCached(sc *scenario.Scenario, datapath string) bool {
	switch sc.OVS.FlowCache {
	case scenario.FlowCacheOn:
		return true
	case scenario.FlowCacheOff:
		return false
	}
	return sc.Routing.Mode != controller.Conditional || datapath != ovs.DatapathNetdev
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

// Up brings a scenario's lab up. On failure it removes whatever it made.
func Up(ctx context.Context, sc *scenario.Scenario, o UpOptions) (lab *Lab, err error) {
	start := time.Now()
	say := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	step := func(i int, what string) {
		if o.Step != nil {
			o.Step(i, upSteps, what)
		}
	}
	// A Scenario can be built or edited in code, past the parser's check.
	if err := scenario.CheckLabName(sc.Name); err != nil {
		return nil, fmt.Errorf("%s: name: %w", sc.Source, err)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("ethfab up needs root (namespaces, veths, Open vSwitch)")
	}
	caps := kernel.Probe()
	warnings, err := CheckKernel(sc, caps)
	if err != nil {
		return nil, err
	}
	datapath := ovs.DatapathNetdev
	if sc.OVS.Datapath == scenario.DatapathSystem || (sc.OVS.Datapath == scenario.DatapathAuto && caps.OVSModule) {
		datapath = ovs.DatapathSystem
	}
	allocator, preload, err := ovs.FindAllocator(sc.OVS.Allocator, ovs.LibDirs())
	if err != nil {
		return nil, fmt.Errorf("%s: ovs.allocator: %w", sc.Source, err)
	}
	cached := FlowCached(sc, datapath)
	ports, pmdSwitch, err := PortMode(sc, datapath)
	if err != nil {
		return nil, err
	}
	if err := FitsMachine(sc); err != nil {
		return nil, err
	}
	step(1, "compiling the controller's tables")
	t0 := time.Now()
	comp := o.Compiled
	if comp == nil {
		comp, err = Compile(sc)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sc.Source, err)
	}
	top := comp.Top
	tCompile := time.Since(t0).Seconds()
	say("compiled %s: %d switches, %d hosts, %d links, %s datapath, flow cache %s, ovs-vswitchd malloc %s (%.2fs)",
		top.Spec, len(top.Switches), len(top.Hosts), top.NumLinks(), datapath, onOff(cached), allocator, tCompile)

	dir := LabDir(sc.Name)
	if err := os.MkdirAll(StateRoot, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create the state root: %w", err)
	}
	// Mkdir, not MkdirAll: of two ups of one name, one must lose.
	if err := os.Mkdir(dir, 0o755); errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("lab %q already exists (ethfab down %s)", sc.Name, sc.Name)
	} else if err != nil {
		return nil, fmt.Errorf("lab directory: %w", err)
	}

	nInst := o.Instances
	if nInst <= 0 {
		nInst = sc.OVS.Instances
	}
	if nInst <= 0 && ports == scenario.PortsPMD {
		// One instance's PMD threads read every port from both cores, and
		// ports attach in one pass whatever their number; but an instance
		// that stops releases all its packet sockets at once, and teardown
		// paces instances, not sockets (ovs.PaceAboveSockets): at most
		// pmdPortsPerInstance each, which DF(4,8,4) measured as harmless.
		nInst = max(1, (top.NumPorts()+pmdPortsPerInstance-1)/pmdPortsPerInstance)
	}
	if nInst <= 0 {
		nInst = min(8, max(1, (top.NumPorts()+499)/500))
	}
	nInst = min(nInst, len(top.Switches))
	ovsCfg := ovs.Config{Lab: sc.Name, RunDir: filepath.Join(dir, "ovs"), NetNS: sc.Name + "-fab", Datapath: datapath, Nice: ovs.DefaultNice, Preload: preload, Uncached: !cached}
	cfgs := ovs.PoolConfigs(ovsCfg, nInst)
	if ports == scenario.PortsPMD {
		for k := range cfgs {
			cfgs[k].Switch, cfgs[k].PortType = pmdSwitch, ovs.PortPMD
			cfgs[k].OtherConfig = ovs.PMDOtherConfig(cfgs[k].OtherConfig, runtime.NumCPU())
		}
	}
	bridges := make([]ovs.Bridge, len(top.Switches))
	for i := range top.Switches {
		s := &top.Switches[i]
		br := ovs.Bridge{Name: s.Name, ExternalIDs: map[string]string{"ethfab-switch": s.Name}}
		for _, p := range s.Ports {
			br.Ports = append(br.Ports, ovs.Port{Name: PortIface(i, p.Num), OFPort: p.Num})
		}
		bridges[i] = br
	}
	// Each switch's ports live in the netns of the instance that will own
	// its bridge, so the split must be the pool's own.
	parts := ovs.Partition(bridges, nInst)
	owner := make([]int, len(top.Switches))
	for k, part := range parts {
		for _, br := range part {
			owner[comp.switchID[br.Name]] = k
		}
	}
	inst := func(sw int) int { return owner[sw] }

	lab = &Lab{Format: LabFormat, Lab: sc.Name, Dir: dir, State: "building", Scenario: sc.Source, Topology: top.Spec,
		Addressing: comp.Plan.Scheme, Compact: comp.Plan.Compact, Assign: comp.Assign, Routing: comp.Mode, SourceGuard: comp.SourceGuard,
		compiled: comp, Warnings: warnings, OVS: OVSState{RunDir: ovsCfg.RunDir, Datapath: datapath, Ports: string(ports), Allocator: allocator, FlowCache: onOff(cached)}}
	for _, c := range cfgs {
		lab.Namespaces = append(lab.Namespaces, c.NetNS)
		lab.OVS.Instances = append(lab.OVS.Instances, OVSRef{RunDir: c.RunDir, NetNS: c.NetNS, DB: "unix:" + filepath.Join(c.RunDir, "db.sock")})
	}
	for _, h := range top.Hosts {
		lab.Namespaces = append(lab.Namespaces, sc.Name+"-"+h.Name)
	}
	lab.OVS.DB = lab.OVS.Instances[0].DB
	// The names go to disk before anything exists, so `down` can always
	// find what this run may have made.
	if err := lab.save(); err != nil {
		removeLabDir(dir)
		return nil, err
	}
	defer func() {
		if err != nil {
			say("bring-up failed, rolling back: %v", err)
			if derr := Down(sc.Name); derr != nil {
				err = fmt.Errorf("%w (and rollback: %v)", err, derr)
			}
			lab = nil
		}
	}()
	if err := sc.WriteFile(filepath.Join(dir, "scenario.yaml")); err != nil {
		return nil, err
	}

	step(2, fmt.Sprintf("creating %d namespaces", len(lab.Namespaces)))
	t1 := time.Now()
	if _, err := kernel.CreateMarkedNamespaces(lab.Namespaces, LabMarker(sc.Name)); err != nil {
		return nil, fmt.Errorf("namespaces: %w", err)
	}
	lab.Timing.Namespaces = time.Since(t1).Seconds()
	say("namespaces: %d (%.2fs)", len(lab.Namespaces), lab.Timing.Namespaces)

	hostMAC := make([]string, len(top.Hosts))
	for h, m := range comp.HostMAC {
		hostMAC[h] = m.String()
	}
	fabNS := func(sw int) string { return cfgs[inst(sw)].NetNS }
	shapes := map[topology.LinkClass]kernel.Shaping{}
	for _, class := range scenario.ClassesOf(top.Spec.Kind) {
		shapes[classOf(class)] = linkShaping(sc.Links[class], caps.Netem)
	}
	pairs := make([]kernel.Veth, 0, len(top.Links))
	type shapeJob struct{ ns, iface string }
	var shapeJobs []shapeJob
	var shapeOf []kernel.Shaping
	for _, l := range top.Links {
		a := &top.Switches[l.A.Switch]
		end := LinkEnd{Node: a.Name, NetNS: fabNS(a.ID), Iface: PortIface(a.ID, l.A.Port), Port: l.A.Port}
		var other LinkEnd
		var pair kernel.Veth
		if l.Host >= 0 {
			h := top.Hosts[l.Host]
			other = LinkEnd{Node: h.Name, NetNS: sc.Name + "-" + h.Name, Iface: HostIface}
			pair = kernel.Veth{A: kernel.VethEnd{NS: other.NetNS, Name: HostIface, MAC: hostMAC[l.Host]}, B: kernel.VethEnd{NS: end.NetNS, Name: end.Iface}}
		} else {
			b := &top.Switches[l.B.Switch]
			other = LinkEnd{Node: b.Name, NetNS: fabNS(b.ID), Iface: PortIface(b.ID, l.B.Port), Port: l.B.Port}
			pair = kernel.Veth{A: kernel.VethEnd{NS: end.NetNS, Name: end.Iface}, B: kernel.VethEnd{NS: other.NetNS, Name: other.Iface}}
		}
		pairs = append(pairs, pair)
		sh := shapes[l.Class]
		lab.Links = append(lab.Links, Link{A: end, B: other, Class: l.Class.String(), Shaping: describe(sh)})
		shapeJobs = append(shapeJobs, shapeJob{end.NetNS, end.Iface}, shapeJob{other.NetNS, other.Iface})
		shapeOf = append(shapeOf, sh, sh)
	}
	step(3, fmt.Sprintf("creating %d veth pairs", len(pairs)))
	t2 := time.Now()
	if err := kernel.CreateVeths(pairs, 0); err != nil {
		return nil, fmt.Errorf("veths: %w", err)
	}
	lab.Timing.Veths = time.Since(t2).Seconds()
	say("veth pairs: %d (%.2fs)", len(pairs), lab.Timing.Veths)

	step(4, fmt.Sprintf("addressing %d hosts, shaping %d link ends", len(top.Hosts), len(shapeJobs)))
	t3 := time.Now()
	err = parallel(len(top.Hosts), func(h int) error {
		ns := sc.Name + "-" + top.Hosts[h].Name
		if err := kernel.SetAddr(ns, HostIface, HostIP(h)+"/8"); err != nil {
			return err
		}
		if datapath == ovs.DatapathNetdev {
			// TCP over the userspace datapath needs checksums filled in
			// by the sender: a veth with tx offload leaves them empty, and
			// the userspace datapath forwards them so to a receiver that
			// drops them.
			return kernel.DisableTxChecksum(ns, HostIface)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("host addresses: %w", err)
	}
	lab.Timing.Hosts = time.Since(t3).Seconds()
	t4 := time.Now()
	err = parallel(len(shapeJobs), func(i int) error {
		return kernel.Shape(shapeJobs[i].ns, shapeJobs[i].iface, shapeOf[i])
	})
	if err != nil {
		return nil, fmt.Errorf("shaping: %w", err)
	}
	lab.Timing.Shaping = time.Since(t4).Seconds()
	say("hosts addressed (%.2fs), %d link ends shaped (%.2fs)", lab.Timing.Hosts, len(shapeJobs), lab.Timing.Shaping)

	if datapath == ovs.DatapathNetdev {
		w, err := raiseSendBuffer()
		if err != nil {
			return nil, err
		}
		if w != "" {
			lab.Warnings = append(lab.Warnings, w)
		}
	}
	step(5, fmt.Sprintf("starting %d private open vswitch instance(s)", nInst))
	t5 := time.Now()
	pool, err := ovs.StartPool(ctx, cfgs)
	if err != nil {
		return nil, fmt.Errorf("open vswitch: %w", err)
	}
	if v, verr := pool.Instances[0].Version(); verr == nil {
		lab.OVS.Version = v
	}
	lab.Timing.OVS = time.Since(t5).Seconds()
	say("open vswitch: %d private instance(s) (%.2fs)", nInst, lab.Timing.OVS)

	step(6, fmt.Sprintf("creating %d bridges with %d ports", len(bridges), top.NumPorts()))
	t6 := time.Now()
	err = parallel(nInst, func(k int) error {
		return pool.Instances[k].CreateBridges(ctx, parts[k])
	})
	if err != nil {
		return nil, fmt.Errorf("bridges: %w", err)
	}
	lab.Timing.Bridges = time.Since(t6).Seconds()
	say("bridges: %d with %d ports (%.2fs)", len(bridges), top.NumPorts(), lab.Timing.Bridges)

	step(7, fmt.Sprintf("installing and reading back %d tables", len(top.Switches)))
	t7 := time.Now()
	flowDir := filepath.Join(dir, "flows")
	if err := os.MkdirAll(flowDir, 0o755); err != nil {
		return nil, err
	}
	jobs := make([]ovs.FlowJob, len(top.Switches))
	for i := range top.Switches {
		f := filepath.Join(flowDir, top.Switches[i].Name+".flows")
		if err := os.WriteFile(f, []byte(comp.Tables[i].OpenFlow()), 0o644); err != nil {
			return nil, err
		}
		jobs[i] = ovs.FlowJob{Mgmt: pool.Instances[inst(i)].MgmtSocket(top.Switches[i].Name), FlowsFile: f}
	}
	if err := ovs.InstallAll(ctx, jobs, 2*runtime.NumCPU()); err != nil {
		return nil, fmt.Errorf("installing rules: %w", err)
	}
	counts := make([]int, len(top.Switches))
	err = parallel(len(top.Switches), func(i int) error {
		n, err := ovs.FlowCount(ctx, jobs[i].Mgmt)
		if err != nil {
			return err
		}
		if want := len(comp.Tables[i].Rules); n != want {
			return fmt.Errorf("%s: %d flows installed, the controller compiled %d", top.Switches[i].Name, n, want)
		}
		counts[i] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading rules back: %w", err)
	}
	lab.Timing.Flows = time.Since(t7).Seconds()
	total := 0
	for _, n := range counts {
		total += n
	}
	say("rules: %d installed and read back (%.2fs)", total, lab.Timing.Flows)

	for h := range top.Hosts {
		host := top.Hosts[h]
		lab.Hosts = append(lab.Hosts, Host{Name: host.Name, NetNS: sc.Name + "-" + host.Name, Iface: HostIface, MAC: hostMAC[h],
			IP: HostIP(h), Switch: top.Switches[host.Switch].Name, Port: host.Port, PseudoMAC: comp.Plan.HostMAC(h).String()})
	}
	for i := range top.Switches {
		s := &top.Switches[i]
		lab.Switches = append(lab.Switches, Switch{Name: s.Name, Bridge: s.Name, Ports: len(s.Ports), Flows: counts[i],
			Mgmt: jobs[i].Mgmt, Instance: inst(i), NetNS: fabNS(i)})
	}
	lab.State = "up"
	lab.Timing.Compile = tCompile
	lab.Timing.Total = time.Since(start).Seconds()
	if err := lab.save(); err != nil {
		return nil, err
	}
	say("lab %s up in %.2fs", sc.Name, lab.Timing.Total)
	return lab, nil
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
// cannot hold or cannot safely tear down (see package resources).
func FitsMachine(sc *scenario.Scenario) error {
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
	if err := resources.CheckLab(resources.ForLab(sc.Topology), avail, maxPorts); err != nil {
		return fmt.Errorf("%s: topology: %w", sc.Source, err)
	}
	return nil
}
