// Package cluster runs one lab across several machines: the coordinator
// splits the fabric (package partition), records the plan in the lab's
// state before anything is built, starts `ethfab worker` on every machine
// (by exec on emulated machines, ssh or srun on real ones), each building
// its part (fabric.Up with a fabric.Part) with the cut links as VXLAN
// tunnels, and rolls every part back if one fails. Down removes every
// part, also after a crash, from the state alone.
//
// Emulated machines (`--machines local:N`) are this machine's: an
// underlay of namespaces, one per machine, joined by a Linux bridge, each
// with its own address, and one worker each, so the whole path but the
// transport is the one real machines take.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/partition"
	"github.com/ethfab/ethfab/scenario"
)

// Options say where and how a lab across machines runs.
type Options struct {
	Machines []partition.Machine
	// Emulated: the machines are emulated on this one (local:N), joined
	// by an underlay of namespaces; otherwise each is a real machine
	// whose name resolves to its underlay address.
	Emulated bool
	// Launcher runs the workers: Exec (emulated machines only), SSH or
	// Srun. Ethfab is the ethfab command on the machines (default
	// "ethfab"; words split at spaces), SSHConfig an ssh configuration
	// file in place of the user's.
	Launcher, Ethfab, SSHConfig string
	// UnderlayMTU is an emulated underlay's MTU (0: underlayMTU).
	UnderlayMTU int
	// Instances is each part's OVS instances (eBPF: fabric namespaces);
	// 0 chooses by the part's ports.
	Instances int
	// Graph splits fabrics that are not split by groups (nil: region
	// growing).
	Graph  partition.GraphSplitter
	Report steps.Reporter
}

// PartPlan is what a worker is given to build its part: the scenario
// (named after the part) and the part.
type PartPlan struct {
	Scenario  string      `json:"scenario"` // YAML
	Source    string      `json:"source"`   // the coordinator's file, for errors
	Part      fabric.Part `json:"part"`
	Instances int         `json:"instances,omitempty"`
}

// workerGrace is how long a worker told to stop (SIGTERM, its stdin
// closed) has to roll its part back before it is killed.
const workerGrace = 60 * time.Second

// underlayMTU is an emulated underlay's: jumbo frames, so the emulated
// links' 1,500-byte frames cross whole with VXLAN's 50 bytes on top.
const underlayMTU = 9000

// Up brings sc's lab up across the machines: planned, recorded, every
// part built at once; on failure every part and the underlay are removed.
func Up(ctx context.Context, sc *scenario.Scenario, o Options) (lab *fabric.Lab, err error) {
	start := time.Now()
	rep := steps.Or(o.Report)
	if err := check(sc, &o); err != nil {
		return nil, err
	}
	c := &coordinator{sc: sc, o: o, rep: rep}
	defer func() {
		if err != nil && c.lab != nil {
			steps.Printf(rep, "bring-up across machines failed, rolling back: %v", err)
			if derr := Down(context.WithoutCancel(ctx), sc.Name, rep); derr != nil {
				err = fmt.Errorf("%w (and rollback: %v)", err, derr)
			}
			lab = nil
		}
	}()
	t, err := steps.Run(ctx, rep, []steps.Step{
		{Name: "plan", What: func() string { return fmt.Sprintf("splitting the fabric across %d machines", len(o.Machines)) }, Do: c.plan},
		{Name: "state", What: func() string { return "recording the plan" }, Do: c.record},
		{Name: "underlay", What: func() string { return "joining the machines" }, Do: c.underlay},
		{Name: "parts", What: func() string { return fmt.Sprintf("building %d parts", len(o.Machines)) }, Do: c.parts},
	})
	if err != nil {
		return nil, err
	}
	c.lab.State = "up"
	t["total"] = time.Since(start).Seconds()
	c.lab.Timing = t
	if err := c.lab.Save(); err != nil {
		return nil, err
	}
	steps.Printf(rep, "lab %s up across %d machines in %.2fs", sc.Name, len(o.Machines), t["total"])
	return c.lab, nil
}

