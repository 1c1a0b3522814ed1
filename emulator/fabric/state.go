// Package fabric is the kernel side of a lab: it turns a scenario and the
// controller's tables into namespaces, veths, tc shaping, private Open
// vSwitch instances and installed rules (Up), describes a running lab
// (Status) and removes everything a lab made, by name, even after a crash
// (Down).
package fabric

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// StateRoot holds one directory per lab. It lives on /run, like the named
// namespaces in /run/netns: where /run is a tmpfs (systemd's default) a
// reboot forgets both together; where it is on disk (this project's
// Firecracker VM: ext4) the state files and the /run/netns entries
// outlive the namespaces they name.
var StateRoot = "/run/ethfab"

const stateFile = "lab.json"

// Host is one emulated host as `ethfab status` reports it.
type Host struct {
	Name   string `json:"name"`
	NetNS  string `json:"netns"`
	Iface  string `json:"iface"`
	MAC    string `json:"mac"`
	IP     string `json:"ip"`
	Switch string `json:"switch"`
	Port   int    `json:"port"`
	// PseudoMAC is the address the controller assigned; with assign: dmp
	// the host adopts it at boot, with static it already has it.
	PseudoMAC string `json:"pseudo_mac"`
	// Machine is the machine the host runs on, in a lab across machines.
	Machine string `json:"machine,omitempty"`
}

// Switch is one emulated switch.
type Switch struct {
	Name     string `json:"name"`
	Bridge   string `json:"bridge"`
	Ports    int    `json:"ports"`
	Flows    int    `json:"flows"`
	Mgmt     string `json:"mgmt"`
	Instance int    `json:"instance"`
	NetNS    string `json:"netns"`
	Machine  string `json:"machine,omitempty"` // in a lab across machines
}

// LinkEnd is one end of a link: a device in a namespace.
type LinkEnd struct {
	Node  string `json:"node"`
	NetNS string `json:"netns"`
	Iface string `json:"iface"`
	Port  int    `json:"port,omitempty"`
	// Machine: in a lab across machines, the end's machine (another's
	// end has no namespace here).
	Machine string `json:"machine,omitempty"`
}

// Link is one cable.
type Link struct {
	A       LinkEnd `json:"a"`
	B       LinkEnd `json:"b"`
	Class   string  `json:"class"`
	Shaping string  `json:"shaping"`
	// Shape is the shaping as built, with its queue's size (a rate
	// change keeps it: a switch's buffer does not shrink with a port's
	// speed); nil in labs of an older ethfab.
	Shape *kernel.Shaping `json:"shape,omitempty"`
	// Tunnel: a cut link, whose A end is a VXLAN device here and whose B
	// end is on another machine.
	Tunnel *TunnelState `json:"tunnel,omitempty"`
}

