package measure

import (
	"slices"

	"github.com/ethfab/ethfab/results"
)

// Merge is one point's report from the reports of the machines that ran a
// part of the fabric each (a lab across machines), each sampled on its
// machine over the same window: counts add up; CPU is each machine's, so
// the busiest machine's CPUBusy and softirq and the busiest thread of
// any are what the verdict judges; link ends, ports and drops are each
// machine's own. The timeline is left out: each machine's bins start at
// its own sample. machines names each report's machine, which prefixes
// its threads' processes.
func Merge(machines []string, rs []*Report) *Report {
	out := &Report{RulePackets: map[string]uint64{}, RuleBytes: map[string]uint64{}, CPUBusy: -1}
	for k, r := range rs {
		if out.Start.IsZero() || r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		out.Duration = max(out.Duration, r.Duration)
		out.CPUBusy = max(out.CPUBusy, r.CPUBusy)
		if r.CPU != nil {
			if out.CPU == nil {
				out.CPU = &results.CPUSplit{}
			}
			c := out.CPU
			c.Vswitchd += r.CPU.Vswitchd
			c.Ethfab += r.CPU.Ethfab
			c.Softirq = max(c.Softirq, r.CPU.Softirq)
			if r.CPU.Busiest.Cores > c.Busiest.Cores {
				c.Busiest = r.CPU.Busiest
				c.Busiest.Process = machines[k] + " " + c.Busiest.Process
			}
			for _, t := range r.CPU.Threads {
				t.Process = machines[k] + " " + t.Process
				c.Threads = append(c.Threads, t)
			}
		}
		out.SwitchHopFPS += r.SwitchHopFPS
		for k, v := range r.RulePackets {
			out.RulePackets[k] += v
		}
		for k, v := range r.RuleBytes {
			out.RuleBytes[k] += v
		}
		out.InjectedFrames += r.InjectedFrames
		out.NonminimalFrames += r.NonminimalFrames
		d := &out.Drops
		d.Queue += r.Drops.Queue
		d.Datapath += r.Drops.Datapath
		d.Kernel += r.Drops.Kernel
		d.LinkOff += r.Drops.LinkOff
		d.TaggedRx += r.Drops.TaggedRx
		out.Ports = append(out.Ports, r.Ports...)
		out.PerSwitch = append(out.PerSwitch, r.PerSwitch...)
		out.Links = append(out.Links, r.Links...)
		out.Unshaped = append(out.Unshaped, r.Unshaped...)
		out.Missing = append(out.Missing, r.Missing...)
		out.Leaked = append(out.Leaked, r.Leaked...)
		out.Underlay = append(out.Underlay, r.Underlay...)
		out.Backlog = append(out.Backlog, r.Backlog...)
		out.Samples += r.Samples
		out.Interval = max(out.Interval, r.Interval)
		out.SampleCost += r.SampleCost
		out.MeanSampleTime = max(out.MeanSampleTime, r.MeanSampleTime)
		out.SlowSamples += r.SlowSamples
	}
	if out.CPU != nil {
		slices.SortStableFunc(out.CPU.Threads, func(a, b results.ThreadCPU) int {
			switch {
			case a.Cores > b.Cores:
				return -1
			case a.Cores < b.Cores:
				return 1
			}
			return 0
		})
	}
	if out.InjectedFrames > 0 {
		out.NonminimalShare = float64(out.NonminimalFrames) / float64(out.InjectedFrames)
	}
	return out
}
