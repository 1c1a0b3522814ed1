package power

import (
	"fmt"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/plan"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/topology"
)

// FabricOptions are `ethfab power --topology`'s.
type FabricOptions struct {
	Topology  topology.Spec
	Constants Constants
	// SwitchPortsSet keeps Constants.SwitchPorts; otherwise every switch
	// is priced with the fabric's largest port count (uniform hardware,
	// every port powered).
	SwitchPortsSet bool
	// Organizations to price (nil: all); the reference, CAM-flat, is
	// always priced.
	Organizations []Organization
	// SampleSwitches compiles this many evenly spread switches per
	// organization (0: every switch, except flat and per-switch tables of
	// large fabrics, see sampleFor).
	SampleSwitches int
	Report         steps.Reporter
}

// Fabric prices any fabric ethfab can plan from its own compiled tables
// and counts; the reference is the same fabric's CAM-flat.
func Fabric(o FabricOptions) (*Report, error) {
	top, err := topology.Build(o.Topology)
	if err != nil {
		return nil, err
	}
	c := o.Constants
	radix := 0
	for i := range top.Switches {
		radix = max(radix, len(top.Switches[i].Ports))
	}
	if !o.SwitchPortsSet {
		c.SwitchPorts = radix
	}
	if c.SwitchPorts < radix {
		return nil, fmt.Errorf("switch_ports %d: %s has switches with %d ports", c.SwitchPorts, o.Topology, radix)
	}
	orgs := o.Organizations
	if orgs == nil {
		orgs = Organizations()
	}
	if orgs[0] != CAMFlat {
		orgs = append([]Organization{CAMFlat}, orgs...)
	}
	r := &Report{Mode: "topology", Constants: o.Constants.Doc()}
	for i := range r.Constants {
		if d := &r.Constants[i]; d.Name == "switch_ports" && !o.SwitchPortsSet {
			d.Value, d.Source = float64(c.SwitchPorts), "[A] the fabric's largest switch, every port powered"
		}
	}
	var flat *Entries // CAM-flat and flat are the same table
	for _, org := range orgs {
		e := flat
		if e == nil || (org != CAMFlat && org != Flat) {
			sch, compact := schemeOf(org)
			sw := sample(len(top.Switches), sampleFor(top, org, o.SampleSwitches))
			n := len(sw)
			if sw == nil {
				n = len(top.Switches)
			}
			steps.Printf(steps.Or(o.Report), "compiling %s tables of %s (%d switches)", org, o.Topology, n)
			sizes, err := compiledEntries(top, sch, compact, sw)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.Topology, org, err)
			}
			s := Spread(sizes)
			e = &s
			if org == CAMFlat || org == Flat {
				flat = e
			}
		}
		row := c.row(o.Topology.String(), org, len(top.Switches), len(top.Hosts), *e)
		row.Counts, row.Spec, row.EntriesFrom, row.SwitchesCompiled = "ethfab", o.Topology.String(), "compiled", len(e.sizes)
		r.Rows = append(r.Rows, row)
	}
	r.setReference(r.Rows[0])
	r.Assumptions = fabricAssumptions(c, radix, o.SwitchPortsSet)
	return r, nil
}

func schemeOf(o Organization) (addressing.Scheme, bool) {
	switch o {
	case PerSwitch:
		return addressing.PerSwitch, false
	case PerGroup:
		return addressing.PerGroup, false
	case Compact:
		return addressing.PerGroup, true
	}
	return addressing.Flat, false
}

// sampleBudget bounds the rules compiled per organization when no sample
// is asked for: a flat table of a 300,000-host fabric is 300,000 rules per
// switch, and every switch's is alike (one rule per host or per switch).
const (
	sampleBudget = 20_000_000
	largeSample  = 64
)

func sampleFor(top *topology.Topology, o Organization, asked int) int {
	if asked > 0 {
		return asked
	}
	per := 0
	switch o {
	case CAMFlat, Flat:
		per = len(top.Hosts)
	case PerSwitch:
		per = len(top.Switches)
	}
	if per*len(top.Switches) > sampleBudget {
		return largeSample
	}
	return 0
}

// sample is plan's even spread of n switches; nil means all.
func sample(count, n int) []int { return plan.Sample(count, n) }

// compiledEntries compiles the given switches' minimal-routing tables
// and counts their routing entries.
func compiledEntries(top *topology.Topology, sch addressing.Scheme, compact bool, switches []int) ([]int, error) {
	ap, err := addressing.New(top, sch, compact)
	if err != nil {
		return nil, err
	}
	ctl, err := controller.New(ap, controller.Options{Mode: controller.Minimal, Compact: compact})
	if err != nil {
		return nil, err
	}
	return ctl.RoutingEntries(switches)
}

func fabricAssumptions(c Constants, radix int, portsSet bool) []string {
	ports := fmt.Sprintf("every switch has %d ports, the fabric's largest switch (uniform hardware), all powered", c.SwitchPorts)
	if portsSet {
		ports = fmt.Sprintf("every switch has %d ports (constants file; the fabric's largest uses %d), all powered", c.SwitchPorts, radix)
	}
	return append([]string{
		"switch and host counts are ethfab's own fabric; the reference is the same fabric's CAM-flat",
		ports}, append(switchAssumptions(c),
		"table entries are ethfab's compiled minimal-routing tables (routing + Clos uplink rules); flat and per-switch tables of large fabrics are sampled (switches_compiled)",
		"table power is linear in entries unless a TCAM curve is given; the CAM constant is the one calibrated on the paper's Folded-Clos")...)
}
