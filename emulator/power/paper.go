package power

import (
	"fmt"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/topology"
)

// PaperNetwork is one of seed 000 §VI-A's ≈300,000-host networks with the
// paper's own counts, and Eq. 1's terms for its access switches.
type PaperNetwork struct {
	Name     string
	Spec     topology.Spec // what ethfab builds for it
	Switches int           // [P]
	Hosts    int           // [P]
	// Eq. 1, R = (G−1) + (S−1) + T: groups, switches per group, hosts per
	// access switch.
	G, S, T int
	// AccessSwitches are the switches with hosts: per-switch addressing
	// routes to each of them (S_all).
	AccessSwitches int
	// CompactFromPaper: ethfab does not build this network as the paper
	// counts it, so its compact table is the paper's (the port count).
	CompactFromPaper bool
}

// PaperNetworks are the three networks of Fig. 11, the reference first.
//
// The Folded-Clos is "4-stage … 'pods' with 36 switches in the first and
// second levels and 1,296 hosts … replicated 6.5 times to reach 29,484
// switches and 303,264 hosts": 234 pods (16,848 pod switches, 8,424 of
// them edge), 8,424 stage-3 and 4,212 stage-4 switches, every port used.
// ethfab's clos:k=72,levels=4,pods=234 keeps one plane per stage-3
// position and builds 31,104, so the Clos rows use the paper's counts.
// The FB ("15 × 15 × 15 × 6 … 20,250 switches and 303,750 hosts") and the
// DF ("463 groups of 36 switches and 648 hosts … 16,668 switches and
// 300,024 hosts") are exactly what ethfab builds.
func PaperNetworks() []PaperNetwork {
	return []PaperNetwork{
		{Name: "Folded-Clos", Spec: topology.Spec{Kind: topology.Clos, K: 72, Levels: 4, Pods: 234},
			Switches: 29_484, Hosts: 303_264, G: 234, S: 36, T: 36, AccessSwitches: 8_424, CompactFromPaper: true},
		{Name: "4D FB", Spec: topology.Spec{Kind: topology.FlatFly, Dims: []int{15, 15, 15, 6}, T: 15},
			Switches: 20_250, Hosts: 303_750, G: 1_350, S: 15, T: 15, AccessSwitches: 20_250},
		{Name: "Dragonfly", Spec: topology.Spec{Kind: topology.Dragonfly, P: 18, A: 36, H: 18, G: 463},
			Switches: 16_668, Hosts: 300_024, G: 463, S: 36, T: 18, AccessSwitches: 16_668},
	}
}

func (n PaperNetwork) hostPortsPerSwitch() float64 { return float64(n.Hosts) / float64(n.Switches) }

// portsUsed is the ports a switch of the network needs: the Clos uses all
// k of every switch, the FB T + Σ(k_i − 1), the DF p + (a − 1) + h.
func (n PaperNetwork) portsUsed() int {
	s := n.Spec
	switch s.Kind {
	case topology.FlatFly:
		used := s.T
		for _, k := range s.Dims {
			used += k - 1
		}
		return used
	case topology.Dragonfly:
		return s.P + (s.A - 1) + s.H
	}
	return s.K
}

// Eq1Entries is the routing entries of an access switch as Eq. 1 counts
// them: flat one per host, per-switch one per other access switch plus
// its own hosts, per-group (G−1) + (S−1) + T. Transit switches of a Clos
// need about as many (every switch holds an access switch's table, an
// assumption the report prints) and are charged the same.
func (n PaperNetwork) Eq1Entries(o Organization) (int, error) {
	switch o {
	case CAMFlat, Flat:
		return n.Hosts, nil
	case PerSwitch:
		return (n.AccessSwitches - 1) + n.T, nil
	case PerGroup:
		return (n.G - 1) + (n.S - 1) + n.T, nil
	}
	return 0, fmt.Errorf("%s: Eq. 1 does not count %s tables", n.Name, o)
}

