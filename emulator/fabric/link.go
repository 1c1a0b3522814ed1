package fabric

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ethfab/ethfab/kernel"
)

// Links between two switches at run time (seed 002 §3.6: "Link Status: On
// to Off … Deactivate the target link"; "Off to On: Step 1: Activate the
// target link"). A link off has both of its veth ends down, so each switch
// sees its port lose carrier, as a port shut down on a real switch does;
// frames routed to it are dropped by the switch and counted there. A link
// turned on stays down for the switch's wake-up time first (seed 002 Table
// 6: 1.2 to 3.2 s on the switches it measured; power.SwitchProfile.OnOff),
// then comes up at both ends at once.
//
// Routing is not changed: with the tables as they are, the pairs whose
// paths cross the link lose their frames while it is off (the paper's
// "unsafe" order). Seed 002's safe order, paths moved off the link before
// it goes down and back after it comes up, is not built.

// ErrNoSuchLink: the two switches are not neighbours.
var ErrNoSuchLink = errors.New("no link between the switches")

// SwitchLinks returns the links between switches a and b (both
// directions; a torus with links: 2 has two).
func (l *Lab) SwitchLinks(a, b string) ([]Link, error) {
	known := map[string]bool{}
	for _, s := range l.Switches {
		known[s.Name] = true
	}
	for _, n := range []string{a, b} {
		if !known[n] {
			return nil, fmt.Errorf("lab %s has no switch %q (ethfab status %s lists them)", l.Lab, n, l.Lab)
		}
	}
	var out []Link
	for _, k := range l.Links {
		if (k.A.Node == a && k.B.Node == b) || (k.A.Node == b && k.B.Node == a) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lab %s: %s and %s: %w", l.Lab, a, b, ErrNoSuchLink)
	}
	return out, nil
}

// SetLinks turns links off (both ends down) or on (after hold, both ends
// up). It returns when they are, or when ctx ends during the hold.
func SetLinks(ctx context.Context, links []Link, on bool, hold time.Duration) error {
	if on && hold > 0 {
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	var errs []error
	for _, k := range links {
		for _, e := range []LinkEnd{k.A, k.B} {
			if err := kernel.SetLinkUp(e.NetNS, e.Iface, on); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
