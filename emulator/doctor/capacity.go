package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// CapacityFileEnv overrides where the measured capacity is kept.
const CapacityFileEnv = "ETHFAB_CAPACITY_FILE"

// DefaultCapacityFile is where bench/capacity.py --save records it.
const DefaultCapacityFile = "/var/lib/ethfab/capacity.json"

// Capacity is this machine's emulation capacity on one datapath as
// bench/capacity.py measured it: the switch-hop frames per second (frames
// forwarded by every switch, summed) that a run carried while keeping its
// fidelity verdict. A datapath's cost is per frame and per switch, so this
// one number predicts, across sizes and patterns, whether a run will keep
// up.
type Capacity struct {
	Datapath string `json:"datapath,omitempty"` // netdev (Open vSwitch's userspace), system, ebpf
	Measured string `json:"measured"`           // UTC time of the benchmark
	Command  string `json:"command"`
	// SwitchHopFPS is the largest faithful rate over every case.
	SwitchHopFPS float64 `json:"switch_hop_fps"`
	// ByCase is the faithful rate per case, keyed "df(P,A,H) ROUTING
	// PATTERN"; conditional routing costs more per frame, so the run
	// warning uses its routing's cases.
	ByCase map[string]float64 `json:"by_case"`
}

// Capacities are the capacities measured here, by datapath, as the
// capacity file keeps them: {"datapaths": {"netdev": {...}, "ebpf":
// {...}}}. A file of one Capacity (before the eBPF datapath) counts for
// Open vSwitch's datapaths (For).
type Capacities struct {
	File       string               `json:"file"`
	ByDatapath map[string]*Capacity `json:"datapaths"`
}

// For is the capacity measured on a datapath, or nil. A capacity the
// file does not label (one from before the eBPF datapath, measured with
// ovs.datapath auto) stands for either of Open vSwitch's datapaths.
func (c *Capacities) For(datapath string) *Capacity {
	if c == nil {
		return nil
	}
	if v, ok := c.ByDatapath[datapath]; ok {
		return v
	}
	if datapath == DatapathNetdev || datapath == DatapathSystem {
		return c.ByDatapath[unlabelled]
	}
	return nil
}

// unlabelled keys a capacity file's one measurement that names no
// datapath.
const unlabelled = "auto"

// CapacityFile is where the capacity is read and written.
func CapacityFile() string {
	if f := os.Getenv(CapacityFileEnv); f != "" {
		return f
	}
	return DefaultCapacityFile
}

// LoadCapacity reads the recorded capacities; nil and no error when the
// benchmark never ran here.
func LoadCapacity() (*Capacities, error) {
	f := CapacityFile()
	b, err := os.ReadFile(f)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	var doc struct {
		Datapaths map[string]*Capacity `json:"datapaths"`
		Capacity
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("capacity: %s: %w", f, err)
	}
	c := &Capacities{File: f, ByDatapath: doc.Datapaths}
	if c.ByDatapath == nil {
		one := doc.Capacity
		if one.Datapath == "" {
			one.Datapath = unlabelled
		}
		c.ByDatapath = map[string]*Capacity{one.Datapath: &one}
	}
	for dp, v := range c.ByDatapath {
		if v == nil || v.SwitchHopFPS < 0 {
			return nil, fmt.Errorf("capacity: %s: datapath %q: missing or negative switch_hop_fps", f, dp)
		}
		v.Datapath = dp
	}
	return c, nil
}

// ForRouting is the capacity measured for one routing mode: the largest
// faithful rate of that mode's cases, or the overall figure when the
// benchmark ran none of them.
func (c *Capacity) ForRouting(mode string) float64 {
	if v, ok := c.measured(mode); ok {
		return v
	}
	return c.SwitchHopFPS
}

// measured is the largest faithful rate of one routing mode's cases, and
// whether the benchmark ran any.
func (c *Capacity) measured(mode string) (float64, bool) {
	best, ran := 0.0, false
	for k, v := range c.ByCase {
		if f := strings.Fields(k); len(f) >= 2 && f[1] == mode {
			best, ran = max(best, v), true
		}
	}
	return best, ran
}

// capacityNote is doctor's line about the capacity.
func capacityNote(c *Capacities, loadErr string) string {
	switch {
	case loadErr != "":
		return "capacity  " + loadErr
	case c == nil || len(c.ByDatapath) == 0:
		return "capacity  not measured on this machine: run bench/capacity.py --save (as root, machine otherwise idle) so `ethfab run` can warn before a phase asks for more than the machine keeps faithful"
	}
	dps := make([]string, 0, len(c.ByDatapath))
	for dp := range c.ByDatapath {
		dps = append(dps, dp)
	}
	sort.Strings(dps)
	var lines []string
	for _, dp := range dps {
		v := c.ByDatapath[dp]
		var parts []string
		for _, m := range []string{"minimal", "valiant", "conditional"} {
			if f, ok := v.measured(m); ok {
				parts = append(parts, fmt.Sprintf("%s %.0f", m, f))
			}
		}
		name := dp + " datapath"
		if dp == unlabelled {
			name = "Open vSwitch (ovs.datapath auto)"
		}
		lines = append(lines, fmt.Sprintf("capacity  %s: %.0f switch-hop frames/s kept faithful (%s; measured %s by `%s`, %s)",
			name, v.SwitchHopFPS, strings.Join(parts, ", "), v.Measured, v.Command, c.File))
	}
	return strings.Join(lines, "\n")
}
