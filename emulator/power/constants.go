// Package power is the network power model of seed 000 §VI-A (Fig. 11):
// per switch a fixed CPU and logic, SerDes ports (optical between switches,
// electrical to hosts), buffer memories read and written at the worst-case
// 64-byte packet rate, and a forwarding table whose power grows with its
// entries — TCAM for OpenFlow organizations, CAM for traditional flat
// Ethernet. It also holds seed 002's measured commodity-switch power
// (Table 2) for link on/off runs. Pure Go: no kernel, no root.
package power

import "fmt"

// Constants are the model's inputs. Every one has a source (Doc); a
// constants file overrides any of them by its JSON name.
type Constants struct {
	CPUW            float64 `json:"cpu_w"`
	OpticalPortW    float64 `json:"optical_port_w"`
	ElectricalPortW float64 `json:"electrical_port_w"`
	SwitchPorts     int     `json:"switch_ports"`
	LinkGbps        float64 `json:"link_gbps"`
	FrameBytes      float64 `json:"frame_bytes"`
	// PPSOverhead is the preamble and inter-frame gap on the wire per
	// frame (20 bytes); 0 counts 64-byte frames back to back, 78.125 Mpps
	// at 40 Gb/s instead of 59.52 (a sensitivity of the headline).
	PPSOverhead   float64 `json:"pps_overhead"`
	BufferReadNJ  float64 `json:"buffer_read_nj"`
	BufferWriteNJ float64 `json:"buffer_write_nj"`
	TCAMWPerEntry float64 `json:"tcam_w_per_entry"`
	// CAMWPerEntry 0 means calibrated from CompactionShare (Calibrate).
	CAMWPerEntry    float64 `json:"cam_w_per_entry"`
	CompactionShare float64 `json:"compaction_share"`
	// TCAMCurve, when set, replaces TCAMWPerEntry by a measured table of
	// watts against entries (a --tcam-model CSV).
	TCAMCurve *Curve `json:"tcam_curve,omitempty"`
}

// The paper's numbers (seed 000 §VI-A): the headline the model is checked
// against and the figures its two calibrations start from.
const (
	// PaperSaving is "reduces 54.1% of the original power in the
	// reference CAM-flat Folded-Clos, 17.0% from TCAM compaction and
	// 37.1% from topology changes".
	PaperSaving           = 0.541
	PaperCompactionShare  = 0.170
	PaperTopologyShare    = 0.371
	PaperFlatTCAMPerSwW   = 900  // "more than 900 W per switch"
	PaperFlatTCAMOverallW = 15e6 // "at least 15 MW overall"
	// PaperClosCompactEntries is the Folded-Clos's compact table: "the
	// lower limit is reached", the port count of its 72-port switches.
	PaperClosCompactEntries = 72
)

// Default returns the constants the paper gives or implies (seed 000 §VI-A,
// sources in Doc) with the CAM calibrated.
func Default() Constants {
	return uncalibrated().Calibrate()
}

// uncalibrated is Default before Calibrate, what a constants file edits.
func uncalibrated() Constants {
	return Constants{
		CPUW:            30,
		OpticalPortW:    0.6,
		ElectricalPortW: 0.48,
		SwitchPorts:     72,
		LinkGbps:        40,
		FrameBytes:      64,
		PPSOverhead:     20,
		BufferReadNJ:    4.5048,
		BufferWriteNJ:   4.4993,
		// 900 W / 300,024 entries (the Dragonfly's, the smallest flat
		// table) = 2.9998 mW, rounded: every flat TCAM then draws more
		// than 900 W, as the paper says.
		TCAMWPerEntry:   3.0e-3,
		CompactionShare: PaperCompactionShare,
	}
}

// PacketRate is the worst-case packet rate per port: 64-byte frames back to
// back, each with its 20 bytes of preamble and inter-frame gap.
func (c Constants) PacketRate() float64 {
	return c.LinkGbps * 1e9 / ((c.FrameBytes + c.PPSOverhead) * 8)
}

// BufferWPerPort is every packet written to and read from the buffer
// memories once at PacketRate.
func (c Constants) BufferWPerPort() float64 {
	return c.PacketRate() * (c.BufferReadNJ + c.BufferWriteNJ) * 1e-9
}

// TCAMW is the table power of a TCAM holding entries: the measured curve
// when given, else linear in entries (the matchlines, seed 000 §II).
func (c Constants) TCAMW(entries float64) float64 {
	if c.TCAMCurve != nil {
		return c.TCAMCurve.Watts(entries)
	}
	return c.TCAMWPerEntry * entries
}