// TunnelState is a cut link's VXLAN tunnel, as built.
type TunnelState struct {
	VNI    uint32 `json:"vni"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
}

// PartState says a lab is one machine's part of a lab across machines.
type PartState struct {
	Lab      string         `json:"lab"`
	Machine  string         `json:"machine"`
	Index    int            `json:"index"`
	Underlay *UnderlayState `json:"underlay,omitempty"`
}

// PairRate is the rate of the links between two switches.
type PairRate struct {
	Link    [2]string `json:"link"` // switch names, in order
	RateBps uint64    `json:"rate_bps"`
}

// OVSState says where the lab's private Open vSwitch instances are.
type OVSState struct {
	// DB is the first instance's database socket, for
	// `ovs-vsctl --db=...`; every instance is listed in Instances.
	DB        string   `json:"db"`
	RunDir    string   `json:"run_dir"`
	Datapath  string   `json:"datapath"`
	Ports     string   `json:"ports,omitempty"`      // "socket" or "pmd": see PortMode
	Allocator string   `json:"allocator,omitempty"`  // malloc of ovs-vswitchd (ovs.FindAllocator); its library is in each instance's config
	FlowCache string   `json:"flow_cache,omitempty"` // "on" or "off": see FlowCached
	Instances []OVSRef `json:"instances"`
	Version   string   `json:"version,omitempty"`
}

// OVSRef is one instance of the lab's pool.
type OVSRef struct {
	RunDir string `json:"run_dir"`
	NetNS  string `json:"netns"`
	DB     string `json:"db"`
}

// LabFormat is the format of lab.json this ethfab writes. Format 0 (no
// "format" field) is the previous one: readable, but it did not record
// addressing.compact or source_guard, so run --lab refuses to attach to it.
const LabFormat = 1

// Lab is the state `up` writes before it creates anything and completes as
// it goes, so `status` and `down` work without the scenario and after a
// crash. What the controller compiled is recorded as typed fields (the
// topology as its string); the compiled tables themselves are not
// persisted, but travel in memory (Compiled).
type Lab struct {
	Format     int               `json:"format"`
	Lab        string            `json:"lab"`
	Dir        string            `json:"dir"`
	State      string            `json:"state"` // building, up, tearing-down; broken when Load finds namespaces gone
	Scenario   string            `json:"scenario"`
	Topology   topology.Spec     `json:"topology"`
	Addressing addressing.Scheme `json:"addressing"`
	Compact    bool              `json:"compact"`
	Assign     addressing.Assign `json:"assign"`
	Routing    controller.Mode   `json:"routing"`
	// VLANAssign is routing.vlan.assign (routing vlan); VLANOff the links
	// the switches' VLAN paths avoid now, as switch-name pairs (ethfab link
	// --order safe).
	VLANAssign vlan.Method `json:"vlan_assign,omitempty"`
	VLANOff    [][2]string `json:"vlan_off,omitempty"`
	// VLANTorus is routing.vlan.torus: the path set on a torus with two
	// links between neighbours.
	VLANTorus vlan.Torus `json:"vlan_torus,omitempty"`
	// VLANLearn: the switches learn MACs (routing.vlan.macs learn),
	// forgetting them after VLANAging (0: never).
	VLANLearn bool          `json:"vlan_learn,omitempty"`
	VLANAging time.Duration `json:"vlan_aging_ns,omitempty"`
	// VLANTagged are the hosts whose ports are tagged members of their
	// VLANs (routing.vlan.tagged_hosts).
	VLANTagged []string `json:"vlan_tagged_hosts,omitempty"`
	// LinksOff are the links ethfab link turned off, as switch-name pairs
	// (every link between the two), in either order.
	LinksOff [][2]string `json:"links_off,omitempty"`
	// LinkRates are the links ethfab link set to a rate other than the
	// one they were built with.
	LinkRates   []PairRate `json:"link_rates,omitempty"`
	SourceGuard bool       `json:"source_guard"`
	Namespaces  []string   `json:"namespaces"`
	Hosts       []Host     `json:"hosts"`
	Switches    []Switch   `json:"switches"`
	Links       []Link     `json:"links"`
	OVS         OVSState   `json:"ovs"`
	// BPF names the eBPF datapath's program and maps (ovs.datapath ebpf).
	BPF *datapath.IDs `json:"bpf,omitempty"`
	// Part: this lab is one machine's part of a lab across machines.
	Part *PartState `json:"part,omitempty"`
	// Machines: this lab runs across machines, each a part (see package
	// cluster), and only its underlay's namespaces (emulated machines)
	// are its own.
	Machines []MachineState `json:"machines,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
	Timing   steps.Timing   `json:"timing"` // seconds by bring-up step (see upper.steps), and "total"

	compiled *Compiled // Up's, or Attach's; nil for a lab only loaded
}

// LabDir is where a lab's state lives. The name must have passed
// scenario.CheckLabName: Load, Down and Up check it.
func LabDir(lab string) string { return filepath.Join(StateRoot, lab) }

// removeLabDir removes a lab's state directory after checking that it is
// one: a directory (not a symlink) whose resolved parent is the resolved
// state root, under a valid lab name. Names are checked where they come
// in; this check is the last line that keeps a bug elsewhere (or a path
// read back from a state file) from removing anything outside the root.
func removeLabDir(dir string) error {
	root, err := filepath.EvalSymlinks(StateRoot)
	if err != nil {
		return fmt.Errorf("failed to resolve the state root: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("failed to resolve %s: %w", dir, err)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return fmt.Errorf("failed to resolve %s: %w", dir, err)
	}
	if parent != root || scenario.CheckLabName(filepath.Base(abs)) != nil {
		return fmt.Errorf("refusing to remove %s: not a lab directory directly under %s", dir, StateRoot)
	}
	fi, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("refusing to remove %s: not a directory", dir)
	}
	return os.RemoveAll(abs)
}

