package condition

import (
	"testing"
	"time"

	"github.com/ethfab/ethfab/traffic"
)

// The reaction's bookkeeping on its own: a departure on the new path
// answers a flip only if the same frame entered the switch after the
// FlowMod, whichever of the two taps is read first.
func TestDepartureNeedsArrivalAfterFlowMod(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	frame := func(src, seq uint32) *traffic.Header {
		return &traffic.Header{SrcHost: src, DstHost: 9, Seq: uint64(seq)}
	}
	setup := func() (*sw, *port, *port) {
		s := &sw{name: "s0", ports: map[int]*port{}}
		p, alt := &port{sw: s, num: 3}, &port{sw: s, num: 4}
		s.ports[3], s.ports[4] = p, alt
		return s, p, alt
	}
	probeOn := func(s *sw, p *port, resume bool, flowMod time.Time) *probe {
		pr := &probe{r: Reaction{Switch: s.name, Port: p.num, Resume: resume, Onset: flowMod.Add(-time.Millisecond)},
			p: p, flips: p.flips.Load(), done: make(chan struct{}), wall: flowMod}
		s.probes = append(s.probes, pr)
		return pr
	}
	fired := func(pr *probe) bool {
		select {
		case <-pr.done:
			return true
		default:
			return false
		}
	}

	t.Run("arrival read first", func(t *testing.T) {
		s, p, alt := setup()
		pr := probeOn(s, p, false, at(1))
		s.arrive(frame(1, 7), at(2))
		s.depart(alt.num, p.num, frame(1, 7), at(3))
		if !fired(pr) || pr.seen != at(3) || pr.arrived != at(2) {
			t.Fatalf("fired %v seen %v arrived %v", fired(pr), pr.seen, pr.arrived)
		}
	})
	t.Run("departure read first", func(t *testing.T) {
		s, p, alt := setup()
		pr := probeOn(s, p, false, at(1))
		s.depart(alt.num, p.num, frame(1, 7), at(3))
		if fired(pr) || len(s.pending) != 1 {
			t.Fatalf("fired before its arrival was read (pending %d)", len(s.pending))
		}
		s.arrive(frame(2, 7), at(2)) // another frame: no match
		if fired(pr) {
			t.Fatal("fired by another frame's arrival")
		}
		s.arrive(frame(1, 7), at(2))
		if !fired(pr) || pr.seen != at(3) || pr.arrived != at(2) || len(s.pending) != 0 {
			t.Fatalf("fired %v seen %v arrived %v pending %d", fired(pr), pr.seen, pr.arrived, len(s.pending))
		}
	})
	t.Run("entered before the FlowMod", func(t *testing.T) {
		s, p, alt := setup()
		old := probeOn(s, alt, false, at(0)) // keeps arrivals recorded from 0
		pr := probeOn(s, p, false, at(5))
		s.arrive(frame(1, 7), at(4))
		s.depart(alt.num, p.num, frame(1, 7), at(6))
		if fired(pr) {
			t.Fatal("a frame that entered before the FlowMod was taken for a reaction")
		}
		s.arrive(frame(1, 8), at(5.5))
		s.depart(alt.num, p.num, frame(1, 8), at(7))
		if !fired(pr) || pr.seen != at(7) {
			t.Fatalf("fired %v seen %v", fired(pr), pr.seen)
		}
		if fired(old) {
			t.Fatal("a flip of another port fired")
		}
	})
	t.Run("direction", func(t *testing.T) {
		s, p, alt := setup()
		pause := probeOn(s, p, false, at(1))
		s.arrive(frame(1, 1), at(2))
		s.depart(p.num, p.num, frame(1, 1), at(3)) // still the default port
		if fired(pause) {
			t.Fatal("a pause fired by a frame on the paused port")
		}
		s.probes = nil
		s.prune()
		resume := probeOn(s, p, true, at(10))
		s.arrive(frame(1, 2), at(11))
		s.depart(alt.num, p.num, frame(1, 2), at(12)) // still diverted
		if fired(resume) {
			t.Fatal("a resume fired by a diverted frame")
		}
		s.arrive(frame(1, 3), at(13))
		s.depart(p.num, p.num, frame(1, 3), at(14))
		if !fired(resume) || resume.seen != at(14) {
			t.Fatalf("resume fired %v seen %v", fired(resume), resume.seen)
		}
	})
	t.Run("superseded and other ports", func(t *testing.T) {
		s, p, alt := setup()
		pr := probeOn(s, p, false, at(1))
		s.arrive(frame(1, 1), at(2))
		s.depart(p.num, alt.num, frame(1, 1), at(3)) // conditional on another port
		p.flips.Add(1)                               // p flipped again
		s.arrive(frame(1, 2), at(2))
		s.depart(alt.num, p.num, frame(1, 2), at(3))
		if fired(pr) {
			t.Fatal("fired by a frame of another port, or after the port flipped again")
		}
	})
	t.Run("bounded and pruned", func(t *testing.T) {
		s, p, alt := setup()
		pr := probeOn(s, p, false, at(1))
		for i := range 3 * maxPending {
			s.depart(alt.num, p.num, frame(1, uint32(i)), at(3)) // arrivals never read
		}
		if len(s.pending) > maxPending {
			t.Fatalf("%d departures pending, bound %d", len(s.pending), maxPending)
		}
		s.arrive(frame(2, 1), at(2))
		s.probes = nil
		s.prune()
		if len(s.pending) != 0 || len(s.arrivals) != 0 || fired(pr) {
			t.Fatalf("after the last flip: %d pending, %d arrivals", len(s.pending), len(s.arrivals))
		}
		s.arrive(frame(2, 2), at(4))
		if len(s.arrivals) != 0 {
			t.Fatal("arrivals recorded with no flip to answer")
		}
	})
}
