package fabric

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/ovs/openflow"
	"github.com/ethfab/ethfab/switchprofile"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// Links between two switches at run time (seed 002 §3.6: "Link Status: On
// to Off … Deactivate the target link"; "Off to On: Step 1: Activate the
// target link"). A link off has both of its veth ends down, so each switch
// sees its port lose carrier, as a port shut down on a real switch does;
// frames routed to it are dropped (by the down device, or, where the eBPF
// datapath counts queues, by the program; neither counts them as the
// switch's drops). A link
// turned on stays down for the switch's wake-up time first (seed 002 Table
// 6: 1.2 to 3.2 s on the switches it measured; switchprofile.SwitchProfile.OnOff),
// then comes up at both ends at once.
//
// SetLinks leaves routing as it is: the pairs whose paths cross the link
// lose their frames while it is off (the paper's "unsafe" order).
// SwitchLink's safe order moves a VLAN-routed lab's paths off the link
// first.

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
// up). It returns when they are, or when ctx ends during the hold. On the
// eBPF datapath with counted queues (conditional routing, QCN,
// snoop-based adaptive routing) the ports' queues are marked off from
// just before their links go down to just after they are up again
// (datapath.Handle.SetQueuesOff): the program drops what it routes there
// and counts nothing in or out. Counted, the frames that died at the down
// device stayed in the queue for good (TestLinkOffKeepsQueueCounts: a
// port whose link had been off held its whole limit, and the program
// dropped every frame given to it).
func (l *Lab) SetLinks(ctx context.Context, links []Link, on bool, hold time.Duration) error {
	if on && hold > 0 {
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	h, ports, err := l.countedQueues(links)
	if err != nil {
		return err
	}
	if h != nil {
		defer h.Close()
		if !on {
			if err := h.SetQueuesOff(ports, true); err != nil {
				return err
			}
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
	switch {
	case h == nil:
	case !on:
		// Down, the devices have let go of what their tbf held, and a
		// grace period has passed since the flag was set (taking an up
		// device down waits for one). Settled even if an end failed to
		// go down: the flag stays, and the error says the link is not off.
		errs = append(errs, h.SettleQueues(ports))
	case len(errs) == 0:
		// Up, their queues empty: settled again (the flag has been set
		// since before the links went down, so no program run writes
		// them), then counted from now on; until now the program dropped
		// what it routed there. Not before every end is operationally
		// up: until the kernel's link watch has activated an end's qdisc
		// its queue drops what it is given, and a frame counted in there
		// never came out (TestLinkOffKeepsQueueCounts: 1-6 frames left in
		// the count of the link turned on in 2 of 32 runs before this
		// wait, none in 20 after).
		for _, k := range links {
			for _, e := range []LinkEnd{k.A, k.B} {
				if err := kernel.WaitOperUp(e.NetNS, e.Iface, 5*time.Second); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if len(errs) > 0 {
			break // the port keeps dropping uncounted, and the error says so
		}
		errs = append(errs, h.SettleQueues(ports), h.SetQueuesOff(ports, false))
	default:
		// An end did not come up: its port keeps dropping uncounted, and
		// the error says so.
	}
	return errors.Join(errs...)
}

// countedQueues opens the lab's eBPF datapath and finds the switch ports
// at the links' ends, when the program counts their queues; nil where it
// counts none (Open vSwitch, or a routing mode that reads no queue).
func (l *Lab) countedQueues(links []Link) (*datapath.Handle, []uint32, error) {
	if l.BPF == nil || l.BPF.Queues == 0 {
		return nil, nil, nil
	}
	h, err := datapath.Open(*l.BPF)
	if err != nil {
		return nil, nil, err
	}
	if !h.HasQueues() {
		h.Close()
		return nil, nil, nil
	}
	var ports []uint32
	for _, k := range links {
		for _, e := range []LinkEnd{k.A, k.B} {
			if e.Port == 0 {
				continue // a host's end: not a switch port
			}
			idx, err := kernel.LinkIndexes(e.NetNS, []string{e.Iface})
			if err != nil {
				h.Close()
				return nil, nil, err
			}
			ports = append(ports, uint32(idx[0]))
		}
	}
	return h, ports, nil
}

// setLinkSafe turns links off or on in seed 002's safe order, on a lab
// routed by VLANs: "On to Off: Step 1: Use an
// existing routing algorithm to calculate the path set so that it avoids
// the target link. Step 2: Implement the path set … Step 3: Deactivate the
// target link"; "Off to On: Step 1: Activate the target link. Step 2: …
// calculate the path set so that it uses the target link. Step 3:
// Implement the path set". The path set around links off is
// vlan.OffPaths's (north-last, round a ring the other way, repaired
// trees or up*/down*); each
// switch's new tables go in as one OpenFlow bundle. The lab's state
// records the links off.
func setLinkSafe(ctx context.Context, l *Lab, links []Link, pair [2]string, on bool, hold time.Duration) error {
	if l.Routing != controller.VLAN {
		return fmt.Errorf("lab %s: the safe order moves VLAN paths; it is routed %s (use the unsafe order)", l.Lab, l.Routing)
	}
	off := slices.DeleteFunc(slices.Clone(l.VLANOff), func(p [2]string) bool { return p == pair })
	if !on {
		off = append(off, pair)
		if err := l.Reroute(ctx, off); err != nil {
			return err
		}
		return l.SetLinks(ctx, links, false, 0)
	}
	if err := l.SetLinks(ctx, links, true, hold); err != nil {
		return err
	}
	return l.Reroute(ctx, off)
}

// AvoidLink moves a VLAN-routed lab's paths off the links between
// switches a and b (avoid), or back onto them, leaving the links on: seed
// 002's path modification (Table 7: "VLANs A and B swapped"), the first
// step of its safe order without the last. Each switch's new tables go
// in as one bundle, in Reroute's order.
func AvoidLink(ctx context.Context, l *Lab, a, b string, avoid bool) error {
	if l.Routing != controller.VLAN {
		return fmt.Errorf("lab %s: moving paths off a link needs routing vlan; it is routed %s", l.Lab, l.Routing)
	}
	if _, err := l.SwitchLinks(a, b); err != nil {
		return err
	}
	pair := [2]string{min(a, b), max(a, b)}
	if slices.Contains(l.LinksOff, pair) {
		return fmt.Errorf("lab %s: the link %s-%s is off", l.Lab, a, b)
	}
	off := slices.DeleteFunc(slices.Clone(l.VLANOff), func(p [2]string) bool { return p == pair })
	if avoid {
		off = append(off, pair)
	}
	return l.Reroute(ctx, off)
}

// Reroute recompiles a VLAN-routed lab's tables with its paths around the
// links off, installs them (one bundle per switch) and records the links
// off in the lab's state.
//
// The order matters. A switch whose new paths turn some frames another
// way (a detour's first switch) sends them to switches whose old tables
// may have no VLAN for them: under north-last, a switch in the edge row
// the detour crosses gets frames from above that must turn east, which
// dimension order never sent it. So switches that only gain paths go first and the turning ones
// last when links go off, and the other way round when they come on. In
// one bundle each, all at once, a ping across the link every 100 ms lost
// one probe per operation (TestLinkSafeOrder).
func (l *Lab) Reroute(ctx context.Context, offPairs [][2]string) error {
	top, err := topology.Build(l.Topology)
	if err != nil {
		return err
	}
	if len(l.Switches) != len(top.Switches) {
		return fmt.Errorf("lab %s: the state lists %d switches, its topology has %d", l.Lab, len(l.Switches), len(top.Switches))
	}
	for i := range top.Switches {
		if l.Switches[i].Name != top.Switches[i].Name {
			return fmt.Errorf("lab %s: the state's switch %d is %s, its topology's %s", l.Lab, i, l.Switches[i].Name, top.Switches[i].Name)
		}
	}
	plan, err := addressing.New(top, l.Addressing, l.Compact)
	if err != nil {
		return err
	}
	tagged, err := hostIDs(top, l.VLANTagged)
	if err != nil {
		return err
	}
	compile := func(pairs [][2]string, was *vlan.Assignment) (*controller.Controller, error) {
		off, err := vlan.OffByName(top, pairs)
		if err != nil {
			return nil, fmt.Errorf("lab %s: %w", l.Lab, err)
		}
		ctl, err := controller.New(plan, controller.Options{Mode: controller.VLAN, VLANAssign: l.VLANAssign, VLANTorus: l.VLANTorus, VLANOff: off,
			VLANWas: was, VLANLearn: l.VLANLearn, VLANAging: l.VLANAging, VLANTagged: tagged})
		if err != nil {
			return nil, fmt.Errorf("lab %s: %w", l.Lab, err)
		}
		return ctl, nil
	}
	was, err := compile(l.VLANOff, nil)
	if err != nil {
		return err
	}
	// The new tables keep the old routes below their own (make before
	// break, controller.vlanTransit).
	ctl, err := compile(offPairs, was.VLANAssignment())
	if err != nil {
		return err
	}
	tables := make([]*controller.Table, len(top.Switches))
	var order [2][]int                        // the switches that change first, and last
	turning := len(offPairs) > len(l.VLANOff) // links going off: turning switches last
	for i := range top.Switches {
		if tables[i], err = ctl.Table(i); err != nil {
			return err
		}
		if turns(&was.VLANAssignment().Switches[i], &ctl.VLANAssignment().Switches[i]) == turning {
			order[1] = append(order[1], i)
		} else {
			order[0] = append(order[0], i)
		}
	}
	if l.OVS.Datapath == datapath.Name {
		err = l.rerouteBPF(top, tables, order[:])
	} else {
		err = l.rerouteOVS(ctx, top, tables, order[:], learnedTable(ctl.Options()))
	}
	if err != nil {
		return fmt.Errorf("lab %s: installing the new paths: %w", l.Lab, err)
	}
	// The state says what the switches hold from here on.
	l.VLANOff = offPairs
	if err := l.save(); err != nil {
		return err
	}
	// A tagged host whose port's VLAN changed tags its frames with the
	// new one. Until then its switch still takes the old one's: into that
	// VLAN where the port is still a member of it (fixed), else in
	// transit.
	var retag []int
	for _, h := range tagged {
		hs := &top.Hosts[h]
		if was.VLANAssignment().Switches[hs.Switch].PVID[hs.Port-1] != ctl.VLANAssignment().Switches[hs.Switch].PVID[hs.Port-1] {
			retag = append(retag, h)
		}
	}
	if err := tagHostPorts(l, top, ctl.VLANAssignment(), retag, false); err != nil {
		return fmt.Errorf("lab %s: re-tagging hosts: %w", l.Lab, err)
	}
	return nil
}

// rerouteOVS installs the switches' new tables, one bundle per switch
// (openflow.InstallAll: a flow that stays keeps its counters), group by
// group, each group's in the datapath before the next goes in.
func (l *Lab) rerouteOVS(ctx context.Context, top *topology.Topology, tables []*controller.Table, order [][]int, learned func(uint8) bool) error {
	if err := writeFlowFiles(l.Dir, top, tables); err != nil {
		return err
	}
	for _, group := range order {
		jobs := make([]openflow.Job, len(group))
		for k, i := range group {
			jobs[k] = openflow.Job{Bridge: l.Switches[i].Name, Mgmt: l.Switches[i].Mgmt, Rules: tables[i].Rules, Skip: learned}
		}
		if _, err := openflow.InstallAll(ctx, jobs, installParallel); err != nil {
			return err
		}
		// The datapath forwards by the flows it cached from the old
		// tables until its revalidators have run.
		for _, in := range l.OVS.Instances {
			if _, err := ovs.Appctl(ctx, in.RunDir, "revalidator/wait"); err != nil {
				return fmt.Errorf("waiting for the new paths to reach the datapath: %w", err)
			}
		}
	}
	return nil
}

// rerouteBPF writes the switches' new tables into the eBPF datapath's
// spare bank and moves the switches to it, group by group
// (datapath.Reroute): each switch's move is one map write, which the
// next frame it forwards sees.
func (l *Lab) rerouteBPF(top *topology.Topology, tables []*controller.Table, order [][]int) error {
	if l.BPF == nil {
		return fmt.Errorf("the lab's state names no eBPF datapath")
	}
	img, err := l.DatapathImage(top, tables)
	if err != nil {
		return err
	}
	return datapath.Reroute(*l.BPF, img, order)
}

// DatapathImage is the eBPF datapath's image of tables with this lab's
// ports (their devices' ifindexes read from its namespaces): for the
// tables up compiled, the image up loaded, so a rule's action index
// (Image.RuleAction) is the program's.
func (l *Lab) DatapathImage(top *topology.Topology, tables []*controller.Table) (*datapath.Image, error) {
	nsOf := func(sw int) string { return l.Switches[sw].NetNS }
	all := func(int) bool { return true }
	index, err := readPortIndexes(top, all, nsOf)
	if err != nil {
		return nil, err
	}
	return datapath.Build(tables, switchPorts(top, index, all, nsOf))
}

// turns says whether a switch sends some frame another way in b than in
// a: a port that takes frames in both sends one destination's out of a
// different port.
func turns(a, b *vlan.Switch) bool {
	for in := range a.PVID {
		va, vb := a.PVID[in], b.PVID[in]
		if va == 0 || vb == 0 {
			continue
		}
		for k, out := range a.FDB {
			if k.VID != va {
				continue
			}
			if o, ok := b.FDB[vlan.FDBKey{VID: vb, Host: k.Host}]; ok && o != out {
				return true
			}
		}
	}
	return false
}

// SwitchLink turns the links between switches a and b off or on, in the
// safe order (setLinkSafe) or not (SetLinks), records them in the lab's
// state (LinksOff, which ethfab power reads) and returns them.
func SwitchLink(ctx context.Context, l *Lab, a, b string, on bool, hold time.Duration, safe bool) ([]Link, error) {
	links, err := l.SwitchLinks(a, b)
	if err != nil {
		return nil, err
	}
	pair := [2]string{min(a, b), max(a, b)}
	if safe {
		err = setLinkSafe(ctx, l, links, pair, on, hold)
	} else {
		err = l.SetLinks(ctx, links, on, hold)
	}
	if err != nil {
		return nil, err
	}
	l.LinksOff = slices.DeleteFunc(l.LinksOff, func(p [2]string) bool { return p == pair })
	if !on {
		l.LinksOff = append(l.LinksOff, pair)
	}
	return links, l.save()
}

// PortSpeeds is each switch's ports' speeds, by name, for pricing as a
// seed 002 switch: a port at the rate its link was built with is 1 Gb/s,
// one set to a tenth or a hundredth of it 100 or 10 Mb/s
// (switchprofile.SpeedOf), the ends of links off off.
func (l *Lab) PortSpeeds() (map[string][]switchprofile.Speed, error) {
	out := map[string][]switchprofile.Speed{}
	for _, s := range l.Switches {
		sp := make([]switchprofile.Speed, s.Ports)
		for i := range sp {
			sp[i] = switchprofile.Speed1G
		}
		out[s.Name] = sp
	}
	set := func(pair [2]string, speed switchprofile.Speed) error {
		links, err := l.SwitchLinks(pair[0], pair[1])
		if err != nil {
			return err
		}
		for _, k := range links {
			for _, e := range []LinkEnd{k.A, k.B} {
				// Ports are numbered from 1, as OpenFlow does.
				if ports := out[e.Node]; e.Port >= 1 && e.Port <= len(ports) {
					ports[e.Port-1] = speed
				}
			}
		}
		return nil
	}
	for _, r := range l.LinkRates {
		links, err := l.SwitchLinks(r.Link[0], r.Link[1])
		if err != nil {
			return nil, err
		}
		built := uint64(0)
		if links[0].Shape != nil {
			built = links[0].Shape.RateBps
		}
		speed, ok := switchprofile.SpeedOf(r.RateBps, built)
		if !ok {
			return nil, fmt.Errorf("lab %s: %s-%s at %s stands for no GbE speed (built at %s: 1G; a tenth 100M; a hundredth 10M)",
				l.Lab, r.Link[0], r.Link[1], rate.Format(r.RateBps), rate.Format(built))
		}
		if err := set(r.Link, speed); err != nil {
			return nil, err
		}
	}
	for _, p := range l.LinksOff {
		if err := set(p, switchprofile.Off); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SetLinkRate sets every link between switches a and b to rateBps at both
// ends (their tbf; the queue keeps its size in bytes), seed 002's
// multispeed link regulation ("reduces the link speed to 100 or 10
// Mbps"). A commodity switch renegotiates the link: with hold > 0 the
// links lose carrier at once and come back at the new rate hold later
// (Table 6's speed-change times, switchprofile.SwitchProfile.SpeedChangeTime).
// Routing stays as it is: the paper moves no paths for a speed change.
// The lab records the rate.
func SetLinkRate(ctx context.Context, l *Lab, a, b string, rateBps uint64, hold time.Duration) ([]Link, error) {
	links, err := l.SwitchLinks(a, b)
	if err != nil {
		return nil, err
	}
	pair := [2]string{min(a, b), max(a, b)}
	switch {
	case slices.Contains(l.LinksOff, pair):
		return nil, fmt.Errorf("lab %s: the link %s-%s is off: turn it on first", l.Lab, a, b)
	case rateBps == 0:
		return nil, fmt.Errorf("lab %s: a rate of 0 is a link off (ethfab link %s %s %s off)", l.Lab, l.Lab, a, b)
	}
	for _, k := range links {
		if k.Shape == nil || k.Shape.RateBps == 0 {
			return nil, fmt.Errorf("lab %s: %s-%s was built without a rate (or by an older ethfab): there is no tbf to change", l.Lab, a, b)
		}
	}
	if hold > 0 {
		if err := l.SetLinks(ctx, links, false, 0); err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, k := range links {
		sh := *k.Shape
		sh.RateBps = rateBps
		for _, e := range []LinkEnd{k.A, k.B} {
			if err := kernel.Shape(e.NetNS, e.Iface, sh); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if hold > 0 {
		if err := l.SetLinks(ctx, links, true, hold); err != nil {
			// Ended during the hold: the links come back now, so the
			// lab is left as its state says.
			errs = append(errs, err, l.SetLinks(context.Background(), links, true, 0))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	l.LinkRates = slices.DeleteFunc(l.LinkRates, func(r PairRate) bool { return r.Link == pair })
	if rateBps != links[0].Shape.RateBps {
		l.LinkRates = append(l.LinkRates, PairRate{Link: pair, RateBps: rateBps})
	}
	return links, l.save()
}

// LinkRate is the rate of the links between switches a and b now (as
// built, or as ethfab link set it) and the rate they were built with.
func (l *Lab) LinkRate(a, b string) (now, built uint64, err error) {
	links, err := l.SwitchLinks(a, b)
	if err != nil {
		return 0, 0, err
	}
	if links[0].Shape != nil {
		built = links[0].Shape.RateBps
	}
	pair := [2]string{min(a, b), max(a, b)}
	for _, r := range l.LinkRates {
		if r.Link == pair {
			return r.RateBps, built, nil
		}
	}
	return built, built, nil
}