// entries is the table of an organization and where its size comes
// from: Eq. 1, the paper (the Clos's compact port count), or ethfab's
// compiled compact tables.
func (n PaperNetwork) entries(o Organization, compiled Entries) (Entries, string, error) {
	switch {
	case o == Compact && n.CompactFromPaper:
		return Uniform(PaperClosCompactEntries), "paper", nil
	case o == Compact:
		return compiled, "compiled", nil
	}
	cnt, err := n.Eq1Entries(o)
	return Uniform(cnt), "eq1", err
}

// PaperOptions select how the paper run gets its compact tables.
type PaperOptions struct {
	Constants Constants
	// SampleSwitches compiles only this many evenly spread switches per
	// network for the compact tables (0: every switch). Tests use a sample.
	SampleSwitches int
	// Report, if set, hears of each compilation.
	Report steps.Reporter
}

// Paper reproduces Fig. 11: the three networks × five organizations with
// the paper's counts, the reference Clos CAM-flat, and the decomposition
// of the DF's saving into compaction and topology.
func Paper(o PaperOptions) (*Report, error) {
	c := o.Constants
	for _, n := range PaperNetworks() {
		if u := n.portsUsed(); c.SwitchPorts < u {
			return nil, fmt.Errorf("switch_ports %d: the paper's %s needs %d ports per switch", c.SwitchPorts, n.Name, u)
		}
	}
	r := &Report{Mode: "paper", Constants: c.Doc(), Claims: &Claims{Total: PaperSaving, Compaction: PaperCompactionShare, Topology: PaperTopologyShare}}
	var notes []string
	for _, n := range PaperNetworks() {
		compiled, err := compileCompact(n, o)
		if err != nil {
			return nil, err
		}
		for _, org := range Organizations() {
			e, from, err := n.entries(org, compiled)
			if err != nil {
				return nil, err
			}
			row := c.row(n.Name, org, n.Switches, n.Hosts, e)
			row.Counts, row.Spec, row.EntriesFrom = "paper", n.Spec.String(), from
			if from == "compiled" {
				row.SwitchesCompiled = len(compiled.sizes)
			}
			r.Rows = append(r.Rows, row)
		}
		if n.CompactFromPaper {
			notes = append(notes, fmt.Sprintf("ethfab's own compact tables for %s (%d switches) hold %s entries (routing + uplink); "+
				"the paper's Clos compacts to its port count, 72, the calibration input", n.Spec, len(compiled.sizes), compiled))
		}
	}
	r.setReference(r.Rows[0])
	clos, df := r.Find("Folded-Clos", CAMFlat), r.Find("Dragonfly", Compact)
	closCompact := r.Find("Folded-Clos", Compact)
	r.Decomposition = decompose(clos, closCompact, df)
	r.Assumptions = append(paperAssumptions(c), notes...)
	r.Assumptions = append(r.Assumptions, r.sensitivities(c)...)
	return r, nil
}

// compileCompact is ethfab's compiled compact (per-group, ORTC) routing
// entries of the network's switches.
func compileCompact(n PaperNetwork, o PaperOptions) (Entries, error) {
	steps.Printf(steps.Or(o.Report), "compiling compact tables of %s", n.Spec)
	top, err := topology.Build(n.Spec)
	if err != nil {
		return Entries{}, err
	}
	sizes, err := compiledEntries(top, addressing.PerGroup, true, sample(len(top.Switches), o.SampleSwitches))
	if err != nil {
		return Entries{}, fmt.Errorf("%s: %w", n.Spec, err)
	}
	return Spread(sizes), nil
}

// decompose splits the saving of the best (DF compact) against the
// reference (Clos CAM-flat) in the one order that adds up (the other,
// topology first, would need a DF switch drawing more than a Clos switch
// with the same CAM, and it draws less):
// compaction first on the reference topology, then the topology change.
func decompose(ref, refCompact, best *Row) *Decomposition {
	total := 1 - best.NetworkMW.Total/ref.NetworkMW.Total
	compaction := 1 - refCompact.NetworkMW.Total/ref.NetworkMW.Total
	return &Decomposition{Total: total, Compaction: compaction, Topology: total - compaction,
		From: ref.Topology + " " + string(ref.Organization), Via: refCompact.Topology + " " + string(refCompact.Organization),
		To: best.Topology + " " + string(best.Organization)}
}

