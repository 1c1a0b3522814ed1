package power

import (
	"encoding/json"
	"fmt"
)

// Organization is how a switch's forwarding table is organized (seed 000
// §VI-A, Fig. 11): a traditional CAM with one entry per host, or an
// OpenFlow TCAM under one of the addressing schemes.
type Organization string

// The organizations of Fig. 11, in its order.
const (
	CAMFlat   Organization = "cam-flat"   // traditional Ethernet: per-host CAM (the reference)
	Flat      Organization = "flat"       // per-host addressing in a TCAM
	PerSwitch Organization = "per-switch" // 2-level hierarchical routing
	PerGroup  Organization = "per-group"  // 3-level: seed 000 Eq. 1
	Compact   Organization = "compact"    // per-group compacted (ORTC)
)

// Organizations lists them in Fig. 11's order.
func Organizations() []Organization {
	return []Organization{CAMFlat, Flat, PerSwitch, PerGroup, Compact}
}

// ParseOrganization checks an organization name.
func ParseOrganization(s string) (Organization, error) {
	for _, o := range Organizations() {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("unknown organization %q (want cam-flat, flat, per-switch, per-group or compact)", s)
}

// Components is power split as Fig. 11 stacks it, in watts per switch or
// megawatts per network.
type Components struct {
	CPU     float64 `json:"cpu"`
	Ports   float64 `json:"ports"`
	Buffers float64 `json:"buffers"`
	Table   float64 `json:"table"`
	Total   float64 `json:"total"`
}

func (c Components) scale(f float64) Components {
	return Components{CPU: c.CPU * f, Ports: c.Ports * f, Buffers: c.Buffers * f, Table: c.Table * f, Total: c.Total * f}
}

// SwitchW is one switch's power: every one of SwitchPorts ports powered,
// hostPorts of them electrical (to hosts; a network's average), the rest
// optical, each port's buffers at the worst-case packet rate, and a table
// drawing tableW.
func (c Constants) SwitchW(hostPorts, tableW float64) Components {
	p := Components{
		CPU:     c.CPUW,
		Ports:   hostPorts*c.ElectricalPortW + (float64(c.SwitchPorts)-hostPorts)*c.OpticalPortW,
		Buffers: float64(c.SwitchPorts) * c.BufferWPerPort(),
		Table:   tableW,
	}
	p.Total = p.CPU + p.Ports + p.Buffers + p.Table
	return p
}

// TableW is a table of the organization holding entries.
func (c Constants) TableW(o Organization, entries float64) float64 {
	if o == CAMFlat {
		return c.CAMWPerEntry * entries
	}
	return c.TCAMW(entries)
}

// Entries is a table size per switch: one number when every switch has
// it, else the spread over the switches compiled. JSON gives a number, or
// {min, mean, max}.
type Entries struct {
	Min  int
	Mean float64
	Max  int
	// sizes are the compiled switches' own sizes; the table power is
	// their mean, which a measured (non-linear) TCAM curve needs.
	sizes []int
}

// Uniform is the same size on every switch.
func Uniform(n int) Entries { return Entries{Min: n, Mean: float64(n), Max: n} }

// Spread summarizes compiled per-switch sizes.
func Spread(sizes []int) Entries {
	if len(sizes) == 0 {
		return Entries{}
	}
	e := Entries{Min: sizes[0], Max: sizes[0], sizes: sizes}
	sum := 0.0
	for _, n := range sizes {
		e.Min, e.Max = min(e.Min, n), max(e.Max, n)
		sum += float64(n)
	}
	e.Mean = sum / float64(len(sizes))
	return e
}

// Varies reports whether switches differ.
func (e Entries) Varies() bool { return e.Min != e.Max }

// MarshalJSON is a number for uniform tables, else {min, mean, max}.
func (e Entries) MarshalJSON() ([]byte, error) {
	if !e.Varies() {
		return json.Marshal(e.Min)
	}
	return json.Marshal(struct {
		Min  int     `json:"min"`
		Mean float64 `json:"mean"`
		Max  int     `json:"max"`
	}{e.Min, e.Mean, e.Max})
}

// String is "72" or "136…141.8…148".
func (e Entries) String() string {
	if !e.Varies() {
		return fmt.Sprint(e.Min)
	}
	return fmt.Sprintf("%d…%.1f…%d", e.Min, e.Mean, e.Max)
}

// tableW is the mean table power over the switches.
func (c Constants) tableW(o Organization, e Entries) float64 {
	if len(e.sizes) == 0 {
		return c.TableW(o, e.Mean)
	}
	sum := 0.0
	for _, n := range e.sizes {
		sum += c.TableW(o, float64(n))
	}
	return sum / float64(len(e.sizes))
}

// Row is one bar of Fig. 11: a topology under one organization. Scripts
// read its JSON names: they are an interface (TestJSONNames).
type Row struct {
	Topology          string       `json:"topology"`
	Organization      Organization `json:"organization"`
	Switches          int          `json:"switches"`
	Hosts             int          `json:"hosts"`
	EntriesPerSwitch  Entries      `json:"entries_per_switch"`
	SwitchW           Components   `json:"switch_w"`
	NetworkMW         Components   `json:"network_mw"`
	SavingVsReference float64      `json:"saving_vs_reference"`
	// Counts says whose switch and host counts these are: "paper" (seed
	// 000 §VI-A) or "ethfab" (the fabric ethfab builds from Spec).
	Counts string `json:"counts"`
	Spec   string `json:"spec,omitempty"`
	// EntriesFrom says where the table size comes from: "eq1" (seed 000
	// Eq. 1 and its flat and per-switch analogues), "paper", or
	// "compiled" (ethfab's own tables, SwitchesCompiled of them).
	EntriesFrom        string  `json:"entries_from"`
	SwitchesCompiled   int     `json:"switches_compiled,omitempty"`
	SwitchPorts        int     `json:"switch_ports"`
	HostPortsPerSwitch float64 `json:"host_ports_per_switch"`
}

// row prices one network under one organization.
func (c Constants) row(name string, o Organization, switches, hosts int, e Entries) Row {
	hp := float64(hosts) / float64(switches)
	sw := c.SwitchW(hp, c.tableW(o, e))
	return Row{Topology: name, Organization: o, Switches: switches, Hosts: hosts, EntriesPerSwitch: e,
		SwitchW: sw, NetworkMW: sw.scale(float64(switches) / 1e6), SwitchPorts: c.SwitchPorts, HostPortsPerSwitch: hp}
}
