package results

import (
	"slices"
	"time"

	"github.com/ethfab/ethfab/internal/quantile"
)

// ARMove is one selection change of a switch's snoop-based adaptive
// routing: destination host Dst sent out of Port at Switch, for Cause.
type ARMove struct {
	Time   time.Time `json:"time"`
	Switch string    `json:"switch"`
	Dst    string    `json:"dst"`
	Port   int       `json:"port"`
	Cause  string    `json:"cause"` // one of the Move* causes
}

// ARMove causes: a notification took the destination away from its port
// (remote: a CNM snooped on its way; local: the switch's own congestion
// point), its remote entry expired, or its local one cleared (queue).
// Only remote entries expire, so only a remote move leaves a destination
// for a reset to bring back.
const (
	MoveRemote = "remote"
	MoveLocal  = "local"
	MoveExpiry = "expiry"
	MoveQueue  = "queue"
)

// NewResets groups a point's expiry moves into reset events (see Resets):
// expiry is the remote entries' dilated expiry, end the point's end, moves
// the point's in any order.
func NewResets(expiry time.Duration, end time.Time, moves []ARMove) *Resets {
	r := &Resets{ExpiryS: expiry.Seconds()}
	if expiry <= 0 {
		return r
	}
	moves = slices.Clone(moves)
	slices.SortStableFunc(moves, func(a, b ARMove) int { return a.Time.Compare(b.Time) })
	away := map[string]bool{} // moved off its port by a remote notification, not back since
	var starts []time.Time
	var spread []float64
	left := 0
	for i := 0; i < len(moves); {
		m := moves[i]
		key := m.Switch + " " + m.Dst
		if m.Cause != MoveExpiry {
			away[key] = m.Cause == MoveRemote
			i++
			continue
		}
		if end.Sub(m.Time) < expiry/2 {
			break
		}
		// An event: the expiry moves within half an expiry of its first
		// (other moves in between, a destination sent away again at once,
		// do not count against it).
		was := away
		away = map[string]bool{}
		for k, v := range was {
			away[k] = v
		}
		last := m.Time
		for ; i < len(moves) && moves[i].Time.Sub(m.Time) < expiry/2; i++ {
			k := moves[i].Switch + " " + moves[i].Dst
			switch moves[i].Cause {
			case MoveExpiry:
				last = moves[i].Time
				fallthrough
			case MoveQueue:
				delete(was, k) // back
			}
			away[k] = moves[i].Cause == MoveRemote
		}
		n := 0
		for _, a := range was {
			if a {
				n++
			}
		}
		left = max(left, n)
		starts = append(starts, m.Time)
		spread = append(spread, last.Sub(m.Time).Seconds())
	}
	r.Events = len(starts)
	if r.Events == 0 {
		return r
	}
	s := slices.Max(spread)
	r.SpreadS, r.LeftMax = &s, &left
	if r.Events < 2 {
		return r
	}
	gaps := make([]float64, len(starts)-1)
	for i := range gaps {
		gaps[i] = starts[i+1].Sub(starts[i]).Seconds()
	}
	p := quantile.NearestRank(quantile.Sorted(gaps), 0.5)
	r.PeriodS = &p
	return r
}