// check refuses what cannot run before anything is made.
func check(sc *scenario.Scenario, o *Options) error {
	if err := scenario.CheckLabName(sc.Name); err != nil {
		return fmt.Errorf("%s: name: %w", sc.Source, err)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("ethfab up needs root (namespaces, veths, tunnels)")
	}
	if len(o.Machines) < 2 {
		return fmt.Errorf("--machines: a lab across machines needs at least 2 (without --machines it runs on this one)")
	}
	last := fabric.PartLabName(sc.Name, len(o.Machines)-1)
	if err := scenario.CheckLabName(last); err != nil {
		return fmt.Errorf("%s: name: its parts are named %s and so on: %w; shorten the lab's name", sc.Source, last, err)
	}
	if o.Ethfab == "" {
		o.Ethfab = "ethfab"
	}
	if o.UnderlayMTU != 0 && (!o.Emulated || o.UnderlayMTU < 576 || o.UnderlayMTU > 65535) {
		return fmt.Errorf("--underlay-mtu %d: an emulated underlay's MTU, 576 to 65535", o.UnderlayMTU)
	}
	if _, err := ParseLauncher(o.Launcher); err != nil {
		return fmt.Errorf("--launcher: %w", err)
	}
	if o.SSHConfig != "" && o.Launcher != SSH {
		return fmt.Errorf("--ssh-config applies with --launcher ssh")
	}
	if o.Launcher == Exec && !o.Emulated {
		return fmt.Errorf("--launcher exec runs workers on this machine: only for emulated machines (--machines local:N)")
	}
	return nil
}

// coordinator is one bring-up across machines.
type coordinator struct {
	sc    *scenario.Scenario
	o     Options
	rep   steps.Reporter
	comp  *fabric.Compiled
	split *partition.Partition
	plans []PartPlan
	lab   *fabric.Lab
}

// plan compiles the fabric (the hosts' original MACs, which every part
// builds the same tables from), splits it and gives every machine its
// underlay address and every cut link its VNI.
func (c *coordinator) plan(context.Context) (string, error) {
	comp, err := fabric.Compile(c.sc)
	if err != nil {
		return "", fmt.Errorf("%s: %w", c.sc.Source, err)
	}
	c.comp = comp
	if c.split, err = partition.Split(comp.Top, c.o.Machines, c.o.Graph); err != nil {
		return "", fmt.Errorf("--machines: %w", err)
	}
	n := len(c.o.Machines)
	names := make([]string, n)
	for k, m := range c.o.Machines {
		names[k] = m.Name
	}
	addrs := make([]string, n)
	unders := make([]fabric.Underlay, n)
	for k := range c.o.Machines {
		if c.o.Emulated {
			addrs[k], unders[k] = emulatedAddr(k), fabric.Underlay{NS: underlayNS(c.sc.Name, k), Dev: "ul"}
			continue
		}
		if addrs[k], err = resolve(names[k]); err != nil {
			return "", fmt.Errorf("--machines: %w", err)
		}
	}
	vni := vniBase(c.sc.Name, len(comp.Top.Links), c.o.Emulated)
	originals := make([]string, len(comp.HostMAC))
	for h, m := range comp.HostMAC {
		originals[h] = m.String()
	}
	for k := range c.o.Machines {
		part := *c.sc
		part.Name = fabric.PartLabName(c.sc.Name, k)
		y, err := part.MarshalYAML()
		if err != nil {
			return "", err
		}
		c.plans = append(c.plans, PartPlan{Scenario: string(y), Source: c.sc.Source, Instances: c.o.Instances,
			Part: fabric.Part{Lab: c.sc.Name, Machine: names[k], Index: k, Machines: names, Of: c.split.Of, Originals: originals,
				Underlay: unders[k], Addrs: addrs, VNIBase: vni}})
	}
	return fmt.Sprintf("split %s by %s across %d machines: %d links cut (imbalance %.2f)", comp.Top.Spec, c.split.Unit, n, len(c.split.Cut), c.split.Imbalance), nil
}

// emulatedAddr is emulated machine k's underlay address: 192.168/16 in
// the underlay's own namespaces, so it meets no address of this machine.
func emulatedAddr(k int) string { return fmt.Sprintf("192.168.%d.%d", (k+1)>>8, (k+1)&255) }

