// Package snoopar is seed 003's snoop-based adaptive routing for plain
// 802.1Qau bridges: switches snoop the QCN congestion notifications (CNMs)
// that pass through them on the way to the sampled frame's source, mark
// ⟨destination, port⟩ entries of a congestion table, and route each
// destination to the first of its eligible ports, in order of preference,
// that is not marked, or, when all are, to the one with the least
// feedback.
//
// The table's update and expiry rules are the paper's pseudo-code taken
// literally (../shared/specs/seeds-002-004-power.md §B.1, §B.2.2), with
// its consequence kept: a remote entry takes no further notification
// until its timer expires, so it lives exactly Expiry from its first one
// — the paper's "reset spikes every 250 ms". Feedback is the CNM's
// quantized |Fb| (0..63, larger is more congested), as "route to port with
// minimum feedback value" needs.
//
// This package is pure: the monitor feeds it the notifications it sees
// and the queues it polls, and installs the selections it returns.
package snoopar

import (
	"fmt"
	"slices"
	"time"
)

// Entry is one ⟨destination, port⟩ congestion entry.
type Entry struct {
	Congested bool
	Local     bool
	FbCount   int
	Feedback  int
	Expires   time.Time // remote entries: when the timer fires
}

type key struct{ dst, port int }

// Switch is one switch's routing and congestion tables.
type Switch struct {
	// Eligible lists, per destination, the ports in order of preference
	// (the routing table: "one or more switch port numbers, listed in
	// order of preference"). A destination absent here is not routed
	// adaptively (the switch's own hosts).
	Eligible map[int][]int
	// Expiry is the remote entries' timer (250 ms in the paper, times the
	// time scale).
	Expiry time.Duration
	// RemoteRefresh restarts a remote entry's timer at every remote CNM
	// (a variant; the paper's rule does not).
	RemoteRefresh bool

	entries map[key]*Entry
	sel     map[int]int
	// local counts each port's local entries: the monitor asks QueueLow
	// of every port whose queue is low at every poll (1 ms), and most
	// have none.
	local map[int]int
}

// New starts a switch with no congestion: every destination on its first
// eligible port.
func New(eligible map[int][]int, expiry time.Duration) (*Switch, error) {
	s := &Switch{Eligible: eligible, Expiry: expiry, entries: map[key]*Entry{}, sel: map[int]int{}, local: map[int]int{}}
	for d, l := range eligible {
		if len(l) == 0 {
			return nil, fmt.Errorf("destination %d has no eligible port", d)
		}
		s.sel[d] = l[0]
	}
	return s, nil
}

// Selected is the port destination d is routed to now.
func (s *Switch) Selected(d int) int { return s.sel[d] }

// Entry returns a copy of the entry for d on port p (zero: none).
func (s *Switch) Entry(d, p int) Entry {
	if e := s.entries[key{d, p}]; e != nil {
		return *e
	}
	return Entry{}
}

// Selection is a destination whose port changed.
type Selection struct {
	Dst, Port int
}

// Notify applies a congestion notification for destination d on port p
// with feedback fb (quantized |Fb|): remote when snooped from a CNM that
// arrived on p, local when the switch's own congestion point on p sent it.
// The paper's rule: an entry takes the notification if it is local or not
// congested — local congestion can be overridden by remote, not the
// reverse — and newer notifications weigh more (feedback += fbCount*fb).
// It returns the new selection for d if it changed.
func (s *Switch) Notify(d, p, fb int, local bool, now time.Time) (Selection, bool) {
	k := key{d, p}
	e := s.entries[k]
	if e == nil {
		e = &Entry{}
		s.entries[k] = e
	}
	if e.Local || !e.Congested {
		if e.Local != local || !e.Congested {
			s.local[p] += b2i(local) - b2i(e.Local && e.Congested)
		}
		e.Local = local
		e.Congested = true
		e.FbCount++
		e.Feedback += e.FbCount * fb
		if !e.Local {
			e.Expires = now.Add(s.Expiry)
		}
	} else if s.RemoteRefresh && !local {
		e.Expires = now.Add(s.Expiry)
	}
	return s.reselect(d)
}

// Expire clears the remote entries whose timer has fired by now and
// returns the selections that changed.
func (s *Switch) Expire(now time.Time) []Selection {
	var dsts []int
	for k, e := range s.entries {
		if e.Congested && !e.Local && !now.Before(e.Expires) {
			delete(s.entries, k)
			dsts = append(dsts, k.dst)
		}
	}
	return s.reselectAll(dsts)
}

// QueueLow clears the local entries of port p, whose queue has fallen to
// Qeq/2 or below, and returns the selections that changed.
func (s *Switch) QueueLow(p int) []Selection {
	if s.local[p] == 0 {
		return nil
	}
	s.local[p] = 0
	var dsts []int
	for k, e := range s.entries {
		if k.port == p && e.Local {
			delete(s.entries, k)
			dsts = append(dsts, k.dst)
		}
	}
	return s.reselectAll(dsts)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// NextExpiry is the earliest remote timer (zero: none running).
func (s *Switch) NextExpiry() time.Time {
	var t time.Time
	for _, e := range s.entries {
		if e.Congested && !e.Local && (t.IsZero() || e.Expires.Before(t)) {
			t = e.Expires
		}
	}
	return t
}

func (s *Switch) reselectAll(dsts []int) []Selection {
	slices.Sort(dsts)
	dsts = slices.Compact(dsts)
	var out []Selection
	for _, d := range dsts {
		if c, ok := s.reselect(d); ok {
			out = append(out, c)
		}
	}
	return out
}

// reselect is the paper's decision: the first eligible port not flagged
// congested; if all are, the one with the least feedback (the earlier on
// a tie).
func (s *Switch) reselect(d int) (Selection, bool) {
	l, ok := s.Eligible[d]
	if !ok {
		return Selection{}, false
	}
	best, bestFb := -1, 0
	for _, p := range l {
		e := s.entries[key{d, p}]
		if e == nil || !e.Congested {
			best = p
			break
		}
		if best < 0 || e.Feedback < bestFb {
			best, bestFb = p, e.Feedback
		}
	}
	if best == s.sel[d] {
		return Selection{}, false
	}
	s.sel[d] = best
	return Selection{Dst: d, Port: best}, true
}
