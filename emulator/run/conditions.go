package run

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ethfab/ethfab/emulator/condition"
	"github.com/ethfab/ethfab/emulator/kernel"
	"github.com/ethfab/ethfab/emulator/scenario"
	"github.com/ethfab/ethfab/results"
)

// conditions runs every switch's condition logic (conditional routing)
// while a traffic point runs: ports pause on their queue's XOFF and
// resume on XON, each flip one FlowMod made by the switch's own logic.
type conditions struct {
	mon    *condition.Monitor
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
	before condition.Counters
	seen   int
	rseen  uint64 // reactions recorded before the point

	// The run's totals: metrics.json's top-level conditions, kept as
	// samples so its percentiles are over every flip of the run.
	m        *results.Metrics
	run      results.Conditions
	reaction []float64
	recovery []float64
	flip     []float64
}

func (r *runner) startConditions(ctx context.Context) (*conditions, error) {
	if r.sc.Routing.Mode != scenario.Conditional {
		return nil, nil
	}
	if r.cond == nil {
		xoff, xon := r.sc.Routing.XOff, r.sc.Routing.XOn
		if xoff.IsZero() || xon.IsZero() {
			// Unless told, pause at half the queue an inter-switch link
			// end can hold and resume at an eighth: a fixed frame count
			// would never be reached on slow links, whose tbf queues are
			// short.
			rate := r.sc.Links[scenario.GlobalLinks].Rate
			if rate == 0 {
				rate = r.sc.Links[scenario.LocalLinks].Rate
			}
			_, limit := kernel.TBFParams(rate)
			if xoff.IsZero() {
				xoff = scenario.Threshold{Value: int64(limit / 2), Unit: scenario.Bytes}
			}
			if xon.IsZero() {
				xon = scenario.Threshold{Value: int64(limit / 8), Unit: scenario.Bytes}
			}
		}
		r.say("conditional routing: ports pause above %s and resume below %s of egress backlog", xoff, xon)
		mon, err := condition.New(r.lab, condition.Options{XOff: xoff, XOn: xon})
		if err != nil {
			return nil, fmt.Errorf("condition logic: %w", err)
		}
		r.cond = &conditions{mon: mon, m: r.m}
	}
	c := r.cond
	c.before = c.mon.Counters()
	c.seen = len(c.mon.Events())
	_, c.rseen = c.mon.Reactions(^uint64(0))
	cctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.mon.Run(cctx); err != nil && cctx.Err() == nil {
			c.err = err
		}
	}()
	return c, nil
}

// stop ends the point's condition logic and returns what it did.
func (c *conditions) stop() (*results.Conditions, error) {
	c.cancel()
	c.wg.Wait()
	if c.err != nil {
		return nil, c.err
	}
	after := c.mon.Counters()
	evs := c.mon.Events()
	out := &results.Conditions{
		PauseEvents:  after.PauseEvents - c.before.PauseEvents,
		ResumeEvents: after.ResumeEvents - c.before.ResumeEvents,
		FlowMods:     after.FlowMods - c.before.FlowMods,
	}
	if c.seen <= len(evs) {
		for _, e := range evs[c.seen:] {
			if e.Flip && !e.Manual {
				out.Flips++
			}
		}
	}
	rs, _ := c.mon.Reactions(c.rseen)
	var react, recov, flip []float64
	for _, r := range rs {
		if r.Outcome != condition.Reacted {
			continue
		}
		ms := float64(r.Delay()) / float64(time.Millisecond)
		if r.Resume {
			recov = append(recov, ms)
		} else {
			react = append(react, ms)
			flip = append(flip, float64(r.Sent.Sub(r.Onset))/float64(time.Millisecond))
		}
	}
	out.FlipMS = results.NewDistribution(flip)
	out.ReactionMS = results.NewDistribution(react)
	out.RecoveryMS = results.NewDistribution(recov)
	out.Undiverted = after.Undiverted - c.before.Undiverted
	out.Unrecovered = after.Unrecovered - c.before.Unrecovered
	out.Unmeasured = after.Unmeasured - c.before.Unmeasured
	onset, stats := c.mon.ProbeResolution()
	// The counters since the monitor started, not this point's: the
	// resolution is a property of the machine's poll loop.
	out.OnsetResolutionMS = float64(onset) / float64(time.Millisecond)
	out.StatsPollMS = float64(stats) / float64(time.Millisecond)
	out.ReactLimitMS = float64(c.mon.ReactLimit()) / float64(time.Millisecond)

	c.reaction = append(c.reaction, react...)
	c.recovery = append(c.recovery, recov...)
	c.flip = append(c.flip, flip...)
	t := &c.run
	t.PauseEvents += out.PauseEvents
	t.ResumeEvents += out.ResumeEvents
	t.Flips += out.Flips
	t.FlowMods += out.FlowMods
	t.Undiverted += out.Undiverted
	t.Unrecovered += out.Unrecovered
	t.Unmeasured += out.Unmeasured
	t.ReactionMS = results.NewDistribution(c.reaction)
	t.RecoveryMS = results.NewDistribution(c.recovery)
	t.FlipMS = results.NewDistribution(c.flip)
	t.OnsetResolutionMS, t.StatsPollMS, t.ReactLimitMS = out.OnsetResolutionMS, out.StatsPollMS, out.ReactLimitMS
	if c.m != nil {
		run := *t
		c.m.Conditions = &run
	}
	return out, nil
}
