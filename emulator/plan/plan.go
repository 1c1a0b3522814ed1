// Package plan is what `ethfab plan` does: build a topology, lay out its
// addresses, compile every switch's table, count the rules by kind, and
// optionally walk the tables. No root, no kernel.
package plan

import (
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/resources"
	"github.com/ethfab/ethfab/partition"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// Options are `ethfab plan`'s flags.
type Options struct {
	Topology   topology.Spec
	Scheme     addressing.Scheme
	Compact    bool
	Mode       controller.Mode
	Verify     bool
	MaxPairs   int64 // verify: sample above this many ordered pairs
	Seed       int64
	SampleSize int // compile only this many switches, evenly spread (0: all)
	// AvailableMiB, when positive, is the memory the machine has: a
	// fabric whose plan would not fit is refused before it is built.
	AvailableMiB float64
	// SourceGuard compiles each access switch's source guard, as `up`
	// installs it unless the scenario turns it off.
	SourceGuard bool
	// VLAN, when set, also assigns seed 002's switch-tagged VLANs by that
	// method (seed 002's topologies only); Verify walks them too.
	VLAN vlan.Method
	// VLANTorus is the VLAN paths' set on a torus with two links between
	// neighbours (default dateline).
	VLANTorus vlan.Torus
	// LinksOff are links between switches (by name) the VLAN paths avoid,
	// as `ethfab link ... off` in the safe order routes around them.
	LinksOff [][2]string
	// Machines, when set, splits the fabric across them (partition.Split);
	// Graph splits fabrics without groups (nil: region growing).
	Machines []partition.Machine
	Graph    partition.GraphSplitter
	// Flows are saturated flows, source and destination host names,
	// whose max-min shares the report gives (FlowsReport).
	Flows [][2]string
}

// Report is `ethfab plan --json`; scripts depend on the names.
type Report struct {
	Topology    string            `json:"topology"`
	Addressing  addressing.Scheme `json:"addressing"`
	Compact     bool              `json:"compact"`
	Routing     controller.Mode   `json:"routing"`
	SourceGuard bool              `json:"source_guard"`
	Switches    int               `json:"switches"`
	Hosts       int               `json:"hosts"`
	Links       int               `json:"links"`
	// SwitchLinks counts the inter-switch links (seed 002 Table 11's
	// "# links"); AvgPathSwitches is its Avg.H, the mean switches on a
	// shortest path over all ordered host pairs, a host with itself
	// included (topology.AvgPathSwitches; omitted above 4,096 switches).
	SwitchLinks     int                          `json:"switch_links"`
	AvgPathSwitches *float64                     `json:"avg_path_switches,omitempty"`
	Groups          int                          `json:"groups"`
	Diameter        int                          `json:"diameter"`
	HopBound        int                          `json:"hop_bound"`
	Address         AddressReport                `json:"address"`
	Rules           map[string]controller.Spread `json:"rules"`
	// CoS is the Class-of-Service (802.1p) level per hop class that keeps
	// the routing deadlock-free under PAUSE (seed 000 §V-E).
	CoS   controller.CoSPlan `json:"cos"`
	Ports controller.Spread  `json:"ports"`
	// Equation1 is seed 000 Eq. 1, R = (G-1) + (S-1) + T, for the
	// uncompacted hierarchical tables of direct topologies.
	Equation1 *int                     `json:"equation1,omitempty"`
	Compiled  int                      `json:"switches_compiled"`
	Verify    *controller.VerifyReport `json:"verify,omitempty"`
	VLAN      *VLANReport              `json:"vlan,omitempty"`
	XGFT      *XGFTReport              `json:"xgft,omitempty"`
	Partition *PartitionReport         `json:"partition,omitempty"`
	Flows     *FlowsReport             `json:"flows,omitempty"`
	Seconds   Timing                   `json:"seconds"`
	PeakRSSMB float64                  `json:"peak_rss_mb"`
}

// VLANReport is seed 002's VLAN assignment of the fabric (--vlan-assign).
type VLANReport struct {
	Method vlan.Method `json:"method"`
	// Torus is the path set on a torus with two links between neighbours.
	Torus vlan.Torus `json:"torus,omitempty"`
	// LinksOff are the links the paths avoid (--link-off), as A-B.
	LinksOff []string `json:"links_off,omitempty"`
	// VLANs: the fabric's for fixed, the most on one switch for renamed.
	VLANs int `json:"vlans"`
	// Table3 is the paper's count where its Table 3 has a row.
	Table3 *Table3Row `json:"table3,omitempty"`
	// HostLimit is Eq. 1, H = T/V, for MAC tables of T entries.
	HostLimit  map[string]int     `json:"host_limit"`
	MACEntries controller.Spread  `json:"mac_entries"`
	Switches   []vlan.Switch      `json:"switches"`
	Verify     *vlan.VerifyReport `json:"verify,omitempty"`
}

// XGFTReport is an XGFT's counts (seed 003): nodes per level, compute
// nodes (level 0) first, and the paths between two compute nodes under
// different top subtrees, one through each top switch (w1 ... wh).
type XGFTReport struct {
	Name     string `json:"name"`
	Levels   []int  `json:"levels"`
	TopPaths int    `json:"top_paths"`
}

func xgftReport(sp topology.Spec) *XGFTReport {
	sizes := sp.XGFTLevelSizes()
	return &XGFTReport{Name: sp.XGFTName(), Levels: sizes, TopPaths: sizes[sp.H]}
}

// PartitionReport is the fabric split across machines (--machines): the
// split's figures, and each switch's machine by name.
type PartitionReport struct {
	Method       string            `json:"method"`
	Unit         string            `json:"unit"`
	Machines     []partition.Share `json:"machines"`
	CutLinks     int               `json:"cut_links"`
	CutByClass   map[string]int    `json:"cut_by_class"`
	LinksByClass map[string]int    `json:"links_by_class"`
	Imbalance    float64           `json:"imbalance"`
	Switches     map[string]string `json:"switches"`
	// Estimates are each machine's memory and bring-up time on the eBPF
	// datapath, from the per-object costs `up` checks against
	// (resources.ForPart): what each machine must have.
	Estimates []resources.Estimate `json:"estimates"`
}

func partitionReport(top *topology.Topology, ms []partition.Machine, g partition.GraphSplitter) (*PartitionReport, error) {
	p, err := partition.Split(top, ms, g)
	if err != nil {
		return nil, fmt.Errorf("--machines: %w", err)
	}
	r := &PartitionReport{Method: p.Method, Unit: p.Unit, Machines: p.Machines, CutLinks: len(p.Cut),
		CutByClass: p.CutByClass, LinksByClass: p.LinksByClass, Imbalance: p.Imbalance, Switches: map[string]string{}}
	for i, m := range p.Of {
		r.Switches[top.Switches[i].Name] = ms[m].Name
	}
	for _, sh := range p.Machines {
		e := resources.ForPart(sh.Hosts, len(top.Hosts), sh.Switches, sh.Ports, sh.Hosts+sh.Links, sh.CutLinks, resources.EBPF)
		e.Spec = sh.Machine.Name
		r.Estimates = append(r.Estimates, e)
	}
	return r, nil
}

// unitPrefix names a unit as the switches' names do: g3 (a Dragonfly
// group), r3 (a Flattened Butterfly row), p3 (a Clos pod).
var unitPrefix = map[string]string{"group": "g", "row": "r", "pod": "p"}

// spans writes consecutive units as ranges: g0-g16, g20.
func spans(unit string, units []int) string {
	pre := unitPrefix[unit]
	var out []string
	for i := 0; i < len(units); {
		j := i
		for j+1 < len(units) && units[j+1] == units[j]+1 {
			j++
		}
		if j > i {
			out = append(out, fmt.Sprintf("%s%d-%s%d", pre, units[i], pre, units[j]))
		} else {
			out = append(out, fmt.Sprintf("%s%d", pre, units[i]))
		}
		i = j + 1
	}
	return strings.Join(out, ",")
}

func (p *PartitionReport) writeText(w io.Writer) {
	how := map[string]string{
		"groups":  fmt.Sprintf("whole %ss: only the links between %ss are cut", p.Unit, p.Unit),
		"gpmetis": "the switch graph split by gpmetis",
		"regions": "the switch graph split by region growing (install metis for gpmetis)",
	}[p.Method]
	fmt.Fprintf(w, "  across %d machines (%s), balanced by hosts + ports per core, imbalance %.1f%%:\n", len(p.Machines), how, 100*p.Imbalance)
	units := ""
	if p.Method == "groups" {
		units = p.Unit + "s"
	}
	fmt.Fprintf(w, "    %-20s %5s %8s %6s %6s %7s %10s %8s %6s  %s\n", "machine", "cores", "switches", "hosts", "ports", "load", "cut links", "memory", "up", units)
	for k, sh := range p.Machines {
		units := ""
		if len(sh.Units) > 0 {
			units = fmt.Sprintf("%s (%d)", spans(p.Unit, sh.Units), len(sh.Units))
		}
		e := p.Estimates[k]
		fmt.Fprintf(w, "    %-20s %5d %8d %6d %6d %7d %10d %6.1f G %5.0fs  %s\n", sh.Machine.Name, sh.Machine.Cores, sh.Switches, sh.Hosts, sh.Ports, sh.Load, sh.CutLinks,
			e.MemoryMiB/1024, e.UpSeconds, units)
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(p.LinksByClass)) {
		parts = append(parts, fmt.Sprintf("%d of %d %s", p.CutByClass[c], p.LinksByClass[c], c))
	}
	fmt.Fprintf(w, "    cut: %d links between switches (%s), each a tunnel between two machines\n", p.CutLinks, strings.Join(parts, ", "))
	fmt.Fprintf(w, "    memory and up: each machine's estimate on the eBPF datapath with its hosts' agents, from the costs measured on one machine (a tunnel counted as half a veth pair)\n")
}

// Table3Row is seed 002 Table 3's formula and value for the fabric.
type Table3Row struct {
	Formula string `json:"formula"`
	Value   int    `json:"value"`
	Matches bool   `json:"matches"`
	// LinkOff: the row for one link along the first dimension off.
	LinkOff bool `json:"link_off,omitempty"`
}

// vlanReport assigns (unless the controller routing by VLANs already
// did: a) around the links off and, with verify, walks the VLANs.
func vlanReport(top *topology.Topology, m vlan.Method, tp vlan.Torus, off vlan.Off, a *vlan.Assignment, verify bool) (*VLANReport, error) {
	if !top.Spec.Kind.Testbed() {
		return nil, fmt.Errorf("VLAN assignment runs on seed 002's topologies (mesh, torus, ring, mtree, myriclos, fattree), not %s", top.Spec.Kind)
	}
	var err error
	if a == nil {
		if a, err = vlan.AssignOff(top, m, tp, off); err != nil {
			return nil, err
		}
	}
	r := &VLANReport{Method: m, VLANs: a.VLANs, Switches: a.Switches, HostLimit: map[string]int{}}
	if top.Spec.Kind == topology.Torus && top.Spec.Links == 2 {
		r.Torus = a.Torus
	}
	for l := range off {
		r.LinksOff = append(r.LinksOff, top.Switches[l[0]].Name+"-"+top.Switches[l[1]].Name)
	}
	slices.Sort(r.LinksOff)
	// Table 3 counts the whole fabric's VLANs, and with one link along
	// the first dimension off ("1-link deactivation").
	f, v, ok := vlan.Table3(top.Spec, m)
	if len(off) > 0 {
		ok = false
	}
	for l := range off {
		a, b := top.Switches[l[0]].Coords, top.Switches[l[1]].Coords
		if len(off) == 1 && len(a) > 1 && a[0] != b[0] && slices.Equal(a[1:], b[1:]) {
			f, v, ok = vlan.Table3OneLinkOff(top.Spec, m)
		}
	}
	if ok {
		r.Table3 = &Table3Row{Formula: f, Value: v, Matches: v == a.VLANs, LinkOff: len(off) > 0}
	}
	for _, t := range []int{8000, 10000, 12000} {
		r.HostLimit[fmt.Sprint(t)] = vlan.HostLimit(t, a.VLANs)
	}
	entries := make([]int, len(a.Switches))
	for i, s := range a.Switches {
		entries[i] = s.MACEntries
	}
	r.MACEntries = controller.SpreadOf(entries)
	if verify {
		if r.Verify, err = vlan.Verify(top, a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// AddressReport documents the bit layout.
type AddressReport struct {
	Bits    int                `json:"bits"`
	Fields  []addressing.Field `json:"fields"`
	Example string             `json:"example"`
}

// Timing is where the time went.
type Timing struct {
	Build   float64 `json:"build"`
	Compile float64 `json:"compile"`
	Verify  float64 `json:"verify,omitempty"`
}

// Run plans one fabric.
func Run(o Options) (*Report, error) {
	t0 := time.Now()
	if o.AvailableMiB > 0 {
		if err := resources.CheckPlan(resources.ForPlan(o.Topology), o.AvailableMiB); err != nil {
			return nil, err
		}
	}
	top, err := topology.Build(o.Topology)
	if err != nil {
		return nil, err
	}
	ap, err := addressing.New(top, o.Scheme, o.Compact)
	if err != nil {
		return nil, fmt.Errorf("addressing %s: %w", o.Topology, err)
	}
	if o.Mode == controller.VLAN && o.VLAN == "" {
		o.VLAN = vlan.Renamed
	}
	off, err := vlan.OffByName(top, o.LinksOff)
	if err != nil {
		return nil, err
	}
	if len(off) > 0 && o.VLAN == "" {
		return nil, fmt.Errorf("links off are routed around by VLAN paths only (--routing vlan or --vlan-assign)")
	}
	ctl, err := controller.New(ap, controller.Options{Mode: o.Mode, Compact: o.Compact, SourceGuard: o.SourceGuard, VLANAssign: o.VLAN, VLANTorus: o.VLANTorus, VLANOff: off})
	if err != nil {
		return nil, err
	}
	// Stats compiles and drops each table (a 300,000-host fabric's do not
	// fit in memory together); the walk compiles those it visits.
	r, err := describe(ctl, ctl.Stats, controller.NewTables(ctl), o, t0)
	if err != nil {
		return nil, err
	}
	if len(o.Machines) > 0 {
		if r.Partition, err = partitionReport(top, o.Machines, o.Graph); err != nil {
			return nil, err
		}
	}
	if len(o.Flows) > 0 {
		if r.Flows, err = flowsReport(ctl, o.Flows); err != nil {
			return nil, err
		}
	}
	if o.VLAN == "" {
		return r, nil
	}
	r.VLAN, err = vlanReport(top, o.VLAN, o.VLANTorus, off, ctl.VLANAssignment(), o.Verify)
	return r, err
}

// Describe is Run's report on tables already compiled (a lab's), which it
// compiles no more of: the fabric, addressing and routing reported are
// the tables' own; of o only Verify, MaxPairs, Seed and SampleSize apply.
func Describe(ts *controller.Tables, o Options) (*Report, error) {
	return describe(ts.Controller(), ts.Stats, ts, o, time.Now())
}

func describe(ctl *controller.Controller, stats func([]int) (*controller.RuleStats, error), ts *controller.Tables, o Options, t0 time.Time) (*Report, error) {
	ap := ctl.Plan()
	top := ap.Topology()
	opts := ctl.Options()
	r := &Report{
		Topology: top.Spec.String(), Addressing: ap.Scheme, Compact: opts.Compact, Routing: opts.Mode, SourceGuard: opts.SourceGuard,
		Switches: len(top.Switches), Hosts: len(top.Hosts), Links: top.NumLinks(), Groups: top.NumGroups(),
		Diameter: top.Diameter(), HopBound: ctl.HopBound(), CoS: ctl.CoS(),
		Address: AddressReport{Bits: ap.Bits, Fields: ap.Fields, Example: ap.HostMAC(len(top.Hosts) - 1).String()},
	}
	r.SwitchLinks = len(top.Links) - len(top.Hosts)
	if top.Spec.Kind == topology.XGFT {
		r.XGFT = xgftReport(top.Spec)
	}
	if avg, ok := top.AvgPathSwitches(); ok {
		r.AvgPathSwitches = &avg
	}
	r.Seconds.Build = time.Since(t0).Seconds()
	if eq := equation1(top, ap.Scheme); eq >= 0 && !opts.Compact {
		r.Equation1 = &eq
	}
	t1 := time.Now()
	st, err := stats(Sample(len(top.Switches), o.SampleSize))
	if err != nil {
		return nil, err
	}
	r.Seconds.Compile = time.Since(t1).Seconds()
	r.Compiled = st.Switches
	r.Rules = st.ByKind
	r.Rules["total"] = st.Total
	r.Ports = st.Ports
	if o.Verify && opts.Mode != controller.VLAN { // VLAN tables: vlan.Verify (vlanReport)
		t2 := time.Now()
		v, err := controller.Verify(ts, controller.VerifyOptions{MaxPairs: o.MaxPairs, Seed: o.Seed})
		if err != nil {
			return nil, err
		}
		r.Verify = v
		r.Seconds.Verify = time.Since(t2).Seconds()
	}
	r.PeakRSSMB = PeakRSSMB()
	return r, nil
}

// Sample spreads n picks evenly over count switches; nil means all.
func Sample(count, n int) []int {
	if n <= 0 || n >= count {
		return nil
	}
	s := make([]int, n)
	for i := range s {
		s[i] = int(int64(i) * int64(count) / int64(n))
	}
	return s
}

// equation1 is R = (G-1) + (S-1) + T for Dragonflies and Flattened
// Butterflies (a group is a row along the first dimension); -1 elsewhere.
func equation1(t *topology.Topology, sc addressing.Scheme) int {
	s := t.Spec
	var T, S int
	switch s.Kind {
	case topology.Dragonfly:
		T, S = s.P, s.A
	case topology.FlatFly:
		T, S = s.T, s.Dims[0]
	default:
		return -1
	}
	switch sc {
	case addressing.PerGroup:
		return (t.NumGroups() - 1) + (S - 1) + T
	case addressing.PerSwitch:
		return (len(t.Switches) - 1) + T
	default:
		return len(t.Hosts)
	}
}

// PeakRSSMB is the process's peak resident memory.
func PeakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) {
	compact := ""
	if r.Compact {
		compact = ", compacted"
	}
	fmt.Fprintf(w, "%s\n", r.Topology)
	fmt.Fprintf(w, "  switches %d   hosts %d   links %d (%d between switches)   groups %d   diameter %d (hop bound %d, %s routing)\n",
		r.Switches, r.Hosts, r.Links, r.SwitchLinks, r.Groups, r.Diameter, r.HopBound, r.Routing)
	if r.AvgPathSwitches != nil {
		fmt.Fprintf(w, "  avg path %.4f switches (seed 002's Avg.H: shortest paths, all ordered host pairs, a host with itself included)\n", *r.AvgPathSwitches)
	}
	if x := r.XGFT; x != nil {
		fmt.Fprintf(w, "  %s: %d compute nodes; switches per level %v (level 1 first); %d paths between nodes under different top switches' subtrees, one per top switch\n",
			x.Name, x.Levels[0], x.Levels[1:], x.TopPaths)
	}
	fields := make([]string, len(r.Address.Fields))
	for i, f := range r.Address.Fields {
		fields[i] = fmt.Sprintf("%s:%d", f.Name, f.Width)
	}
	fmt.Fprintf(w, "  addressing %s%s: %d bits [%s], e.g. %s\n", r.Addressing, compact, r.Address.Bits, strings.Join(fields, " "), r.Address.Example)
	sampled := ""
	if r.Compiled < r.Switches {
		sampled = fmt.Sprintf(" (%d of %d switches sampled)", r.Compiled, r.Switches)
	}
	fmt.Fprintf(w, "  rules per switch%s:        min     mean      max\n", sampled)
	names := make([]string, 0, len(r.Rules))
	for k, s := range r.Rules {
		if s.Max > 0 && k != "total" {
			names = append(names, k)
		}
	}
	order := map[string]int{}
	for i, k := range controller.Kinds() {
		order[k.String()] = i
	}
	sort.Slice(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
	names = append(names, "total")
	for _, k := range names {
		s := r.Rules[k]
		fmt.Fprintf(w, "    %-12s %12d %8.1f %8d\n", k, s.Min, s.Mean, s.Max)
	}
	fmt.Fprintf(w, "    %-12s %12d %8.1f %8d\n", "(ports)", r.Ports.Min, r.Ports.Mean, r.Ports.Max)
	cls := make([]string, len(r.CoS.Classes))
	for i, c := range r.CoS.Classes {
		if c.Level < 0 {
			cls[i] = c.Hop
		} else {
			cls[i] = fmt.Sprintf("%s: %d", c.Hop, c.Level)
		}
	}
	fmt.Fprintf(w, "  CoS levels %d (%s)\n", r.CoS.Levels, strings.Join(cls, "; "))
	if r.Equation1 != nil {
		fmt.Fprintf(w, "  seed 000 Eq. 1 for %s: R = %d routing rules per access switch\n", r.Addressing, *r.Equation1)
	}
	fmt.Fprintf(w, "  time: build %.2fs, compile %.2fs", r.Seconds.Build, r.Seconds.Compile)
	if r.Verify != nil {
		fmt.Fprintf(w, ", verify %.2fs", r.Seconds.Verify)
	}
	fmt.Fprintf(w, "; peak memory %.0f MB; %d CPUs\n", r.PeakRSSMB, runtime.NumCPU())
	if v := r.Verify; v != nil {
		how := "all ordered pairs"
		if v.Sampled {
			how = fmt.Sprintf("random sample (seed %d) of %d ordered pairs", v.Seed, v.PairsTotal)
		}
		status := "OK"
		if v.Failed() {
			status = "FAILED"
		}
		paths := ""
		if v.Paths > v.PairsChecked {
			paths = fmt.Sprintf(" over %d paths (every set of paused ports)", v.Paths)
		}
		guard := "off"
		if r.SourceGuard {
			guard = fmt.Sprintf("%d failures", v.GuardFailures)
		}
		fmt.Fprintf(w, "  verify %s: %d pairs checked%s (%s), %d failures, max %d hops (bound %d); broadcast from %d hosts, %d failures; DMP %d failures; source guard %s\n",
			status, v.PairsChecked, paths, how, v.Failures, v.MaxHops, v.HopBound, v.BroadcastSources, v.BroadcastFailures, v.DMPFailures, guard)
		for _, f := range v.Examples {
			fmt.Fprintf(w, "    %s -> %s: %s\n", f.Src, f.Dst, f.Reason)
		}
		if e := v.Eligible; e != nil {
			fmt.Fprintf(w, "  eligible ports (snoop-based adaptive routing's table): %d lists of up to %d ports, %d choice sequences from the hosts' switches walked, max %d hops, %d failures\n",
				e.Lists, e.Choices, e.Sequences, e.MaxHops, e.Failures)
			if e.Example != "" {
				fmt.Fprintf(w, "    %s\n", e.Example)
			}
		}
	}
	if p := r.Partition; p != nil {
		p.writeText(w)
	}
	if f := r.Flows; f != nil {
		f.writeText(w)
	}
	if v := r.VLAN; v != nil {
		t3 := "no Table 3 row"
		if len(v.LinksOff) > 0 {
			t3 = "around the links off " + strings.Join(v.LinksOff, ", ")
		}
		if v.Table3 != nil {
			verdict := "matches"
			switch {
			case v.VLANs < v.Table3.Value:
				verdict = "fewer here"
			case v.VLANs > v.Table3.Value:
				verdict = "more here"
			}
			row := ""
			if v.Table3.LinkOff {
				row = " with 1 link off"
			}
			t3 = fmt.Sprintf("Table 3%s: %s = %d, %s", row, v.Table3.Formula, v.Table3.Value, verdict)
			if len(v.LinksOff) > 0 {
				t3 = "around the links off " + strings.Join(v.LinksOff, ", ") + "; " + t3
			}
		}
		scope := "in the fabric"
		if v.Method == vlan.Renamed {
			scope = "on the busiest switch"
		}
		method := string(v.Method) + " assignment"
		if v.Torus != "" {
			method += ", torus " + string(v.Torus)
		}
		fmt.Fprintf(w, "  VLANs (%s): %d %s (%s); H = T/V: %d hosts at T = 8,000, %d at 10,000, %d at 12,000; static MAC entries per switch %d / %.1f / %d\n",
			method, v.VLANs, scope, t3, v.HostLimit["8000"], v.HostLimit["10000"], v.HostLimit["12000"], v.MACEntries.Min, v.MACEntries.Mean, v.MACEntries.Max)
		if vr := v.Verify; vr != nil {
			status := "OK"
			if vr.Failures+vr.BroadcastFailures > 0 {
				status = "FAILED"
			}
			fmt.Fprintf(w, "  VLAN verify %s: %d pairs on their paths, %d failures; broadcast from %d hosts, %d failures (fixed: each host exactly once; renamed: the flood dies out), %d duplicate receptions\n",
				status, vr.Pairs, vr.Failures, vr.Broadcasts, vr.BroadcastFailures, vr.Duplicates)
			for _, e := range vr.Examples {
				fmt.Fprintf(w, "    %s\n", e)
			}
		}
	}
}