// Create makes the lab's state directory and writes its state there,
// before anything of the lab exists, so `down` can always find what a
// bring-up may have made. A lab of that name that exists already is an
// error: of two ups of one name, one must lose.
func (l *Lab) Create() error {
	if err := os.MkdirAll(StateRoot, 0o755); err != nil {
		return fmt.Errorf("failed to create the state root: %w", err)
	}
	l.Dir = LabDir(l.Lab)
	// Mkdir, not MkdirAll: the one that loses sees it exist.
	if err := os.Mkdir(l.Dir, 0o755); errors.Is(err, os.ErrExist) {
		return fmt.Errorf("lab %q already exists (ethfab down %s)", l.Lab, l.Lab)
	} else if err != nil {
		return fmt.Errorf("lab directory: %w", err)
	}
	if err := l.save(); err != nil {
		removeLabDir(l.Dir)
		return err
	}
	return nil
}

// Save writes the lab's state.
func (l *Lab) Save() error { return l.save() }

func (l *Lab) save() error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(l.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("save lab state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(l.Dir, stateFile))
}

// ErrNoLab is returned for a lab that does not exist.
var ErrNoLab = errors.New("no such lab")

// Load reads a lab's state.
func Load(lab string) (*Lab, error) {
	if err := scenario.CheckLabName(lab); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(LabDir(lab), stateFile))
	if errors.Is(err, os.ErrNotExist) {
		if _, derr := os.Stat(LabDir(lab)); derr == nil {
			return &Lab{Lab: lab, Dir: LabDir(lab), State: "broken"}, nil
		}
		return nil, fmt.Errorf("lab %q: %w (see `ethfab status`)", lab, ErrNoLab)
	}
	if err != nil {
		return nil, err
	}
	var l Lab
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("lab %q: state file %s: %w", lab, filepath.Join(LabDir(lab), stateFile), err)
	}
	if err := l.check(); err != nil {
		return nil, fmt.Errorf("lab %q: state file %s: %w", lab, filepath.Join(LabDir(lab), stateFile), err)
	}
	if l.State == "up" {
		l.checkNamespaces()
	}
	return &l, nil
}

// checkNamespaces marks a lab whose state file says up as broken when
// some of its namespaces are gone (a `down` killed half-way, or one
// deleted by hand): a lab is up only if the kernel agrees.
func (l *Lab) checkNamespaces() {
	existing, err := kernel.ListNamespaces(l.Lab + "-")
	if err != nil {
		return
	}
	have := map[string]bool{}
	for _, n := range existing {
		have[n] = true
	}
	gone := 0
	for _, n := range l.Namespaces {
		if !have[n] {
			gone++
		}
	}
	if gone > 0 {
		l.State = "broken"
		l.Warnings = append(l.Warnings, fmt.Sprintf("%d of %d namespaces are gone (ethfab down %s removes the rest)", gone, len(l.Namespaces), l.Lab))
	}
}

