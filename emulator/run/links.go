package run

import (
	"context"
	"fmt"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/switchprofile"
)

// Seed 002's link regulation during a load: the phase's link events at
// their times, and the switches' power as a switch profile between them.

// linkEventBin is a link-event phase's timeline bin.
const linkEventBin = 100 * time.Millisecond

type linkEventsDone struct {
	events []results.LinkEvent
	power  []results.PowerStep // with a switch profile: from the start, then after each event
	err    error
}

// linkEvents turns the phase's links off and on, changes their rates or
// moves the paths off them and back, at their times after t0, the start
// of a load's traffic, in order; a failure ends them. With a switch
// profile it prices the switches at the start and after each event.
func (r *runner) linkEvents(ctx context.Context, evs []scenario.LinkEvent, t0 time.Time) linkEventsDone {
	var out linkEventsDone
	if out.err = r.powerStep(&out, 0); out.err != nil {
		return out
	}
	for _, ev := range evs {
		if wait := time.Until(t0.Add(ev.At)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				out.err = ctx.Err()
				return out
			case <-t.C:
			}
		}
		op, order := ev.Op(), ev.Order()
		var err error
		switch {
		case ev.Paths:
			order = ""
			err = fabric.AvoidLink(ctx, r.lab, ev.A, ev.B, ev.Off)
		case ev.Rate > 0:
			order = ""
			// Its ends' drops while the carrier was down for the hold
			// are the fabric's loss, and its rate is no longer one (the
			// sampler sorts the point's drops when it stops).
			var links []fabric.Link
			if links, err = fabric.SetLinkRate(ctx, r.lab, ev.A, ev.B, ev.Rate, ev.Hold); err == nil {
				r.markLinks(links, ev.Hold > 0, true)
			}
		default:
			var links []fabric.Link
			links, err = fabric.SwitchLink(ctx, r.lab, ev.A, ev.B, !ev.Off, ev.Hold, ev.Safe)
			if err == nil {
				// What its ends drop during the point is the fabric's
				// loss (the sampler sorts the point's drops when it
				// stops).
				r.markLinks(links, ev.Off, false)
			}
		}
		if err != nil {
			out.err = fmt.Errorf("%s-%s %s at %s: %w", ev.A, ev.B, op, ev.At, err)
			return out
		}
		out.events = append(out.events, results.LinkEvent{Link: ev.A + "-" + ev.B, Op: op, Order: order, RateBps: ev.Rate, HoldS: ev.Hold.Seconds(),
			AtS: ev.At.Seconds(), DoneS: time.Since(t0).Seconds()})
		r.say("link %s-%s %s at %.2fs", ev.A, ev.B, eventWords(ev), time.Since(t0).Seconds())
		// A port off saves from when it is off; one turned on or
		// changing speed draws from the command (it is waking up).
		at := ev.At.Seconds()
		if ev.Off && !ev.Paths {
			at = out.events[len(out.events)-1].DoneS
		}
		if out.err = r.powerStep(&out, at); out.err != nil {
			return out
		}
	}
	return out
}

// powerStep prices the lab's switches as they are now, from at on, when
// the scenario names a switch profile.
func (r *runner) powerStep(out *linkEventsDone, at float64) error {
	if r.sc.SwitchProfile == "" {
		return nil
	}
	lp, err := r.price()
	if err != nil {
		return fmt.Errorf("power: %w", err)
	}
	out.power = append(out.power, results.PowerStep{AtS: at, Watts: lp.Watts})
	return nil
}

// price is the lab's switches as the scenario's switch profile now.
func (r *runner) price() (*switchprofile.LabPower, error) {
	p, err := switchprofile.Profile(r.sc.SwitchProfile)
	if err != nil {
		return nil, err
	}
	speeds, err := r.lab.PortSpeeds()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(r.lab.Switches))
	for i, s := range r.lab.Switches {
		names[i] = s.Name
	}
	return switchprofile.PriceSwitches(p, names, speeds)
}

// pointPower is a point's mean power over span seconds from its steps.
func (r *runner) pointPower(steps []results.PowerStep, span float64) (*results.Power, error) {
	if len(steps) == 0 || span <= 0 {
		return nil, nil
	}
	all, err := r.price() // the load has ended on the fabric as built
	if err != nil {
		return nil, err
	}
	pw := &results.Power{Profile: r.sc.SwitchProfile, AllOnW: all.AllOnW, MinW: steps[0].Watts, Steps: steps}
	for i, st := range steps {
		from, to := min(st.AtS, span), span
		if i+1 < len(steps) {
			to = min(max(steps[i+1].AtS, from), span)
		}
		pw.SwitchW += st.Watts * (to - from) / span
		pw.MinW = min(pw.MinW, st.Watts)
	}
	if pw.AllOnW > 0 {
		pw.Saving = 1 - pw.SwitchW/pw.AllOnW
	}
	return pw, nil
}

// markLinks tells the sampler about links a point changed: down (their
// ends' drops are the fabric's loss) or at another rate.
func (r *runner) markLinks(links []fabric.Link, down, rate bool) {
	for _, k := range links {
		for _, e := range []fabric.LinkEnd{k.A, k.B} {
			if down {
				r.sampler.LinkOff(e.NetNS, e.Iface)
			}
			if rate {
				r.sampler.LinkRateChanged(e.NetNS, e.Iface)
			}
		}
	}
}

// eventWords says what a link event did, for the run's log.
func eventWords(ev scenario.LinkEvent) string {
	w := ev.Op()
	switch {
	case ev.Rate > 0:
		w += " " + rate.Format(ev.Rate)
	case ev.Paths:
		w += " (paths)"
	default:
		w += " (" + ev.Order() + " order)"
	}
	if ev.Hold > 0 {
		w += fmt.Sprintf(", held down %s", ev.Hold)
	}
	return w
}