// Calibrate sets CAMWPerEntry, when 0, so that compacting the paper's
// Folded-Clos (CAM-flat → TCAM-compact, same 29,484 switches) saves
// CompactionShare of its power, the only reading of the 17.0 % under
// which the decomposition adds up (compaction first, then the topology:
// see decompose):
//
//	(C − T_c) / (B_c + C) = share  ⇒  C = (share·B_c + T_c) / (1 − share)
//
// with B_c the Clos switch's non-table power and T_c its compact TCAM.
func (c Constants) Calibrate() Constants {
	if c.CAMWPerEntry != 0 {
		return c
	}
	clos := PaperNetworks()[0]
	b := c.SwitchW(clos.hostPortsPerSwitch(), 0).Total
	t := c.TCAMW(PaperClosCompactEntries)
	camW := (c.CompactionShare*b + t) / (1 - c.CompactionShare)
	c.CAMWPerEntry = camW / float64(clos.Hosts)
	return c
}

// camCalibrated reports whether CAMWPerEntry is Calibrate's, not a
// value the user gave.
func (c Constants) camCalibrated() bool {
	uncal := c
	uncal.CAMWPerEntry = 0
	return uncal.Calibrate().CAMWPerEntry == c.CAMWPerEntry
}

// Validate rejects constants the model cannot use, by the ranges a
// constants file is held to (constantFields); the calibrated CAM too.
func (c Constants) Validate() error {
	for _, f := range constantFields {
		if msg := f.check(f.get(c)); msg != "" {
			return fmt.Errorf("%s = %v: %s", f.name, f.get(c), msg)
		}
	}
	return nil
}

// ConstantDoc is one constant as printed with every result.
type ConstantDoc struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Source string  `json:"source"`
}

// Doc lists the constants with their sources ([P] the paper, [X] derived,
// [A] assumed), the derived rates included.
func (c Constants) Doc() []ConstantDoc {
	d := Default()
	src := func(v, def float64, s string) string {
		if v != def {
			return "constants file (default: " + s + ")"
		}
		return s
	}
	tcam := src(c.TCAMWPerEntry, d.TCAMWPerEntry, "[X] 900 W / 300,024 entries (DF flat, the smallest): \"more than 900 W per switch\"; linear in entries (§II)")
	if c.TCAMCurve != nil {
		tcam = "unused: TCAM curve " + c.TCAMCurve.File + " (" + fmt.Sprint(len(c.TCAMCurve.Points)) + " points, linear between them)"
	}
	cam := "[X] calibrated: the paper's Clos CAM-flat → Clos TCAM-compact (72 entries) saves compaction_share"
	if !c.camCalibrated() {
		cam = "constants file"
	}
	return []ConstantDoc{
		{"cpu_w", c.CPUW, "W", src(c.CPUW, d.CPUW, "[P] \"A fixed value of 30 Watts has been considered for the CPU and logic\"")},
		{"optical_port_w", c.OpticalPortW, "W", src(c.OpticalPortW, d.OpticalPortW, "[P] \"Optical ports consume ≈ 0.6 Watts (4 lanes of 150 mW each)\"")},
		{"electrical_port_w", c.ElectricalPortW, "W", src(c.ElectricalPortW, d.ElectricalPortW, "[P] host ports \"20% less\" than optical")},
		{"switch_ports", float64(c.SwitchPorts), "ports", src(float64(c.SwitchPorts), float64(d.SwitchPorts), "[P] \"72 port Ethernet switches\"; [A] all powered (spare ports carry extra links)")},
		{"link_gbps", c.LinkGbps, "Gb/s", src(c.LinkGbps, d.LinkGbps, "[P] \"40 Gbps ports\"")},
		{"frame_bytes", c.FrameBytes, "B", src(c.FrameBytes, d.FrameBytes, "[P] \"worst-case 64byte packets\"")},
		{"pps_overhead", c.PPSOverhead, "B", src(c.PPSOverhead, d.PPSOverhead, "[A] preamble + inter-frame gap per frame")},
		{"packet_rate", c.PacketRate(), "packets/s per port", "[X] link_gbps / ((frame_bytes + pps_overhead) · 8)"},
		{"buffer_read_nj", c.BufferReadNJ, "nJ", src(c.BufferReadNJ, d.BufferReadNJ, "[P] \"reading … a 64-byte packet … 4.5048 nJ\"")},
		{"buffer_write_nj", c.BufferWriteNJ, "nJ", src(c.BufferWriteNJ, d.BufferWriteNJ, "[P] \"… and writing … 4.4993 nJ\"")},
		{"buffer_w_per_port", c.BufferWPerPort(), "W", "[X] packet_rate · (read + write)"},
		{"tcam_w_per_entry", c.TCAMWPerEntry, "W", tcam},
		{"compaction_share", c.CompactionShare, "fraction", src(c.CompactionShare, d.CompactionShare, "[P] \"17.0% from TCAM compaction\" (calibration input)")},
		{"cam_w_per_entry", c.CAMWPerEntry, "W", cam},
	}
}
