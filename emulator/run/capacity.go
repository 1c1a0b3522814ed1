package run

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/doctor"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/hostagent/traffic"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/scenario"
	pat "github.com/ethfab/ethfab/traffic"
)

// destinationsPerHost is how many of each host's destinations the
// preflight draws from the pattern to average their path lengths.
const destinationsPerHost = 8

// capacityWarnings compares, before any traffic runs, each traffic
// point's offered work — frames per second times the switches each crosses
// on its default path, from the controller's own tables — with the
// switch-hop rate this machine kept faithful on the lab's datapath
// (bench/capacity.py). A point above it will most likely fail the
// fidelity verdict, so the user hears it before the run and is told the
// load or rate that would fit, and whether the eBPF datapath would.
func capacityWarnings(sc *scenario.Scenario, caps *doctor.Capacities, dp string, comp *fabric.Compiled) ([]string, error) {
	c := caps.For(dp)
	if c == nil {
		return nil, nil
	}
	limit := c.ForRouting(string(sc.Routing.Mode))
	if limit <= 0 {
		return nil, nil
	}
	ebpfLimit := 0.0
	if e := caps.For(datapath.Name); e != nil && dp != datapath.Name {
		ebpfLimit = e.ForRouting(string(sc.Routing.Mode))
	}
	ts := controller.TablesOf(comp.Ctl, comp.Tables)
	bps := float64(sc.Links[scenario.HostLinks].Rate)
	var warns []string
	for _, ph := range sc.Phases {
		if ph.Kind != scenario.PhaseTraffic {
			continue
		}
		t := ph.Traffic
		p, err := pat.New(t.PatternSpec(), comp.Top, t.Seed, pat.Options{})
		if err != nil {
			return nil, fmt.Errorf("pattern %s: %w", t.PatternString(), err)
		}
		crossed, err := meanSwitchesCrossed(ts, p, t.Seed)
		if err != nil {
			return nil, fmt.Errorf("phase %s: %w", ph.Name, err)
		}
		frame := t.Frame
		if frame == 0 {
			frame = traffic.DefaultFrameSize
		}
		for _, load := range t.Loads {
			fps := float64(len(comp.Top.Hosts)) * load * bps / (8 * float64(frame))
			work := fps * crossed
			if work <= limit {
				continue
			}
			fit := limit / work
			w := fmt.Sprintf(
				"phase %s at load %g offers about %.0f switch-hop frames/s (%d hosts × %g × %s in %d-byte frames, %.1f switches each), "+
					"above the %.0f/s this machine kept faithful for %s routing on the %s datapath (%s, measured %s): expect the fidelity verdict to fail; "+
					"load %g at this rate, or links at %s at this load, would fit",
				ph.Name, load, work, len(comp.Top.Hosts), load, rate.Format(uint64(bps)), frame, crossed,
				limit, sc.Routing.Mode, dp, caps.File, c.Measured, twoDigits(load*fit), rate.Format(uint64(twoDigits(bps*fit))))
			if work <= ebpfLimit {
				w += fmt.Sprintf(", and so would ovs.datapath: ebpf as it is (%.0f/s kept faithful)", ebpfLimit)
			}
			warns = append(warns, w)
		}
	}
	return warns, nil
}

// meanSwitchesCrossed averages the default-path length over destinations
// drawn from the pattern for every host.
func meanSwitchesCrossed(ts *controller.Tables, p pat.Pattern, seed int64) (float64, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	sum, n := 0, 0
	for src := range p.Hosts() {
		for k := range destinationsPerHost {
			d := p.Dest(src, time.Duration(k)*time.Millisecond, rng)
			if d == pat.Silent || d == src {
				continue
			}
			c, err := controller.SwitchesCrossed(ts, src, d)
			if err != nil {
				return 0, err
			}
			sum += c
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return float64(sum) / float64(n), nil
}

// twoDigits rounds v down to two significant digits, so a suggested load
// or rate stays on the safe side and reads well (4.0253e6 -> 4.0e6).
func twoDigits(v float64) float64 {
	if v <= 0 {
		return 0
	}
	e := math.Pow(10, math.Floor(math.Log10(v))-1)
	return math.Floor(v/e) * e
}