func paperAssumptions(c Constants) []string {
	return append([]string{
		"switch and host counts are the paper's (Folded-Clos 29,484 switches; ethfab's clos:k=72,levels=4,pods=234 builds 31,104)",
		fmt.Sprintf("every port of every switch is powered (%d; spare ports carry extra links, as the paper says)", c.SwitchPorts)},
		append(switchAssumptions(c),
			"table power is linear in entries (TCAM: the Agrawal–Sherwood tool is not reproduced, one constant from \"more than 900 W\"; CAM: calibrated on the 17.0 %) unless a TCAM curve is given; entry width is the same in every organization (OpenFlow 1.5, > 1,000 bits)",
			"every switch holds an access switch's table (Eq. 1; transit switches of a Clos need about as many)",
			"compact tables: ethfab's ORTC tables compiled for the networks ethfab builds as the paper counts them (FB, DF): the FB reaches its port count, the DF lies between it and Eq. 1, as the paper says; the paper's port count (72) for the Folded-Clos",
			"the 54.1 % decomposes only as compaction first (Clos CAM-flat → Clos compact), then topology (→ DF compact); topology first would need a DF switch drawing 11 % more than a Clos switch with the same CAM")...)
}

// switchAssumptions hold in both modes.
func switchAssumptions(c Constants) []string {
	return []string{
		"host ports are electrical, the rest optical; hosts per switch is the network's average (hosts / switches)",
		fmt.Sprintf("worst-case packet rate %.2f Mpps per port: %g-byte frames plus %g bytes of preamble and inter-frame gap", c.PacketRate()/1e6, c.FrameBytes, c.PPSOverhead),
		"every packet is written to and read from the buffer memories once",
	}
}

// sensitivities recompute the headline under the open choices (compact DF
// tables at the port count, only used ports powered, electrical local
// links, no preamble and gap)
// so the reader sees how far each open choice moves it.
func (r *Report) sensitivities(c Constants) []string {
	nets := PaperNetworks()
	clos, df := nets[0], nets[2]
	entries := r.Find("Dragonfly", Compact).EntriesPerSwitch
	// saving is the DF compact against the Clos CAM-flat, the reference
	// priced with ref and the DF with dfc, dfHost electrical ports each.
	saving := func(ref, dfc Constants, dfHost float64, dfEntries Entries) float64 {
		refW := ref.SwitchW(clos.hostPortsPerSwitch(), ref.TableW(CAMFlat, float64(clos.Hosts))).Total * float64(clos.Switches)
		return 1 - dfc.SwitchW(dfHost, dfc.tableW(Compact, dfEntries)).Total*float64(df.Switches)/refW
	}
	hp := df.hostPortsPerSwitch()
	ports71 := c
	ports71.SwitchPorts = df.portsUsed()
	noGap := c
	noGap.PPSOverhead = 0
	if c.camCalibrated() {
		noGap.CAMWPerEntry = 0 // calibrate the variant too
		noGap = noGap.Calibrate()
	}
	return []string{
		fmt.Sprintf("sensitivity: DF compact at the port count (72 entries) instead of ethfab's %s: total saving %.1f %%",
			entries, 100*saving(c, c, hp, Uniform(72))),
		fmt.Sprintf("sensitivity: DF switches with their %d used ports powered (no spare): total saving %.1f %%",
			ports71.SwitchPorts, 100*saving(c, ports71, hp, entries)),
		fmt.Sprintf("sensitivity: DF local (intra-group) links electrical too: total saving %.1f %%", 100*saving(c, c, hp+float64(df.S-1), entries)),
		fmt.Sprintf("sensitivity: packet rate without preamble and gap (pps_overhead 0, %.3f Mpps): total saving %.1f %%",
			noGap.PacketRate()/1e6, 100*saving(noGap, noGap, hp, entries)),
	}
}