// underlayNS is emulated machine k's underlay namespace, and bridgeNS the
// one of the switch joining them.
func underlayNS(lab string, k int) string { return fmt.Sprintf("%s-u%d", lab, k) }
func bridgeNS(lab string) string          { return lab + "-ul" }

// resolve is a machine's underlay address: its name's first IPv4
// address (a user@ prefix, as ssh takes it, is not part of the name).
func resolve(machine string) (string, error) {
	host := machine
	if _, h, ok := strings.Cut(machine, "@"); ok {
		host = h
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.To4() == nil {
			return "", fmt.Errorf("machine %s: want an IPv4 underlay address", machine)
		}
		return ip.String(), nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return "", fmt.Errorf("machine %s: %w", machine, err)
	}
	for _, ip := range ips {
		if ip.To4() != nil {
			return ip.String(), nil
		}
	}
	return "", fmt.Errorf("machine %s: no IPv4 address (the tunnels need one)", machine)
}

// vniBase is the first VNI of a lab's cut links. On emulated machines the
// underlay is the lab's own; on real ones it is shared with other labs
// across the same machines, so each lab takes its VNIs from its name
// (two labs that still meet get the kernel's EEXIST, named by the worker).
func vniBase(lab string, links int, emulated bool) uint32 {
	if emulated {
		return 1
	}
	span := uint32(fabric.MaxVNI - links)
	return 1 + crc32.ChecksumIEEE([]byte(lab))%span
}

// record writes the lab's state, with every machine and its part's name,
// before anything exists anywhere.
func (c *coordinator) record(context.Context) (string, error) {
	sc, comp := c.sc, c.comp
	l := &fabric.Lab{Format: fabric.LabFormat, Lab: sc.Name, State: "building", Scenario: sc.Source, Topology: comp.Top.Spec,
		Addressing: comp.Plan.Scheme, Compact: comp.Plan.Compact, Assign: comp.Assign, Routing: comp.Mode, SourceGuard: comp.SourceGuard}
	for k, m := range c.o.Machines {
		sh := c.split.Machines[k]
		ms := fabric.MachineState{Name: m.Name, Part: fabric.PartLabName(sc.Name, k), Launcher: c.o.Launcher, Addr: c.plans[k].Part.Addrs[k],
			Underlay: c.plans[k].Part.Underlay, Switches: sh.Switches, Hosts: sh.Hosts, Ports: sh.Ports, CutLinks: sh.CutLinks}
		if c.o.Launcher != Exec {
			ms.Ethfab = c.o.Ethfab
		}
		if c.o.Launcher == SSH {
			ms.SSHConfig = c.o.SSHConfig
		}
		l.Machines = append(l.Machines, ms)
		if c.o.Emulated {
			l.Namespaces = append(l.Namespaces, underlayNS(sc.Name, k))
		}
	}
	if c.o.Emulated {
		l.Namespaces = append(l.Namespaces, bridgeNS(sc.Name))
	}
	if err := l.Create(); err != nil {
		return "", err
	}
	c.lab = l
	return "", sc.WriteFile(l.Dir + "/scenario.yaml")
}

// underlay makes emulated machines' network: a namespace each with an
// interface "ul" and its address, all on one bridge.
func (c *coordinator) underlay(context.Context) (string, error) {
	if !c.o.Emulated {
		return "underlay: the machines' own", nil
	}
	mtu := c.o.UnderlayMTU
	if mtu == 0 {
		mtu = underlayMTU
	}
	if err := makeUnderlay(c.sc.Name, len(c.o.Machines), mtu); err != nil {
		return "", err
	}
	return fmt.Sprintf("underlay: %d emulated machines on a bridge, MTU %d", len(c.o.Machines), mtu), nil
}

