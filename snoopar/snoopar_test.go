package snoopar

import (
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

func newSwitch(t *testing.T) *Switch {
	t.Helper()
	s, err := New(map[int][]int{7: {2, 3, 4}}, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Check 10 of the spec (§B.4): three local notifications with fb = 10
// weigh 10 + 20 + 30 = 60.
func TestFeedbackWeighting(t *testing.T) {
	s := newSwitch(t)
	for i := 0; i < 3; i++ {
		s.Notify(7, 2, 10, true, t0)
	}
	if e := s.Entry(7, 2); e.Feedback != 60 || e.FbCount != 3 || !e.Local || !e.Congested {
		t.Fatalf("entry %+v, want feedback 60 after three local fb=10", e)
	}
}

// Check 9: a remote entry takes no notification until it expires; a local
// entry is overridden by a remote one; local entries clear when the
// queue falls to Qeq/2.
func TestUpdateRuleSemantics(t *testing.T) {
	s := newSwitch(t)
	s.Notify(7, 2, 5, false, t0)
	first := s.Entry(7, 2)
	for i := 1; i <= 20; i++ { // a CNM every 10 ms, local or remote
		s.Notify(7, 2, 40, i%2 == 0, t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	if e := s.Entry(7, 2); e != first || e.Expires != t0.Add(250*time.Millisecond) {
		t.Fatalf("remote entry changed by later notifications: %+v, was %+v", e, first)
	}
	if got := s.Expire(t0.Add(249 * time.Millisecond)); len(got) != 0 || !s.Entry(7, 2).Congested {
		t.Fatalf("expired early: %v", got)
	}
	if got := s.Expire(t0.Add(250 * time.Millisecond)); len(got) != 1 || got[0] != (Selection{7, 2}) || s.Entry(7, 2) != (Entry{}) {
		t.Fatalf("expiry at 250 ms: %v, entry %+v", got, s.Entry(7, 2))
	}

	// Local, then overridden by a remote notification, which starts the timer.
	s.Notify(7, 3, 8, true, t0)
	s.Notify(7, 3, 4, false, t0.Add(time.Second))
	if e := s.Entry(7, 3); e.Local || !e.Congested || e.FbCount != 2 || e.Feedback != 8+2*4 || e.Expires != t0.Add(time.Second+250*time.Millisecond) {
		t.Fatalf("local entry after a remote notification: %+v", e)
	}
	// Remote is not overridden by local, and a low queue does not clear it.
	s.Notify(7, 3, 60, true, t0.Add(time.Second))
	s.QueueLow(3)
	if e := s.Entry(7, 3); e.Local || e.FbCount != 2 {
		t.Fatalf("remote entry touched by local: %+v", e)
	}
	// A local entry clears when its port's queue is low.
	s.Notify(7, 4, 8, true, t0)
	s.QueueLow(4)
	if e := s.Entry(7, 4); e != (Entry{}) {
		t.Fatalf("local entry after the queue fell: %+v", e)
	}
}

// The decision: the first eligible port not congested; when all are, the
// least feedback.
func TestDecision(t *testing.T) {
	s := newSwitch(t)
	if s.Selected(7) != 2 {
		t.Fatalf("initial selection %d, want the first eligible port 2", s.Selected(7))
	}
	if c, ok := s.Notify(7, 2, 10, false, t0); !ok || c.Port != 3 {
		t.Fatalf("port 2 congested: %v %v, want a move to 3", c, ok)
	}
	if _, ok := s.Notify(7, 4, 10, false, t0); ok {
		t.Fatalf("congestion on a port not selected changed the selection")
	}
	if c, ok := s.Notify(7, 3, 30, false, t0); !ok || c.Port != 2 {
		// all congested: 2 and 4 have feedback 10, 3 has 30; 2 comes first.
		t.Fatalf("all congested: %v %v, want 2", c, ok)
	}
	if _, ok := s.Notify(9, 2, 10, false, t0); ok {
		t.Fatalf("a destination without eligible ports was routed")
	}
	if got := s.NextExpiry(); got != t0.Add(250*time.Millisecond) {
		t.Fatalf("next expiry %v", got)
	}
	if got := s.Expire(t0.Add(time.Second)); len(got) != 0 || s.Selected(7) != 2 {
		// back to no congestion: port 2 again, which it already had
		t.Fatalf("after expiry: %v, selected %d", got, s.Selected(7))
	}
	if _, err := New(map[int][]int{1: nil}, time.Second); err == nil {
		t.Fatal("a destination without ports accepted")
	}
}

// With the refresh variant a remote entry lives on while notifications
// keep coming.
func TestRemoteRefresh(t *testing.T) {
	s := newSwitch(t)
	s.RemoteRefresh = true
	s.Notify(7, 2, 5, false, t0)
	s.Notify(7, 2, 5, false, t0.Add(200*time.Millisecond))
	if got := s.Expire(t0.Add(300 * time.Millisecond)); len(got) != 0 {
		t.Fatalf("refreshed entry expired at 300 ms")
	}
	if e := s.Entry(7, 2); e.FbCount != 1 {
		t.Fatalf("refresh changed the entry's count: %+v", e)
	}
}