// List names every lab with a state directory.
func List() ([]string, error) {
	es, err := os.ReadDir(StateRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var labs []string
	for _, e := range es {
		if e.IsDir() {
			labs = append(labs, e.Name())
		}
	}
	sort.Strings(labs)
	return labs, nil
}

// Host finds a host by name.
func (l *Lab) Host(name string) *Host {
	for i := range l.Hosts {
		if l.Hosts[i].Name == name {
			return &l.Hosts[i]
		}
	}
	return nil
}

// check refuses a state file this ethfab cannot read right: a newer
// format, or a field that is not one of its values (the topology was
// checked as it was read). A field left out is not recorded: `down` works
// from the names alone, whatever else the file lacks.
func (l *Lab) check() error {
	if l.Format > LabFormat {
		return fmt.Errorf("format %d is newer than this ethfab's %d (use the ethfab that brought the lab up)", l.Format, LabFormat)
	}
	for _, f := range []struct {
		field, value string
		parse        func(string) error
	}{
		{"addressing", string(l.Addressing), func(v string) error { _, err := addressing.ParseScheme(v); return err }},
		{"assign", string(l.Assign), func(v string) error { _, err := addressing.ParseAssign(v); return err }},
		{"routing", string(l.Routing), func(v string) error { _, err := controller.ParseMode(v); return err }},
	} {
		if f.value == "" {
			continue
		}
		if err := f.parse(f.value); err != nil {
			return fmt.Errorf("%s: %w", f.field, err)
		}
	}
	return nil
}

// OnOneMachine refuses a lab across machines for what works only on one
// machine's lab so far.
func (l *Lab) OnOneMachine(what string) error {
	if len(l.Machines) > 0 {
		return fmt.Errorf("lab %s runs across %d machines: %s works on a lab on one machine only so far (status, exec, ping, run and down work across machines)", l.Lab, len(l.Machines), what)
	}
	if p := l.Part; p != nil {
		return fmt.Errorf("lab %s is machine %s's part of lab %s, which runs across machines: %s works on a lab on one machine only so far", l.Lab, p.Machine, p.Lab, what)
	}
	return nil
}

// Emulated says the lab's machines are emulated on this one (their
// underlay is namespaces here): they share its clock and its cores.
func (l *Lab) Emulated() bool {
	for _, m := range l.Machines {
		if m.Underlay.NS == "" {
			return false
		}
	}
	return len(l.Machines) > 0
}

// Compiled is the lab's topology, addresses and tables as the controller
// compiled them: Up's, or those Attach checked against the lab. Nil for a
// lab only loaded from its state file.
func (l *Lab) Compiled() *Compiled { return l.compiled }

// Attach compiles sc for this running lab, as its switches run it (with
// its hosts' original MACs), checks that the lab was brought up from the
// same fabric in every compiled field, and attaches the result (Compiled).
// An error names the first field that differs.
func (l *Lab) Attach(sc *scenario.Scenario) (*Compiled, error) {
	if p := l.Part; p != nil {
		return nil, fmt.Errorf("lab %s is machine %s's part of lab %s: run on lab %s", l.Lab, p.Machine, p.Lab, p.Lab)
	}
	if l.Format < 1 {
		return nil, fmt.Errorf("lab %s was brought up by an older ethfab, which did not record addressing.compact: bring it up again", l.Lab)
	}
	originals := make([]addressing.MAC, len(l.Hosts))
	for i, h := range l.Hosts {
		m, err := addressing.ParseMAC(h.MAC)
		if err != nil {
			return nil, fmt.Errorf("lab %s: host %s: mac: %w", l.Lab, h.Name, err)
		}
		originals[i] = m
	}
	return l.attach(sc, originals)
}

// AttachPart is Attach for one machine's part of a lab across machines:
// sc is the lab's scenario and originals every host's MAC at creation
// (the coordinator's compile), from which every part built the same
// tables. The part's own hosts and switches are checked against them.
func (l *Lab) AttachPart(sc *scenario.Scenario, originals []string) (*Compiled, error) {
	if l.Part == nil {
		return nil, fmt.Errorf("lab %s is no part of a lab across machines", l.Lab)
	}
	p := Part{Originals: originals}
	macs, err := p.originals()
	if err != nil {
		return nil, err
	}
	return l.attach(sc, macs)
}

// attach compiles sc with the hosts' original MACs, checks it against the
// lab (matches, runs) and attaches it.
func (l *Lab) attach(sc *scenario.Scenario, originals []addressing.MAC) (*Compiled, error) {
	if err := l.matches(sc); err != nil {
		return nil, err
	}
	c, err := compile(sc, originals)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sc.Source, err)
	}
	if err := l.runs(c); err != nil {
		return nil, err
	}
	l.compiled = c
	return c, nil
}