// parts starts a worker on every machine and waits for them all; the
// first to fail stops the others (their parts roll back, and Up's
// rollback removes whatever is left).
func (c *coordinator) parts(ctx context.Context) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := make([]*fabric.Lab, len(c.plans))
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for k := range c.plans {
		wg.Go(func() {
			var err error
			if parts[k], err = c.buildPart(ctx, k); err != nil {
				// The first failure is the error; the workers it stops
				// fail after it, of being stopped.
				once.Do(func() { first = fmt.Errorf("machine %s: %w", c.o.Machines[k].Name, err) })
				cancel()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return "", first
	}
	for k, p := range parts {
		if c.lab.Machines[k].Part != p.Lab {
			return "", fmt.Errorf("machine %s built lab %s, not %s", c.o.Machines[k].Name, p.Lab, c.lab.Machines[k].Part)
		}
		if p.OVS.Datapath != parts[0].OVS.Datapath {
			return "", fmt.Errorf("machine %s runs the %s datapath, machine %s the %s one: one lab runs one datapath (set ovs.datapath)",
				c.o.Machines[k].Name, p.OVS.Datapath, c.o.Machines[0].Name, parts[0].OVS.Datapath)
		}
		steps.Printf(c.rep, "machine %s: part %s up in %.2fs: %d hosts, %d switches", c.o.Machines[k].Name, p.Lab, p.Timing["total"], len(p.Hosts), len(p.Switches))
	}
	merge(c.lab, c.comp, parts)
	// The datapath every part chose.
	c.lab.OVS = fabric.OVSState{Datapath: parts[0].OVS.Datapath, FlowCache: parts[0].OVS.FlowCache, Ports: parts[0].OVS.Ports,
		Allocator: parts[0].OVS.Allocator, Version: parts[0].OVS.Version}
	return fmt.Sprintf("parts: %d up, %d hosts, %d switches", len(parts), len(c.lab.Hosts), len(c.lab.Switches)), nil
}

// buildPart runs `ethfab worker up` on machine k with its plan on
// standard input, which stays open while the part is built: a worker
// whose coordinator dies, or cancels, sees it close and rolls its part
// back.
func (c *coordinator) buildPart(ctx context.Context, k int) (*fabric.Lab, error) {
	m := c.o.Machines[k].Name
	plan, err := json.Marshal(c.plans[k])
	if err != nil {
		return nil, err
	}
	s, err := startSession(ctx, c.lab.Machines[k], c.rep, false, "worker", "up", "--machine", m)
	if err != nil {
		return nil, err
	}
	ferr := s.line(string(plan))
	out, err := s.wait(false)
	if err != nil {
		return nil, err
	}
	if ferr != nil {
		return nil, ferr
	}
	var l fabric.Lab
	if err := json.Unmarshal(out, &l); err != nil {
		return nil, fmt.Errorf("worker's answer: %w", err)
	}
	return &l, nil
}

// merge completes the coordinator's state from the parts' states: every
// host and switch in the fabric's order, with its machine, and every link
// once (a cut link from both machines' ends).
func merge(l *fabric.Lab, comp *fabric.Compiled, parts []*fabric.Lab) {
	hostAt, swAt := map[string]int{}, map[string]int{}
	for i, h := range comp.Top.Hosts {
		hostAt[h.Name] = i
	}
	for i, s := range comp.Top.Switches {
		swAt[s.Name] = i
	}
	cut := map[uint32]int{} // a cut link's index in l.Links, by VNI
	for _, p := range parts {
		l.Hosts = append(l.Hosts, p.Hosts...)
		l.Switches = append(l.Switches, p.Switches...)
		l.Warnings = append(l.Warnings, p.Warnings...)
		for _, k := range p.Links {
			if k.Tunnel == nil {
				l.Links = append(l.Links, k)
				continue
			}
			if i, ok := cut[k.Tunnel.VNI]; ok {
				l.Links[i].B.NetNS = k.A.NetNS
				continue
			}
			l.Links = append(l.Links, k)
			cut[k.Tunnel.VNI] = len(l.Links) - 1
		}
	}
	slices.SortStableFunc(l.Hosts, func(a, b fabric.Host) int { return hostAt[a.Name] - hostAt[b.Name] })
	slices.SortStableFunc(l.Switches, func(a, b fabric.Switch) int { return swAt[a.Name] - swAt[b.Name] })
	slices.Sort(l.Warnings)
	l.Warnings = slices.Compact(l.Warnings)
}
