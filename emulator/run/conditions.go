package run

import (
	"context"
	"fmt"
	"sync"

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
		r.cond = &conditions{mon: mon}
	}
	c := r.cond
	c.before = c.mon.Counters()
	c.seen = len(c.mon.Events())
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
	return out, nil
}
