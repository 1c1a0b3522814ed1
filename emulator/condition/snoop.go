package condition

import (
	"fmt"
	"time"

	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/snoopar"
)

// Snoop-based adaptive routing (seed 003, routing.mode snoop-ar) in the
// monitor, on top of the notifying congestion points (QCN.Notify):
//   - every switch keeps a congestion table (package snoopar) over the
//     eligible ports of each destination host (controller.Eligible);
//   - a CNM its own congestion point sends is a local notification for
//     the victim's destination on the congested port;
//   - a CNM arriving on a port is a remote one for that port (the eBPF
//     datapath records each arrival, TapCNM, and forwards the CNM on by
//     its current route towards the victim's source: one of the source's
//     eligible ports, not a random one as the paper's switches pick);
//   - remote entries expire on their timer (checked every poll), local
//     ones when the port's queue falls to Qeq/2 (every poll of the port);
//   - when a destination's selection changes, the switch moves the
//     destination's rule: one write of the rule's action in the
//     program's map, read by the next frame (the flow cache keeps the
//     action's index, not the action).

// SnoopOptions configure snoop-based adaptive routing (QCN.Snoop).
type SnoopOptions struct {
	Expiry        time.Duration
	RemoteRefresh bool
}

// snoopSwitch is one switch's adaptive routing: its table and the rules
// it moves, by destination host.
type snoopSwitch struct {
	logic *snoopar.Switch
	rules map[int]*snoopRule
	id    int
}

// snoopRule is a moving rule: its action's index in the program and the
// action as last written.
type snoopRule struct {
	idx uint32
	act datapath.Action
}

// Move is one selection change of a switch's adaptive routing, as the
// results read it (their reset events).
type Move = results.ARMove

// setupSnoop gives every switch its congestion table and finds each
// moving rule's action in the running program, checking it is the one
// the lab's tables compile to.
func (m *Monitor) setupSnoop(lab *fabric.Lab, comp *fabric.Compiled) error {
	if m.bpf == nil {
		return fmt.Errorf("snoop-ar runs on the eBPF datapath only")
	}
	img, err := lab.DatapathImage(comp.Top, comp.Tables)
	if err != nil {
		return err
	}
	m.img = img
	m.hostByMAC = map[[6]byte]int{}
	for h := range comp.Top.Hosts {
		var b [6]byte
		copy(b[:], comp.Plan.HostMAC(h).Bytes())
		m.hostByMAC[b] = h
	}
	eligible := comp.Ctl.EligibleTables()
	for i := range comp.Top.Switches {
		s := m.switches[comp.Top.Switches[i].Name]
		if s == nil || s.qcn == nil {
			continue
		}
		logic, err := snoopar.New(eligible[i], m.o.QCN.Snoop.Expiry)
		if err != nil {
			return fmt.Errorf("switch %s: %w", s.name, err)
		}
		logic.RemoteRefresh = m.o.QCN.Snoop.RemoteRefresh
		ss := &snoopSwitch{logic: logic, rules: map[int]*snoopRule{}, id: i}
		for h := range eligible[i] {
			ri := comp.Ctl.AdaptiveRule(comp.Tables[i], h)
			if ri < 0 {
				return fmt.Errorf("switch %s: no rule routes host %s", s.name, comp.Top.Hosts[h].Name)
			}
			idx, ok := img.RuleAction(i, ri)
			if !ok {
				return fmt.Errorf("switch %s: host %s's rule has no action in the datapath's image", s.name, comp.Top.Hosts[h].Name)
			}
			live, err := m.bpf.Action(idx)
			if err != nil {
				return fmt.Errorf("switch %s: host %s's action %d: %w", s.name, comp.Top.Hosts[h].Name, idx, err)
			}
			if live != img.Actions[idx] {
				return fmt.Errorf("switch %s: the datapath's action %d for host %s is not the lab's tables' (was the lab brought up by another ethfab?)", s.name, idx, comp.Top.Hosts[h].Name)
			}
			ss.rules[h] = &snoopRule{idx: idx, act: live}
		}
		s.qcn.snoop = ss
	}
	return nil
}

// snoopNotify applies a notification for the flow to dst (a MAC) on port
// of switch s: local from its own congestion point, remote from a CNM
// that arrived there. Called with smu held.
func (m *Monitor) snoopNotify(s *sw, dst [6]byte, port int, fbq uint8, local bool, at time.Time) {
	ss := s.qcn.snoop
	h, ok := m.hostByMAC[dst]
	if !ok {
		return
	}
	if sel, moved := ss.logic.Notify(h, port, int(fbq), local, at); moved {
		cause := results.MoveRemote
		if local {
			cause = results.MoveLocal
		}
		m.snoopMove(s, sel, cause, at)
	}
}

// snoopExpire clears every switch's remote entries whose timer has fired
// and moves what they held. Called by Poll with smu held.
func (m *Monitor) snoopExpire(now time.Time) {
	for _, s := range m.switches {
		if s.qcn == nil || s.qcn.snoop == nil {
			continue
		}
		for _, sel := range s.qcn.snoop.logic.Expire(now) {
			m.snoopMove(s, sel, results.MoveExpiry, now)
		}
	}
}

// snoopQueueLow clears port p's local entries (its queue is at Qeq/2 or
// below). Called with smu held.
func (m *Monitor) snoopQueueLow(p *port, now time.Time) {
	for _, sel := range p.sw.qcn.snoop.logic.QueueLow(p.num) {
		m.snoopMove(p.sw, sel, results.MoveQueue, now)
	}
}

// snoopMove writes a destination's new port into its rule's action.
func (m *Monitor) snoopMove(s *sw, sel snoopar.Selection, cause string, at time.Time) {
	ss := s.qcn.snoop
	r := ss.rules[sel.Dst]
	ifx, ok := m.img.PortIfindex(ss.id, sel.Port)
	if r == nil || !ok {
		return
	}
	a := r.act
	a.Out[0] = ifx
	err := m.bpf.SetAction(r.idx, a)
	m.mu.Lock()
	if err != nil {
		m.qc.MoveErrs++
	} else {
		r.act = a
		m.qc.Moves++
		m.moves.add(Move{Time: at, Switch: s.name, Dst: m.hostNames[sel.Dst], Port: sel.Port, Cause: cause}, m.o.LogSize)
	}
	m.mu.Unlock()
}
