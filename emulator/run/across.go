package run

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/cluster"
	"github.com/ethfab/ethfab/hostagent/traffic"
	"github.com/ethfab/ethfab/scenario"
	pat "github.com/ethfab/ethfab/traffic"
)

// checkAcross refuses, before anything is built, what a run across
// machines does not do yet: MPI phases, probes, link events, the switch
// logic of QCN and snoop-based adaptive routing, VLAN learning and flows
// patterns.
func checkAcross(sc *scenario.Scenario) error {
	not := func(what string) error {
		return fmt.Errorf("%s: %s does not run across machines yet (DMP, announcement, traffic and wait phases with minimal, Valiant, conditional or VLAN routing do)", sc.Source, what)
	}
	if sc.Routing.Watched() && sc.Routing.Mode != controller.Conditional || sc.Routing.Notifies() {
		return not("routing.mode " + string(sc.Routing.Mode))
	}
	if v := sc.Routing.VLAN; v != nil && v.MACs == "learn" {
		return not("routing.vlan.macs learn")
	}
	for _, ph := range sc.Phases {
		switch {
		case ph.Kind == scenario.PhaseMPI:
			return not(fmt.Sprintf("phase %s (%s)", ph.Name, ph.Kind))
		case ph.Probes != nil:
			return not(fmt.Sprintf("phase %s: probes", ph.Name))
		case len(ph.LinkEvents) > 0:
			return not(fmt.Sprintf("phase %s: link_events", ph.Name))
		case ph.Kind == scenario.PhaseTraffic && ph.Traffic.Pattern == pat.Flows:
			return not(fmt.Sprintf("phase %s: pattern flows", ph.Name))
		}
	}
	return nil
}

// trafficAcross is a traffic phase on a lab across machines: every load a
// point run by every machine's engine and sampler at once (cluster.Traffic),
// merged and judged as one engine's.
func (r *runner) trafficAcross(ctx context.Context, ph scenario.Phase) error {
	t := ph.Traffic
	if r.across == nil {
		hs, err := r.trafficHosts()
		if err != nil {
			return err
		}
		r.acrossHere = r.lab.Emulated()
		clocks := r.o.Clocks
		if clocks == "" {
			clocks = cluster.ClocksAuto
		}
		var cond *cluster.Conditions
		if r.sc.Routing.Mode == controller.Conditional {
			o := r.pauseOptions()
			cond = &cluster.Conditions{Scenario: r.sc, XOff: o.XOff, XOn: o.XOn, PortOnly: o.PortOnly}
			for _, m := range r.lab.Compiled().HostMAC {
				cond.Originals = append(cond.Originals, m.String())
			}
		}
		if r.across, err = cluster.OpenTraffic(ctx, r.lab, hs, clocks, cond, r.o.Report); err != nil {
			return err
		}
		if cond != nil && r.cond == nil {
			// Kept across reopenings (an agents phase closes the
			// engines): the run's totals cover every phase.
			r.cond = &conditions{m: r.m}
		}
		r.m.Run.Machine["traffic_send"] = r.across.SendMode()
		r.m.Run.Machine["machines"] = fmt.Sprint(len(r.lab.Machines))
		r.m.Run.Machine["latency"] = r.across.Latency()
	}
	p, warmup, err := r.pattern(t)
	if err != nil {
		return err
	}
	for _, load := range t.Loads {
		r.next(fmt.Sprintf("%s: %s at load %.2f for %s on %d machines", ph.Name, t.PatternString(), load, t.Duration, len(r.lab.Machines)))
		cfg := traffic.Config{Pattern: p, Load: load, FrameSize: t.Frame, RateBps: r.sc.Links[scenario.HostLinks].Rate,
			Warmup: warmup, Duration: t.Duration, Drain: r.o.Drain, Seed: t.Seed, Realtime: r.realtime}
		if r.acrossHere {
			// The emulated machines' engines share this machine's cores:
			// between them the senders one engine has. With each its
			// own (4 each on 2 cores), DF(2,4,2) uniform at 0.5 on
			// local:2 left 2.8% of the frames unsent (p99 6.9 ms); with
			// 1 or 2 each, none (p99 51 µs; one engine alone: 41 µs).
			cfg.Senders = max(1, 2*runtime.GOMAXPROCS(0)/len(r.lab.Machines))
		}
		res, rep, cp, err := r.across.Point(ctx, t.PatternSpec(), cfg, time.Duration(0))
		if err != nil {
			return fmt.Errorf("traffic at load %g: %w", load, err)
		}
		pt := r.pointOf(ph, load, res, rep)
		if cp != nil && r.cond != nil {
			pt.Conditions = r.cond.add(cp)
			if err := r.cond.writeFlips(r.dir, ph.Name, load); err != nil {
				return fmt.Errorf("conditions CSV: %w", err)
			}
		}
		if err := r.keep(ph, load, pt, rep); err != nil {
			return err
		}
	}
	return nil
}
