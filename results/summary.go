package results

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ethfab/ethfab/scenario"
)

// Summary renders summary.md from the metrics and the run directory's
// file list. It depends on nothing else, so re-rendering a run directory
// gives the same text.
func Summary(m *Metrics, files []string) string {
	var b strings.Builder
	r := &m.Run
	name := r.Name
	if name == "" {
		name = r.Scenario
	}
	fmt.Fprintf(&b, "# ethfab run: %s\n\n", name)
	if r.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", r.Description)
	}
	verdict := "**trustworthy**: the machine kept up"
	if !m.Fidelity.OK {
		verdict = "**UNTRUSTWORTHY**: the machine did not keep up (see Fidelity)"
	}
	failed := len(m.Failed())
	exp := "no expectations"
	if n := len(m.Expectations); n > 0 {
		exp = fmt.Sprintf("expectations: %d of %d passed", n-failed, n)
		if failed > 0 {
			exp = fmt.Sprintf("expectations: **%d of %d FAILED**", failed, n)
		}
	}
	if r.Failed != "" {
		verdict = fmt.Sprintf("**INCOMPLETE**: the run failed before its end (%s); what it measured until then follows", r.Failed)
		exp = fmt.Sprintf("%d point(s) measured", len(m.Phases))
		if n := len(m.Expectations); n > 0 {
			exp += fmt.Sprintf(", expectations on them: %d of %d passed", n-failed, n)
		}
	}
	fmt.Fprintf(&b, "Result: %s; %s.\n\n", verdict, exp)
	for _, w := range m.Run.Warnings {
		fmt.Fprintf(&b, "Warned before the run: %s.\n\n", w)
	}

	b.WriteString("## What was run\n\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", k, v)
		}
	}
	b.WriteString("| | |\n|---|---|\n")
	row("scenario", r.Scenario)
	row("lab", r.Lab)
	row("topology", r.Topology)
	if r.Hosts > 0 || r.Switches > 0 {
		row("size", fmt.Sprintf("%d hosts, %d switches", r.Hosts, r.Switches))
	}
	row("addressing", r.Addressing)
	row("routing", r.Routing)
	if r.HostLinkRate > 0 {
		row("host link rate", formatBps(float64(r.HostLinkRate)))
	}
	row("loads", joinFloats(loadsOf(m.Phases)))
	if len(r.Seeds) > 0 {
		s := make([]string, len(r.Seeds))
		for i, v := range r.Seeds {
			s[i] = fmt.Sprint(v)
		}
		row("seeds", strings.Join(s, ", "))
	}
	if !r.Start.IsZero() {
		row("start", r.Start.UTC().Format(time.RFC3339))
	}
	if !r.End.IsZero() {
		row("end", r.End.UTC().Format(time.RFC3339))
		if !r.Start.IsZero() {
			row("duration", r.End.Sub(r.Start).Round(time.Millisecond).String())
		}
	}
	row("ethfab", r.Version)
	keys := make([]string, 0, len(r.Machine))
	for k := range r.Machine {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		row("machine: "+k, r.Machine[k])
	}
	b.WriteString("\n")

	agentsSummary(&b, m.Agents)
	b.WriteString("## Phases\n\n")
	if len(phaseNames(m.Phases)) == 0 {
		b.WriteString("No traffic phase ran.\n\n")
	}
	for _, name := range phaseNames(m.Phases) {
		pts := pointsOf(m.Phases, name)
		fmt.Fprintf(&b, "### %s (pattern %s, routing %s)\n\n", name, pts[0].Pattern, pts[0].Routing)
		b.WriteString("| load | offered | accepted | loss | mean µs | p50 µs | p99 µs | p99.9 µs | non-minimal | sent | received | CPU busy |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, p := range pts {
			lat := func(v float64) string {
				if p.Received == 0 {
					return "–"
				}
				return fmt.Sprintf("%.1f", v)
			}
			fmt.Fprintf(&b, "| %g | %.3f | %.3f | %s | %s | %s | %s | %s | %.3f | %d | %d | %.0f%% |\n",
				p.Load, p.OfferedLoad, p.AcceptedLoad, pct(p.Loss), lat(p.LatencyUS.Mean), lat(p.LatencyUS.P50), lat(p.LatencyUS.P99), lat(p.LatencyUS.P999),
				p.NonminimalShare, p.Sent, p.Received, 100*p.CPUBusy)
		}
		b.WriteString("\n")
		cpuSummary(&b, pts)
	}
	b.WriteString(MPIMarkdown([]MPIRun{{Points: m.Phases}}))

	conditionsSummary(&b, m)
	qcnSummary(&b, m)
	flowsSummary(&b, m)
	linksSummary(&b, m)

	b.WriteString("## Expectations\n\n")
	if len(m.Expectations) == 0 {
		b.WriteString("The scenario states none.\n\n")
	} else {
		b.WriteString("| phase | expectation | load | measured | bound | result |\n|---|---|---:|---:|---:|---|\n")
		for _, e := range m.Expectations {
			res := "PASS"
			if !e.Pass {
				res = "**FAIL**"
				if e.Note != "" {
					res += " (" + e.Note + ")"
				}
			}
			fmt.Fprintf(&b, "| %s | `%s` | %g | %s | %s | %s |\n", e.Phase, e.Expect, e.Load,
				expValue(e.Expect, e.Value), expValue(e.Expect, e.Bound), res)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Fidelity\n\n")
	if m.Fidelity.OK {
		b.WriteString("The machine kept up: ")
	} else {
		b.WriteString("**The results are not trustworthy**: the machine did not keep up.\n\n")
	}
	if m.Fidelity.OK {
		fmt.Fprintf(&b, "%d checks passed (CPU busy ≤ %.0f%%, frames lost outside the modelled queues ≤ %.1f%% of those sent, saturated links carried ≥ %.0f%% of their rate).\n\n",
			len(m.Fidelity.Checks), 100*MaxCPUBusy, 100*MaxOutsideDrops, 100*MinAchievedRate)
	} else {
		for _, r := range m.Fidelity.Reasons {
			fmt.Fprintf(&b, "- %s\n", r)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Files\n\n")
	for _, f := range files {
		fmt.Fprintf(&b, "- [%s](%s)\n", f, f)
	}
	return b.String()
}

// expValue formats an expectation's value in the metric's unit.
func expValue(expect string, v float64) string {
	switch m, _, _ := strings.Cut(expect, " "); scenario.Metric(m).Dimension() {
	case "latency":
		return fmt.Sprintf("%.1f µs", v)
	case "time":
		return fmt.Sprintf("%.2f s", v)
	case "power":
		return fmt.Sprintf("%.1f W", v)
	case "percent":
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// flowsSummary renders each flows-pattern point's pairs.
func flowsSummary(b *strings.Builder, m *Metrics) {
	first := true
	for i := range m.Phases {
		p := &m.Phases[i]
		if len(p.Flows) == 0 {
			continue
		}
		if first {
			b.WriteString("## Flows\n\n")
			first = false
		}
		fmt.Fprintf(b, "### %s at load %g\n\n| src | dst | sent | received | lost | accepted | Mbit/s | p50 µs | p99 µs |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n", p.Name, p.Load)
		for _, f := range p.Flows {
			fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %.4f | %.3f | %.0f | %.0f |\n", f.Src, f.Dst, f.Sent, f.Received, f.Lost, f.AcceptedLoad, f.DeliveredBps/1e6, f.LatencyUS.P50, f.LatencyUS.P99)
		}
		b.WriteString("\n")
	}
}

// linksSummary renders what the points' link events, probes and switch
// power were (seed 002's on/off and multispeed link regulation).
func linksSummary(b *strings.Builder, m *Metrics) {
	var pts []*Point
	for i := range m.Phases {
		if p := &m.Phases[i]; len(p.LinkEvents) > 0 || p.Probes != nil || p.Power != nil {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return
	}
	b.WriteString("## Links, probes and power\n\n")
	for _, p := range pts {
		fmt.Fprintf(b, "### %s at load %g\n\n", p.Name, p.Load)
		if len(p.LinkEvents) > 0 {
			b.WriteString("| link | op | at s | done s | held s | recovery s |\n|---|---|---:|---:|---:|---:|\n")
			for _, e := range p.LinkEvents {
				op := e.Op
				switch {
				case e.RateBps > 0:
					op += " " + formatBps(float64(e.RateBps))
				case e.Order != "":
					op += " (" + e.Order + ")"
				}
				rec := "–"
				if e.RecoveryS != nil {
					rec = fmt.Sprintf("%.2f", *e.RecoveryS)
				}
				fmt.Fprintf(b, "| %s | %s | %.2f | %.2f | %.2f | %s |\n", e.Link, op, e.AtS, e.DoneS, e.HoldS, rec)
			}
			b.WriteString("\n")
		}
		if pr := p.Probes; pr != nil {
			fmt.Fprintf(b, "Probes every %g ms between %d pairs: %d sent, %d lost (%d refused by a full host link), %d pairs lost any, at most %d one pair; longest outage %.2f s; one-way latency p50 %.0f µs, p99 %.0f µs.\n\n",
				pr.IntervalMs, len(pr.Pairs), pr.Sent, pr.Lost, pr.Refused, pr.PairsLosing, pr.MaxLost, pr.LongestOutageS, pr.P50US, pr.P99US)
			for _, pp := range pr.Pairs {
				for _, o := range pp.Outages {
					fmt.Fprintf(b, "- %s → %s: %d lost from %.1f s to %.1f s\n", pp.Src, pp.Dst, o.Lost, o.FromS, o.ToS)
				}
			}
			if pr.PairsLosing > 0 {
				b.WriteString("\n")
			}
		}
		if pw := p.Power; pw != nil {
			fmt.Fprintf(b, "Switch power as %s (seed 002 Table 2): mean %.1f W, least %.1f W, every port on %.1f W: %.1f%% saved.\n\n",
				pw.Profile, pw.SwitchW, pw.MinW, pw.AllOnW, 100*pw.Saving)
		}
	}
}

func pct(f float64) string {
	if f == 0 {
		return "0"
	}
	return fmt.Sprintf("%.3g%%", 100*f)
}

func loadsOf(pts []Point) []float64 {
	var out []float64
	seen := map[float64]bool{}
	for _, p := range pts {
		if !seen[p.Load] {
			seen[p.Load] = true
			out = append(out, p.Load)
		}
	}
	sort.Float64s(out)
	return out
}

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%g", x)
	}
	return strings.Join(s, ", ")
}

// conditionsSummary renders the conditional-routing section: the switches'
// pause emulation and its measured reaction times, per point and overall.
func conditionsSummary(b *strings.Builder, m *Metrics) {
	var pts []Point
	for _, p := range m.Phases {
		if p.Conditions != nil {
			pts = append(pts, p)
		}
	}
	if m.Conditions == nil && len(pts) == 0 {
		return
	}
	b.WriteString("## Conditional routing\n\n")
	dist := func(d Distribution) string {
		if d.N == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f / %.2f / %.2f (%d)", d.P50, d.P90, d.Max, d.N)
	}
	b.WriteString("| phase | load | pauses | of them upstream | resumes | flips | reaction ms p50 / p90 / max (n) | recovery ms p50 / p90 / max (n) | undiverted | unrecovered | unmeasured |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(name, load string, c *Conditions) {
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %d | %s | %s | %d | %d | %d |\n", name, load, c.PauseEvents, c.UpstreamPauses, c.ResumeEvents, c.Flips,
			dist(c.ReactionMS), dist(c.RecoveryMS), c.Undiverted, c.Unrecovered, c.Unmeasured)
	}
	for _, p := range pts {
		row(p.Name, fmt.Sprintf("%g", p.Load), p.Conditions)
	}
	c := m.Conditions
	if c != nil {
		row("**run**", "", c)
	} else {
		c = pts[len(pts)-1].Conditions
	}
	b.WriteString(conditionsReading(pts))
	if c.AppliedMS.N > 0 {
		fmt.Fprintf(b, "\nThe switches' flow tables changed (barrier reply to the FlowMod) %.2f / %.2f / %.2f ms (p50 / p90 / max, %d flips) after the onset; FlowMod written after %.2f ms (p50).\n",
			c.AppliedMS.P50, c.AppliedMS.P90, c.AppliedMS.Max, c.AppliedMS.N, c.FlipMS.P50)
	}
	fmt.Fprintf(b, "\nPauses of them upstream: ports paused by the switch they feed, whose queue crossed XOFF (lossless Ethernet pauses the links bringing the frames). Reaction: queue poll that saw XOFF → first frame of a source the pause concerns leaving the switch on its alternative path, timed by the kernel at the port; recovery: poll that saw XON → first such frame leaving on the default port again. Both include waiting for that source's next frame and its time in the new port's queue. Resolution: onset up to %.2f ms after the true crossing (queue poll cycle).\n\n",
		c.OnsetResolutionMS)
}

// conditionsReading explains, from the points themselves, the two effects
// the papers report for pause-driven conditional routing: a mixed
// minimal/non-minimal split under pauses, whose minimal part crosses a
// port kept between XON and XOFF, hence latency above Valiant's at low load
// (seed 000 Fig. 12b, seed 004 §II-C2); and a non-minimal share that climbs
// with load under uniform traffic (the "positive control loop", seed 004
// §II-C1).
func conditionsReading(pts []Point) string {
	var b strings.Builder
	byPhase := map[string][]Point{}
	var order []string
	for _, p := range pts {
		if _, ok := byPhase[p.Name]; !ok {
			order = append(order, p.Name)
		}
		byPhase[p.Name] = append(byPhase[p.Name], p)
	}
	for _, name := range order {
		ps := byPhase[name]
		sort.Slice(ps, func(i, j int) bool { return ps[i].Load < ps[j].Load })
		var mixed *Point
		for i := range ps {
			p := &ps[i]
			if p.Conditions.PauseEvents > 0 && p.NonminimalShare >= 0.2 && p.NonminimalShare < 0.95 && p.Loss < 0.05 {
				mixed = p
				break
			}
		}
		if mixed != nil {
			fmt.Fprintf(&b, "\n**%s at load %g:** %.0f%% of the frames went minimal, %.0f%% non-minimal, with %d pauses: a source keeps its minimal path until that path's port pauses, so the minimal share crosses a queue held between XON and XOFF — mean latency %.0f µs, p99 %.0f µs. This is the high average latency at low load of pause-driven conditional routing (seed 000 Fig. 12b, seed 004 §II-C2): compare with Valiant at the same load, whose frames never wait for a pause.\n",
				name, mixed.Load, 100*(1-mixed.NonminimalShare), 100*mixed.NonminimalShare, mixed.Conditions.PauseEvents, mixed.LatencyUS.Mean, mixed.LatencyUS.P99)
		}
		if len(ps) >= 3 && ps[0].NonminimalShare < 0.05 {
			last := ps[len(ps)-1]
			if last.NonminimalShare > 0.3 && strings.HasPrefix(last.Pattern, "uniform") {
				fmt.Fprintf(&b, "\n**%s, non-minimal share against load:** ", name)
				for i, p := range ps {
					if i > 0 {
						b.WriteString(", ")
					}
					fmt.Fprintf(&b, "%g → %.2f", p.Load, p.NonminimalShare)
				}
				fmt.Fprintf(&b, ". Under uniform traffic nothing needs a detour, yet near saturation pauses push traffic non-minimal, which loads more links and causes more pauses: the \"positive control loop\" of seed 004 §II-C1 (accepted %.3f at offered %.3f).\n", last.AcceptedLoad, last.OfferedLoad)
			}
		}
	}
	return b.String()
}

// cpuSummary tells, per point, how much forwarding the switches did and
// where the CPU went: the busiest ovs-vswitchd thread is what limits the
// userspace datapath.
func cpuSummary(b *strings.Builder, pts []Point) {
	if !slices.ContainsFunc(pts, func(p Point) bool { return p.CPU != nil }) {
		return
	}
	b.WriteString("| load | switch-hop frames/s | busiest vswitchd thread | all vswitchd | ethfab | softirq |\n")
	b.WriteString("|---:|---:|---|---:|---:|---:|\n")
	for _, p := range pts {
		if p.CPU == nil {
			continue
		}
		c := p.CPU
		fmt.Fprintf(b, "| %g | %.0f | %s %s: %.0f%% | %.2f cores | %.2f cores | %.2f cores |\n",
			p.Load, p.SwitchHopFPS, c.Busiest.Process, c.Busiest.Thread, 100*c.Busiest.Cores, c.Vswitchd, c.Ethfab, c.Softirq)
	}
	b.WriteString("\n")
}

// notifySummary renders seed 003's congestion management: the switches'
// congestion points and the hosts' reaction points, per point.
func notifySummary(b *strings.Builder, pts []Point) {
	if len(pts) == 0 {
		return
	}
	b.WriteString("## QCN congestion management\n\n")
	b.WriteString("| phase | load | samples | CNMs | no victim | not sent | received by hosts | limiters | released | frames held | dropped at the source | AR moves |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i := range pts {
		p, q := &pts[i], pts[i].QCN
		var rp ReactionPoints
		if p.ReactionPoints != nil {
			rp = *p.ReactionPoints
		}
		fmt.Fprintf(b, "| %s | %g | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", p.Name, p.Load, q.Samples, q.Generated, q.NoVictim, q.Dropped,
			rp.CNMs, rp.Limiters, rp.Released, rp.Held, rp.Dropped, q.ARMoves)
	}
	b.WriteString("\nSamples: congestion point samples of a non-empty queue on the inter-switch ports; CNMs: samples with a positive feedback, each sent to the sampled frame's source unless it found no victim or could not be sent. The hosts' reaction points: CNMs received, rate limiters they made and released (back at the line rate), and the measured frames a limiter held in its flow's queue or dropped for the queue's room (still offered, not the fabric's loss). AR moves: under snoop-ar, the times a switch moved a destination to another eligible port. `cnm-<phase>.csv` has every CNM, `ar-moves-<phase>.csv` every move.\n\n")
	resets := false
	for i := range pts {
		r := pts[i].QCN.Resets
		if r == nil {
			continue
		}
		if !resets {
			b.WriteString("| phase | load | expiry | resets | period | longest reset | flows left away |\n|---|---:|---:|---:|---:|---:|---:|\n")
			resets = true
		}
		opt := func(v *float64) string {
			if v == nil {
				return "–"
			}
			return fmt.Sprintf("%.3f s", *v)
		}
		left := "–"
		if r.LeftMax != nil {
			left = fmt.Sprint(*r.LeftMax)
		}
		fmt.Fprintf(b, "| %s | %g | %.3f s | %d | %s | %s | %s |\n", pts[i].Name, pts[i].Load, r.ExpiryS, r.Events, opt(r.PeriodS), opt(r.SpreadS), left)
	}
	if resets {
		b.WriteString("\nResets (seed 003's reset spikes): remote congestion entries expiring and their destinations moving back, each the expiry moves within half an expiry of its first; the period is the median time between their starts, the longest reset from its first move to its last, and flows left away the most destinations one left away of those a notification had moved (`ar_reset_period`, `ar_reset_spread`, `ar_reset_left_max`).\n\n")
	}
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// qcnSummary renders QCN-Switch's section: what the congestion points and
// switches did per point, and how evenly the first group's switches got
// their traffic delivered (seed 004 Fig. 8).
func qcnSummary(b *strings.Builder, m *Metrics) {
	var pts, notify []Point
	for _, p := range m.Phases {
		switch {
		case p.QCN != nil && p.QCN.Notify:
			notify = append(notify, p)
		case p.QCN != nil:
			pts = append(pts, p)
		}
	}
	notifySummary(b, notify)
	if len(pts) == 0 {
		return
	}
	b.WriteString("## QCN-Switch\n\n")
	b.WriteString("| phase | load | samples | CNMs | intercepted | lost | no victim | not sent | mask writes | P changes | mean P local / global | lowest P | delivered spread | least / others |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
	for i := range pts {
		p, q := &pts[i], pts[i].QCN
		spread, least := "–", "–"
		if v, ok := MetricValue(p, scenario.DeliveredSpread); ok {
			spread = fmt.Sprintf("%.3f", v)
		}
		if v, ok := MetricValue(p, scenario.DeliveredMinRatio); ok {
			least = fmt.Sprintf("%.3f", v)
		}
		fmt.Fprintf(b, "| %s | %g | %d | %d | %d | %d | %d | %d | %d | %d | %.1f / %.1f | %.1f | %s | %s |\n", p.Name, p.Load, q.Samples, q.Generated,
			q.Intercepted, q.Lost, q.NoVictim, q.Dropped, q.MaskWrites, q.PChanges, q.PMeanByClass["local"], q.PMeanByClass["global"], deref(q.PMin), spread, least)
	}
	b.WriteString("\nSamples: congestion point samples of a non-empty queue; CNMs: samples with a positive feedback, each a CNM unless it found no victim or could not be sent (not sent); intercepted by the victim's source switch, or lost on the way (or in flight at the end). P: each transit port's probability of routing minimally, percent, at the point's end. Delivered: the first group's switches, load the sinks received from each one's hosts (seed 004 Fig. 8): the largest deviation from the group's mean, and the least switch over the mean of the others. `qcn-<phase>.csv` has every P change, `cnm-<phase>.csv` every CNM.\n\n")
}