// matches compares the scenario's compiled fields with the lab's, by the
// scenario's field names.
func (l *Lab) matches(sc *scenario.Scenario) error {
	type field struct {
		field     string
		lab, want any
	}
	fields := []field{
		{"topology", l.Topology.String(), sc.Topology.String()},
		{"addressing.scheme", l.Addressing, sc.Addressing.Scheme},
		{"addressing.compact", l.Compact, sc.Addressing.Compact},
		{"addressing.assign", l.Assign, sc.Addressing.Assign},
		{"addressing.source_guard", l.SourceGuard, sc.Addressing.SourceGuard},
		{"routing.mode", l.Routing, sc.Routing.Mode},
	}
	if v := sc.Routing.VLAN; v != nil && l.Routing == controller.VLAN {
		// Both assignments, and both torus path sets on a 4×4 torus, may
		// give the same rule counts: the counts alone do not tell them
		// apart. A lab from before routing.vlan.torus ran dateline.
		fields = append(fields, field{"routing.vlan.assign", l.VLANAssign, v.Assign},
			field{"routing.vlan.torus", l.VLANTorus.OrDefault(), v.Torus.OrDefault()})
	}
	for _, f := range fields {
		if f.lab != f.want {
			return fmt.Errorf("lab %s runs %s %v, %s wants %v (ethfab down %s, or run without --lab)", l.Lab, f.field, f.lab, sc.Source, f.want, l.Lab)
		}
	}
	if d := sc.OVS.Datapath; d != scenario.DatapathAuto && d != "" && string(d) != l.OVS.Datapath {
		return fmt.Errorf("lab %s runs ovs.datapath %s, %s wants %s (ethfab down %s, or run without --lab)", l.Lab, l.OVS.Datapath, sc.Source, d, l.Lab)
	}
	// A run derives thresholds from the links' rates and queues (the
	// pause threshold, QCN's time scale, the rate checks): they must be
	// the lab's. A run at 100 Mbit/s on a lab built at 10 put XOFF above
	// the lab's whole queue, and no port ever paused.
	for _, class := range scenario.ClassesOf(sc.Topology.Kind) {
		want, cls := sc.Links[class], classOf(class).String()
		for _, k := range l.Links {
			if k.Class != cls || k.Shape == nil {
				continue
			}
			// The queue as the scenario builds it: its limit, or the
			// one its rate gives.
			_, limit := linkShaping(want, false).TBF()
			if want.Rate == 0 {
				limit = 0
			}
			if k.Shape.RateBps != want.Rate || k.Shape.Limit != limit {
				return fmt.Errorf("lab %s runs links.%s %s, %s wants %s (ethfab down %s, or run without --lab)", l.Lab, class,
					describe(*k.Shape), sc.Source, describe(linkShaping(want, false)), l.Lab)
			}
			break
		}
	}
	return nil
}

// runs checks that c is what the lab's switches and hosts were given:
// each host is a compiled host with its MAC, each switch has as many
// rules as Up installed. A whole lab has one host per compiled host and
// one switch per table; a machine's part of a lab across machines has
// its own.
func (l *Lab) runs(c *Compiled) error {
	if l.Part == nil && (len(l.Hosts) != len(c.Top.Hosts) || len(l.Switches) != len(c.Top.Switches)) {
		return fmt.Errorf("lab %s has %d hosts and %d switches, the scenario compiles %d and %d", l.Lab, len(l.Hosts), len(l.Switches), len(c.Top.Hosts), len(c.Top.Switches))
	}
	hostAt, swAt := map[string]int{}, map[string]int{}
	for i, h := range c.Top.Hosts {
		hostAt[h.Name] = i
	}
	for i, s := range c.Top.Switches {
		swAt[s.Name] = i
	}
	for _, h := range l.Hosts {
		i, ok := hostAt[h.Name]
		if !ok {
			return fmt.Errorf("lab %s: host %s is not one the scenario compiles", l.Lab, h.Name)
		}
		if h.MAC != c.HostMAC[i].String() {
			return fmt.Errorf("lab %s: host %d is %s with MAC %s, the scenario compiles %s", l.Lab, i, h.Name, h.MAC, c.HostMAC[i])
		}
	}
	for _, s := range l.Switches {
		i, ok := swAt[s.Name]
		if !ok || s.Flows != len(c.Tables[i].Rules) {
			rules := -1
			if ok {
				rules = len(c.Tables[i].Rules)
			}
			return fmt.Errorf("lab %s: switch %s was given %d rules, the scenario compiles %d for it", l.Lab, s.Name, s.Flows, rules)
		}
	}
	return nil
}
